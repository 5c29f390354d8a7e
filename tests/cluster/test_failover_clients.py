"""kill -9 of a partition leader under acks=all idempotent load, for three client families.

Three brokers, replication factor 3, ``min.insync.replicas=2``. A producer
(librdkafka, kafka-python, then Kafka's own Java VerifiableProducer) sends
distinct values; once a share of them is acknowledged the test kills the
partition's leader with SIGKILL and lets the producer carry on by itself.
Then: every acknowledged value is in the topic exactly once (nothing lost,
nothing duplicated), the killed broker comes back, truncates, catches up and
rejoins the ISR, and all three replicas hold byte-identical batches.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import time
from pathlib import Path

import pytest

RECORDS = 3000
KILL_AFTER_ACKED = 800
CLUSTER_CONFIGS = {"min.insync.replicas": "2", "default.replication.factor": "3"}


def _leader(bootstrap: str, topic: str, partition: int = 0, timeout: float = 30.0) -> int:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5)
        info = meta.topics.get(topic)
        if info is not None and not info.error and partition in info.partitions:
            leader = info.partitions[partition].leader
            if leader >= 0:
                return leader
        time.sleep(0.2)
    raise AssertionError(f"{topic}-{partition} has no leader after {timeout}s")


def _isr(bootstrap: str, topic: str, partition: int = 0) -> list[int]:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=5)
    return sorted(meta.topics[topic].partitions[partition].isrs)


def _create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=3)])
    futures[topic].result(30)


def replica_batches(data_dir: Path, topic: str, partition: int) -> list[bytes]:
    """The batches of one replica, in offset order, whatever its segment boundaries."""
    directory = data_dir / f"{topic}-{partition}"
    batches: list[bytes] = []
    for segment in sorted(directory.glob("*.log")):
        data = segment.read_bytes()
        position = 0
        while position + 12 <= len(data):
            length = int.from_bytes(data[position + 8 : position + 12], "big")
            if length <= 0 or position + 12 + length > len(data):
                break
            batches.append(data[position : position + 12 + length])
            position += 12 + length
    return batches


def _wait_in_sync(cluster, topic: str, ids: list[int], timeout: float = 60.0) -> list[bytes]:
    """Wait until every broker is in the ISR and all replicas hold the same batches."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        isr = _isr(cluster.bootstrap, topic)
        copies = [replica_batches(cluster.data_dir(i), topic, 0) for i in ids]
        if isr == sorted(ids) and all(c == copies[0] for c in copies):
            return copies[0]
        last = f"isr={isr}, batches per replica={[len(c) for c in copies]}"
        time.sleep(0.5)
    raise AssertionError(f"replicas of {topic}-0 did not converge in {timeout}s: {last}")


def _values(bootstrap: str, topic: str) -> list[bytes]:
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 60
        position = 0
        while position < end:
            assert time.monotonic() < deadline, f"read {position} of {end} records"
            for message in consumer.consume(1000, 0.5):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise AssertionError(str(message.error()))
                values.append(message.value())
                position = message.offset() + 1
        return values
    finally:
        consumer.close()


def _kafka_home() -> Path | None:
    ref = Path(__file__).resolve().parents[3] / "shared" / "reference-kafka" / "kafka-ref"
    if not ref.exists() or shutil.which("java") is None:
        return None
    import subprocess

    out = subprocess.run([str(ref), "home"], capture_output=True, text=True, timeout=300)
    home = Path(out.stdout.strip()) if out.returncode == 0 else None
    return home if home is not None and (home / "bin").is_dir() else None


FAMILIES = ["confluent-kafka", "kafka-python", "java"]


@pytest.fixture(scope="module")
def load():
    """failover_load.py, loaded by path (importlib mode puts no test folder on sys.path)."""
    path = Path(__file__).with_name("failover_load.py")
    name = "kafkette_failover_load"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.mark.parametrize("family", FAMILIES)
def test_leader_killed_under_acks_all_idempotent_load(cluster, load, family):
    kafka_home = None
    if family == "java":
        kafka_home = _kafka_home()
        if kafka_home is None:
            pytest.skip("Kafka's Java tools need ../shared/reference-kafka and java")
    nodes = cluster(3, configs=CLUSTER_CONFIGS)
    topic = f"failover-{family}"
    _create_topic(nodes.bootstrap, topic)
    leader = _leader(nodes.bootstrap, topic)
    killed: list[int] = []

    def on_progress(acked: int) -> None:
        if not killed and acked >= KILL_AFTER_ACKED:
            nodes.kill(leader)
            killed.append(leader)

    prefix = family
    if family == "confluent-kafka":
        acked = load.run_confluent(nodes.bootstrap, topic, prefix, RECORDS, on_progress)
    elif family == "kafka-python":
        acked = load.run_kafka_python(nodes.bootstrap, topic, prefix, RECORDS, on_progress)
    else:
        acked = load.run_java_verifiable(
            kafka_home, nodes.bootstrap, topic, prefix, RECORDS, on_progress
        )
    assert killed, f"the leader was never killed: only {len(acked)} records acknowledged"
    new_leader = _leader(nodes.bootstrap, topic)
    assert new_leader != leader

    raw = _values(nodes.bootstrap, topic)
    values = [
        (load.java_value(v, prefix) if family == "java" else v.decode()) for v in raw
    ]
    assert len(values) == len(set(values)), "duplicates in the log"
    missing = set(acked) - set(values)
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {sorted(missing)[:5]}"
    assert len(acked) == RECORDS

    # The killed broker returns, truncates what was never committed, catches up, rejoins.
    nodes.start(leader)
    _wait_in_sync(nodes, topic, sorted(nodes.ids))
