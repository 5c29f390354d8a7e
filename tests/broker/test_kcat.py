"""kcat (librdkafka's command-line client) against the broker: -L, -P, -C -e.

Skipped with a reason when kcat is not installed (``apt-get install kcat``).
"""

from __future__ import annotations

import json
import subprocess

import pytest

TIMEOUT = 30


@pytest.fixture(scope="module")
def kcat() -> str:
    import shutil

    path = shutil.which("kcat") or shutil.which("kafkacat")
    if path is None:
        pytest.skip("kcat is not installed (apt-get install -y kcat)")
    return path


def run_kcat(kcat: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [kcat, *args], input=stdin, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, f"kcat {args} failed: {result.stderr}"
    return result


def test_kcat_lists_broker_and_topics(kcat, broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, 3)
    text = run_kcat(kcat, "-b", broker.bootstrap, "-L").stdout
    assert " 1 brokers:" in text
    assert f"broker 1 at {broker.bootstrap} (controller)" in text
    assert f'topic "{topic}" with 3 partitions:' in text

    listing = json.loads(run_kcat(kcat, "-b", broker.bootstrap, "-L", "-J", "-t", topic).stdout)
    assert listing["brokers"] == [{"id": 1, "name": broker.bootstrap}]
    assert listing["controllerid"] == 1
    [described] = listing["topics"]
    assert described["topic"] == topic
    assert "error" not in described
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    for partition in described["partitions"]:
        assert partition["leader"] == 1
        assert partition["replicas"] == [{"id": 1}]
        assert partition["isrs"] == [{"id": 1}]


def test_kcat_produces_lines_and_consumes_to_the_end(kcat, broker, create_topic, read_all) -> None:
    topic = create_topic(broker.bootstrap, 3)
    lines = [f"line {i}" for i in range(50)]
    run_kcat(
        kcat, "-b", broker.bootstrap, "-P", "-t", topic, "-p", "1", stdin="\n".join(lines) + "\n"
    )
    keyed = [f"key{i}:keyed {i}" for i in range(20)]
    run_kcat(
        kcat,
        "-b",
        broker.bootstrap,
        "-P",
        "-t",
        topic,
        "-p",
        "2",
        "-K:",
        "-z",
        "snappy",
        stdin="\n".join(keyed) + "\n",
    )

    # Another client sees exactly what kcat wrote.
    stored = read_all(broker.bootstrap, topic, 3)
    assert [(r.partition, r.offset, r.value) for r in stored if r.partition == 1] == [
        (1, i, line.encode()) for i, line in enumerate(lines)
    ]
    assert [(r.key, r.value) for r in stored if r.partition == 2] == [
        (b"key%d" % i, b"keyed %d" % i) for i in range(20)
    ]
    assert not [r for r in stored if r.partition == 0]

    consumed = run_kcat(
        kcat, "-b", broker.bootstrap, "-C", "-t", topic, "-e", "-f", "%p|%o|%k|%s\\n"
    )
    rows = consumed.stdout.splitlines()
    assert sorted(rows) == sorted(
        [f"1|{i}||{line}" for i, line in enumerate(lines)]
        + [f"2|{i}|key{i}|keyed {i}" for i in range(20)]
    )
    assert f"Reached end of topic {topic} [1] at offset 50" in consumed.stderr
    assert f"Reached end of topic {topic} [2] at offset 20" in consumed.stderr

    # Start offsets work: -o 45 on partition 1 gives the last five.
    tail = run_kcat(
        kcat,
        "-b",
        broker.bootstrap,
        "-C",
        "-t",
        topic,
        "-p",
        "1",
        "-o",
        "45",
        "-e",
        "-f",
        "%o %s\\n",
    )
    assert tail.stdout.splitlines() == [f"{i} line {i}" for i in range(45, 50)]
