"""Start time guard: a broker answers Metadata without importing modules it does not need.

Start time (launch to first Metadata) is a product figure measured in ``bench/``, never in a
timed test. What a test can hold is the cause of the largest regression seen: ``import kafka``
(kafka-python's client, ~80 ms) pulled in just to find the JSON definitions, and ``import
crc32c`` (~15 ms through importlib.metadata) before any batch needs a checksum. A fresh
interpreter starts a broker, is asked ApiVersions and Metadata over a raw socket, and reports
which of those modules it has loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

SCRIPT = r"""
import json, socket, struct, sys
from kafkette.broker.embedded import EmbeddedBroker

def request(api_key, version, correlation_id, body):
    client = b"start-imports"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client
    return struct.pack(">i", len(header) + len(body)) + header + body

def round_trip(sock, frame):
    sock.sendall(frame)
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    return sock.recv(size, socket.MSG_WAITALL)

with EmbeddedBroker.start(sys.argv[1]) as broker:
    host, port = broker.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        versions = round_trip(sock, request(18, 0, 1, b""))
        metadata = round_trip(sock, request(3, 4, 2, struct.pack(">ib", -1, 0)))
        loaded = sorted(name for name in ("kafka", "crc32c") if name in sys.modules)
print(json.dumps({
    "api_versions_error": struct.unpack_from(">h", versions, 4)[0],
    "metadata_brokers": struct.unpack_from(">i", metadata, 8)[0],
    "loaded": loaded,
}))
"""


def test_broker_answers_metadata_without_kafka_python_or_crc32c(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["api_versions_error"] == 0
    assert report["metadata_brokers"] == 1
    assert report["loaded"] == []


CLI_SCRIPT = r"""
import json, sys
import kafkette.cli
parser = kafkette.cli.build_parser()
args = parser.parse_args(["serve", "--listen", "127.0.0.1:0"])
heavy = ("confluent_kafka", "rich", "kafka", "trio", "kafkette.broker.server")
print(json.dumps({"run": args.run.__name__, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_the_kafkette_command_registers_every_tool_without_loading_client_libraries() -> None:
    """``kafkette serve`` goes through the same parser as the client tools: registering the
    tools must not load confluent-kafka, rich or trio before the broker needs them."""
    result = subprocess.run(
        [sys.executable, "-c", CLI_SCRIPT], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"run": "run_serve", "loaded": []}
