"""Kafka's own ``kafka-topics.sh --describe`` against a kafkette cluster, as against Kafka.

Three brokers, a replication factor 3 topic of three partitions with
``min.insync.replicas=2``. Kafka 4.0's tool describes topics through
DescribeTopicPartitions; its output against a single-node Apache Kafka 4.0 is, tab
separated (checked once by hand, docs/cluster.md "Failure scenarios checked")::

    Topic: dt  TopicId: <22 chars>  PartitionCount: 3  ReplicationFactor: 1  Configs: ...
        Topic: dt  Partition: 0  Leader: 1  Replicas: 1  Isr: 1  Elr:   LastKnownElr:

The test holds kafkette's output to that line structure, field for field, and the
values to ZooKeeper's partition states; then kills a leader and describes again:
the ISR without the dead broker, a new leader, and ``--under-replicated-partitions``
listing every partition.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


TAB_LINE_TOPIC = re.compile(
    r"^Topic: (?P<topic>\S+)\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: (?P<count>\d+)"
    r"\tReplicationFactor: (?P<rf>\d+)\tConfigs: (?P<configs>.*)$"
)
TAB_LINE_PARTITION = re.compile(
    r"^\tTopic: (?P<topic>\S+)\tPartition: (?P<partition>\d+)\tLeader: (?P<leader>-?\d+|none)"
    r"\tReplicas: (?P<replicas>[\d,]+)\tIsr: (?P<isr>[\d,]*)\tElr: (?P<elr>[\d,]*)"
    r"\tLastKnownElr: (?P<last_elr>[\d,]*)$"
)


def describe(home: Path, bootstrap: str, topic: str, *flags: str) -> list[str]:
    out = subprocess.run(
        [str(home / "bin" / "kafka-topics.sh"), "--bootstrap-server", bootstrap,
         "--describe", "--topic", topic, *flags],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, KAFKA_HEAP_OPTS="-Xmx256m"),
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.splitlines()


def parse(lines: list[str], topic: str) -> dict[int, dict[str, str]]:
    """Partition -> its line's fields; every line must have Kafka's structure."""
    partitions = {}
    for line in lines:
        if (match := TAB_LINE_PARTITION.match(line)) is not None:
            assert match["topic"] == topic
            partitions[int(match["partition"])] = match.groupdict()
        else:
            assert TAB_LINE_TOPIC.match(line), f"not Kafka's line structure: {line!r}"
    return partitions


def ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def test_kafka_topics_describe_shows_leaders_replicas_and_isr_as_for_kafka(
    cluster, wait_until
) -> None:
    home = fl.kafka_home()
    if home is None:
        pytest.skip("needs java and the reference Kafka (../shared/reference-kafka/kafka-ref)")
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"}, partitions=3)
    for p in range(3):
        wait_until(lambda p=p: fl.full_isr(c, topic, [1, 2, 3], p), timeout=fl.TIMEOUT,
                   what=f"{topic}-{p} with a full ISR")

    lines = describe(home, c.bootstrap, topic)
    header = TAB_LINE_TOPIC.match(lines[0])
    assert header is not None, lines[0]
    assert (header["topic"], header["count"], header["rf"]) == (topic, "3", "3")
    assert "min.insync.replicas=2" in header["configs"]
    shown = parse(lines[1:], topic)
    assert sorted(shown) == [0, 1, 2]
    zk = c.zk()
    for p, fields in shown.items():
        state = c.partition_state(topic, p)
        replicas = json.loads(zk.get(f"/brokers/topics/{topic}")[0])["partitions"][str(p)]
        assert int(fields["leader"]) == state["leader"]
        assert ids(fields["replicas"]) == replicas  # assignment order, as Kafka prints it
        assert sorted(ids(fields["isr"])) == [1, 2, 3]
        assert (fields["elr"], fields["last_elr"]) == ("", "")  # as Kafka 4.0 (ELR off)
    # Leaders spread over the brokers (Kafka's round-robin assignment).
    assert sorted(int(f["leader"]) for f in shown.values()) == [1, 2, 3]

    victim = int(shown[0]["leader"])
    c.kill(victim)
    survivors = [i for i in (1, 2, 3) if i != victim]
    for p in range(3):
        c.wait_leader(topic, p, exclude=(victim,))
        wait_until(lambda p=p: fl.full_isr(c, topic, survivors, p), timeout=fl.TIMEOUT,
                   what=f"{topic}-{p} led without broker {victim}")
    after = parse(describe(home, c.bootstrap_of(*survivors), topic,
                           "--under-replicated-partitions"), topic)
    assert sorted(after) == [0, 1, 2]  # every partition lost a replica
    for p, fields in after.items():
        assert int(fields["leader"]) in survivors
        assert sorted(ids(fields["isr"])) == survivors
        assert ids(fields["replicas"]) == ids(shown[p]["replicas"])
