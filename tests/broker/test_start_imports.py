"""Start time guard: a broker answers Metadata without importing modules it does not need.

Start time (launch to first Metadata) is a product figure measured in ``bench/``, never in a
timed test. What a test can hold is the cause of the largest regression seen: ``import kafka``
(kafka-python's client, ~80 ms) pulled in just to find the JSON definitions, and ``import
crc32c`` (~15 ms through importlib.metadata) before any batch needs a checksum. A fresh
interpreter starts a broker, is asked ApiVersions and Metadata over a raw socket, and reports
which of those modules it has loaded. The same run holds the lazy loading of optional
features (docs/performance.md, start time): their handlers, the quota enforcement, the log
cleaner and, on an empty data dir, the log engine load on first use, not at start.
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
        optional = sorted(name for name in json.loads(sys.argv[2]) if name in sys.modules)
        handlers = sorted(m for m in sys.modules if m.startswith("kafkette.broker.handlers."))
print(json.dumps({
    "api_versions_error": struct.unpack_from(">h", versions, 4)[0],
    "metadata_brokers": struct.unpack_from(">i", metadata, 8)[0],
    "loaded": loaded,
    "optional": optional,
    "handlers": handlers,
}))
"""

# What a plain single-node broker (no SASL, TLS, ACLs, quotas, ZooKeeper, metrics or
# console) must not import to start and answer ApiVersions and Metadata on an empty data dir.
# Client metrics subscriptions and fetch sessions are made on first use (no file at start,
# no Fetch yet); importlib.resources only reads definitions from an unusual loader; cramjam
# only (de)compresses a batch that asks for a codec.
OPTIONAL = [
    *(f"kafkette.broker.handlers.{name}" for name in (
        "acls", "client_metrics", "client_quotas", "consumer_groups", "elections",
        "log_dirs", "quorum", "reassignments", "sasl", "scram_credentials", "telemetry",
        "transactions", "txn_offsets",
    )),
    "kafkette.broker.quotas.enforcement",
    "kafkette.broker.security.sasl",
    "kafkette.broker.security.tls",
    "kafkette.broker.cluster",
    "kafkette.broker.fetch_sessions",
    "kafkette.broker.groups.consumer",
    "kafkette.broker.telemetry",
    "kafkette.broker.state_view",
    "kafkette.broker.security.authorizer.authorizer",
    "kafkette.broker.observability.metrics_http",
    "kafkette.console",
    "kafkette.log.cleaner",
    "kafkette.log.cleaner_process",
    "kafkette.log.partition_log",
    "kafkette.tools",
    "importlib.resources", "importlib.metadata",
    "cramjam", "kazoo", "re2", "prometheus_client", "hypercorn", "starlette", "cryptography",
    "confluent_kafka", "rich",
]


def test_broker_answers_metadata_without_kafka_python_or_crc32c(tmp_path) -> None:
    report = _start_and_ask(tmp_path)
    assert report["api_versions_error"] == 0
    assert report["metadata_brokers"] == 1
    assert report["loaded"] == []


def test_optional_features_load_on_first_use_not_at_start(tmp_path) -> None:
    report = _start_and_ask(tmp_path)
    assert report["optional"] == []
    # The API table imported the two handlers it was asked for, and no other.
    assert report["handlers"] == [
        "kafkette.broker.handlers.api_versions", "kafkette.broker.handlers.metadata",
    ]


def _start_and_ask(tmp_path) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data"), json.dumps(OPTIONAL)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


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


SERVE_HELP_SCRIPT = r"""
import json, sys
import kafkette.cli
sys.argv = ["kafkette", "serve", "--help"]
try:
    kafkette.cli.main()
except SystemExit as exit:
    code = exit.code
print(json.dumps({"code": code, "tools": sorted(m for m in sys.modules
                                               if m.startswith("kafkette.tools."))}))
"""


def test_kafkette_serve_does_not_register_the_tools() -> None:
    """A command line that starts with ``serve`` builds only the broker's subparsers."""
    result = subprocess.run(
        [sys.executable, "-c", SERVE_HELP_SCRIPT], capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "tools": []}
    assert "usage: kafkette serve" in result.stdout
