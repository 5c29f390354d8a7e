"""``kafkette metadata``: the CLI as a subprocess against kafkette and the reference Kafka.

The cluster view is checked against ``kcat -L`` on the same broker (brokers, controller,
leaders, replicas, ISR) and its topic ids against ``kafkette topics describe`` (which
test_topics.py checks against ``kafka-topics.sh --describe``); ``--api-versions`` against
``kafka-broker-api-versions.sh``: the same version range for every API the broker serves.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from kafkette.wire.apis import SUPPORTED
from tests.reference_kafka import reference_script_or_skip

TIMEOUT_S = 120
API_LINE = re.compile(r"^\t?(?P<name>\w+)\((?P<key>\d+)\): (?P<range>UNSUPPORTED|\d+(?: to \d+)?)")


def ok_json(done):
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def create_topic(cli, bootstrap: str, topic: str, partitions: int) -> None:
    done = cli("topics", "create", topic, "--partitions", str(partitions), "-b", bootstrap)
    assert done.returncode == 0, done.stderr


def kcat_metadata(bootstrap: str, topic: str) -> dict:
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        pytest.skip("kcat is not installed (apt-get install -y kcat): it is the yardstick here")
    done = subprocess.run(
        [kcat, "-L", "-J", "-b", bootstrap, "-t", topic],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_metadata_matches_kcat_and_topic_ids(cli, any_bootstrap, unique_topic):
    first, second = unique_topic("meta"), unique_topic("meta")
    create_topic(cli, any_bootstrap, first, 3)
    create_topic(cli, any_bootstrap, second, 1)
    b = ("-b", any_bootstrap)

    doc = ok_json(cli("metadata", "--topic", first, "--topic", second, "--json", *b))
    kcat = kcat_metadata(any_bootstrap, first)
    assert doc["controller"] == kcat["controllerid"]
    assert [(x["id"], f"{x['host']}:{x['port']}") for x in doc["brokers"]] == sorted(
        (x["id"], x["name"]) for x in kcat["brokers"]
    )
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", doc["cluster_id"]), doc["cluster_id"]
    assert [t["topic"] for t in doc["topics"]] == [first, second]
    [theirs] = kcat["topics"]
    ours = doc["topics"][0]
    assert [
        (p["partition"], p["leader"], p["replicas"], p["isr"], p["offline_replicas"])
        for p in ours["partitions"]
    ] == [
        (
            p["partition"],
            p["leader"],
            [r["id"] for r in p["replicas"]],
            [r["id"] for r in p["isrs"]],
            [],
        )
        for p in sorted(theirs["partitions"], key=lambda p: p["partition"])
    ]
    described = ok_json(cli("topics", "describe", first, second, "--json", *b))
    assert [t["topic_id"] for t in doc["topics"]] == [d["topic_id"] for d in described]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", t["topic_id"]) for t in doc["topics"])

    # Every topic, without --topic: ours are among them, internal ones only with --internal.
    everything = ok_json(cli("metadata", "--json", *b))
    names = [t["topic"] for t in everything["topics"]]
    assert {first, second} <= set(names) and names == sorted(names)
    assert not any(name.startswith("__") for name in names)


def test_plain_tables_and_a_missing_topic(cli, kafkette_bootstrap, unique_topic):
    topic = unique_topic("meta-plain")
    create_topic(cli, kafkette_bootstrap, topic, 2)
    b = ("-b", kafkette_bootstrap)
    done = cli("metadata", "--topic", topic, *b)
    assert done.returncode == 0, done.stderr
    blocks = [block.splitlines() for block in done.stdout.split("\n\n")]
    assert [block[0].split() for block in blocks] == [
        ["CLUSTER-ID", "CONTROLLER", "BROKERS", "TOPICS"],
        ["BROKER", "HOST", "PORT", "RACK"],
        ["TOPIC", "TOPIC-ID", "PARTITIONS", "REPLICATION-FACTOR"],
        ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "OFFLINE-REPLICAS"],
    ]
    host, port = kafkette_bootstrap.rsplit(":", 1)
    assert blocks[0][1].split()[1:] == ["1", "1", "1"]
    assert blocks[1][1].split() == ["1", host, port, "-"]
    assert blocks[2][1].split()[0::2] == [topic, "2"]
    assert [line.split() for line in blocks[3][1:]] == [
        [topic, "0", "1", "1", "1", "-"],
        [topic, "1", "1", "1", "1", "-"],
    ]

    missing = cli("metadata", "--topic", "no-such-topic-here", *b)
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.startswith("kafkette: topic 'no-such-topic-here' does not exist")
    assert len(missing.stderr.splitlines()) == 1


def parse_api_versions(output: str) -> dict[str, dict[int, str]]:
    """``host:port -> {api key: "0 to 12" | "3" | "UNSUPPORTED"}`` of Kafka's format."""
    found: dict[str, dict[int, str]] = {}
    current: dict[int, str] = {}
    for line in output.splitlines():
        if " -> (" in line:
            current = found.setdefault(line.split()[0], {})
            continue
        match = API_LINE.match(line)
        if match:
            current[int(match["key"])] = match["range"]
    return found


def test_api_versions_match_kafkas_tool(cli, any_bootstrap):
    script = reference_script_or_skip("kafka-broker-api-versions.sh is the yardstick")
    theirs = subprocess.run(
        [str(script), "bin", "kafka-broker-api-versions.sh", "--bootstrap-server", any_bootstrap],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert theirs.returncode == 0, theirs.stderr
    done = cli("metadata", "--api-versions", "-b", any_bootstrap)
    assert done.returncode == 0, done.stderr
    ours_by_broker, theirs_by_broker = (
        parse_api_versions(done.stdout),
        parse_api_versions(theirs.stdout),
    )
    assert list(ours_by_broker) == [any_bootstrap] == list(theirs_by_broker)
    header = done.stdout.splitlines()[0]
    assert header == next(line for line in theirs.stdout.splitlines() if " -> (" in line)

    ours, kafkas = ours_by_broker[any_bootstrap], theirs_by_broker[any_bootstrap]
    served = {k: v for k, v in kafkas.items() if v != "UNSUPPORTED"}
    assert {k: v for k, v in ours.items() if v != "UNSUPPORTED"} == served
    # What this client knows and the broker does not serve is UNSUPPORTED, as Kafka says it.
    assert {k for k, v in ours.items() if v == "UNSUPPORTED"} == {int(k) for k in SUPPORTED} - set(
        served
    )

    [doc] = ok_json(cli("metadata", "--api-versions", "--json", "-b", any_bootstrap))
    for entry in doc["apis"]:
        spec = SUPPORTED.get(entry["api_key"])
        if spec is None or entry["max_version"] is None:
            assert entry["usable"] is None
        elif spec.decode_min <= entry["max_version"] and entry["min_version"] <= spec.max_version:
            assert entry["usable"] == min(spec.max_version, entry["max_version"])


def test_api_versions_say_which_sasl_mechanisms_they_lack(cli):
    """TLS and SASL PLAIN/SCRAM work (tests/tools/test_wire_client.py); a mechanism kafkette's
    own client lacks is one line, exit 1, before any connection."""
    done = cli(
        "metadata", "--api-versions", "-b", "127.0.0.1:1",
        "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=GSSAPI",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "kafkette: kafkette's own client cannot log in with sasl.mechanism=GSSAPI: this "
        "request goes through it; use SASL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, or a "
        "PLAINTEXT or SSL listener\n"
    )
