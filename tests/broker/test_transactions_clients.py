"""Transactional producers of kafka-python and aiokafka against the coordinator.

Each client family speaks its own versions of the transaction APIs (aiokafka
the oldest: InitProducerId, AddPartitionsToTxn and EndTxn v0), so each commits
and aborts here; the COMMIT/ABORT markers are read back from the partition logs.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

from kafkette.wire.records import ControlRecordType, decode_batches, parse_control_record

TIMEOUT = 30
COMMIT = int(ControlRecordType.COMMIT)
ABORT = int(ControlRecordType.ABORT)


def _log_content(embedded, topic: str, index: int) -> tuple[list[bytes], list[int]]:
    """(data values, marker types) of one partition, in log order."""
    partition = embedded.broker.topics.partition(topic, index)
    values: list[bytes] = []
    markers: list[int] = []
    for header, records in decode_batches(partition.log.read(0, 1 << 24).to_bytes()):
        if header.is_control:
            markers.append(int(parse_control_record(records[0])[0]))
        else:
            values.extend(r.value for r in records)
    return values, markers


def _settled(embedded, topic: str, index: int, markers: int) -> tuple[list[bytes], list[int]]:
    deadline = time.monotonic() + TIMEOUT
    while True:
        content = _log_content(embedded, topic, index)
        if len(content[1]) >= markers:
            return content
        assert time.monotonic() < deadline, f"markers of {topic}-{index}: {content[1]}"
        time.sleep(0.05)


def test_kafka_python_commits_and_aborts(broker, create_topic):
    topic = create_topic(broker.bootstrap, partitions=2)
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=f"kp-{uuid.uuid4().hex[:8]}",
    )
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"kept-0", partition=0)
        producer.send(topic, b"kept-1", partition=1)
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"dropped", partition=0)
        producer.flush()
        producer.abort_transaction()
    finally:
        producer.close(timeout=10)
    assert _settled(broker, topic, 0, 2) == ([b"kept-0", b"dropped"], [COMMIT, ABORT])
    assert _settled(broker, topic, 1, 1) == ([b"kept-1"], [COMMIT])


def test_aiokafka_commits_and_aborts(broker, create_topic):
    topic = create_topic(broker.bootstrap, partitions=1)

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap,
            transactional_id=f"aio-{uuid.uuid4().hex[:8]}",
        )
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait(topic, b"kept", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait(topic, b"dropped", partition=0)
            await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), TIMEOUT))
    assert _settled(broker, topic, 0, 2) == ([b"kept", b"dropped"], [COMMIT, ABORT])
