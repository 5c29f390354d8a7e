"""Invalid produced batches over a real socket: Kafka's code, nothing stored, broker serving.

Each batch is sent with kafka-python's own ProduceRequest encoder (``raw_client``).
After each refusal, ListOffsets shows the partition's end offset unchanged, a valid
batch on the same connection is stored at that end offset, and reading the partition
back gives exactly the valid records, in order, at contiguous offsets. The expected
codes are Apache Kafka 4.0.0's answers to the same bytes (docs/produce-validation.md), except
the offset-delta rule, which is kafkette's own.
"""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer import ListOffsetsRequest

from kafkette.wire.compression import compress
from kafkette.wire.records import (
    Record,
    build_batch,
    build_batch_from_values,
    decode_batches,
)

NONE = 0
UNKNOWN_SERVER_ERROR = -1
CORRUPT_MESSAGE = 2
INVALID_RECORD = 87
UNSUPPORTED_COMPRESSION_TYPE = 76
MESSAGE_TOO_LARGE = 10
HEADER = 61

GOOD = build_batch_from_values([(None, b"bad-%d" % i) for i in range(3)])


def with_crc(batch: bytes | bytearray) -> bytes:
    import crc32c

    out = bytearray(batch)
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


def set_int(batch: bytes, offset: int, fmt: str, value: int) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, offset, value)
    return with_crc(out)


def with_payload(payload: bytes, codec: int = 0) -> bytes:
    out = bytearray(GOOD[:HEADER]) + payload
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, codec)
    return with_crc(out)


def record(offset_delta: int) -> bytes:
    return build_batch([Record(offset_delta, 0, None, b"bad")])[HEADER:]


CASES = {
    "lastOffsetDelta 0 over 3 records": (set_int(GOOD, 23, ">i", 0), INVALID_RECORD),
    "lastOffsetDelta 1000": (set_int(GOOD, 23, ">i", 1000), INVALID_RECORD),
    "recordsCount 1 over 3 records": (
        set_int(set_int(GOOD, 23, ">i", 0), 57, ">i", 1),
        INVALID_RECORD,
    ),
    "codec 7": (set_int(GOOD, 21, ">h", 7), UNKNOWN_SERVER_ERROR),
    "garbage in a gzip batch": (with_payload(bytes(range(40)), 1), UNKNOWN_SERVER_ERROR),
    "garbage in an lz4 batch": (with_payload(bytes(range(40)), 3), UNKNOWN_SERVER_ERROR),
    "garbage records in a zstd stream": (
        with_payload(compress(4, bytes(range(200, 240))), 4),
        INVALID_RECORD,
    ),
    "garbage records, uncompressed": (with_payload(bytes(range(200, 240))), INVALID_RECORD),
    "bytes after the last record": (with_payload(GOOD[HEADER:] + b"\x00"), INVALID_RECORD),
    "offset deltas 0, 0, 0": (with_payload(record(0) * 3), INVALID_RECORD),
    "flipped bit in recordsCount": (
        GOOD[:57] + bytes([GOOD[57] ^ 0x80]) + GOOD[58:],
        CORRUPT_MESSAGE,
    ),
    "two batches": (GOOD + GOOD, INVALID_RECORD),
    "baseOffset 9": (struct.pack(">q", 9) + GOOD[8:], INVALID_RECORD),
}


@pytest.fixture(scope="module")
def topic(broker) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = "invalid-batches"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(15)
    return name


def end_offset(connection, topic: str) -> int:
    part = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition
    request = ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsRequest.ListOffsetsTopic(
                name=topic,
                partitions=[part(partition_index=0, current_leader_epoch=-1, timestamp=-1)],
            )
        ],
    )
    answer = connection.request(request, 7).topics[0].partitions[0]
    assert answer.error_code == NONE
    return answer.offset


def stored_values(connection, topic: str) -> list[tuple[int, bytes]]:
    data = connection.fetch(topic, 0, 0)
    assert data.error_code == NONE
    return [(r.offset, r.value) for _, records in decode_batches(data.records) for r in records]


@pytest.mark.parametrize("batch,expected", CASES.values(), ids=CASES.keys())
def test_invalid_batch_is_refused_and_nothing_is_stored(
    broker, raw_client, topic, batch: bytes, expected: int
) -> None:
    connection = raw_client(broker.bootstrap)
    before = end_offset(connection, topic)
    response = connection.produce(topic, 0, batch)
    assert response.error_code == expected
    assert response.base_offset == -1
    assert response.record_errors == []  # Kafka lists none for these
    assert end_offset(connection, topic) == before

    # The broker, and this connection, go on serving; the valid batch lands at `before`.
    value = b"good-after-%d" % before
    after = connection.produce(topic, 0, build_batch_from_values([(None, value)]))
    assert after.error_code == NONE
    assert after.base_offset == before
    stored = stored_values(connection, topic)
    assert [offset for offset, _ in stored] == list(range(before + 1))
    assert all(v.startswith(b"good-after-") for _, v in stored), stored


def test_zstd_below_produce_v7_is_unsupported_compression(broker, raw_client, topic) -> None:
    connection = raw_client(broker.bootstrap)
    before = end_offset(connection, topic)
    batch = build_batch_from_values([(None, b"zstd")], compression=4)
    assert connection.produce(topic, 0, batch, version=6).error_code == (
        UNSUPPORTED_COMPRESSION_TYPE
    )
    assert end_offset(connection, topic) == before
    stored = connection.produce(topic, 0, batch, version=7)
    assert (stored.error_code, stored.base_offset) == (NONE, before)


def test_only_the_invalid_partition_is_refused(broker, raw_client, create_topic) -> None:
    from kafka.protocol.producer import ProduceRequest

    name = create_topic(broker.bootstrap, 2)
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            data(
                name=name,
                partition_data=[
                    data.PartitionProduceData(index=0, records=CASES["codec 7"][0]),
                    data.PartitionProduceData(
                        index=1, records=build_batch_from_values([(None, b"fine")], compression=3)
                    ),
                ],
            )
        ],
    )
    response = raw_client(broker.bootstrap).request(request, 9)
    answers = {p.index: p for p in response.responses[0].partition_responses}
    assert answers[0].error_code == UNKNOWN_SERVER_ERROR
    assert (answers[1].error_code, answers[1].base_offset) == (NONE, 0)


def test_decompression_bomb_is_refused_without_exhausting_memory(
    broker, raw_client, create_topic
) -> None:
    # 8 MiB of zeros in a few KiB of zstd; the topic allows 64 x 16 KiB of records per batch.
    name = create_topic(broker.bootstrap, 1, configs={"max.message.bytes": "16384"})
    bomb = build_batch([Record(0, 0, None, bytes(8 << 20))], compression=4)
    assert len(bomb) < 16384
    connection = raw_client(broker.bootstrap)
    assert connection.produce(name, 0, bomb).error_code == MESSAGE_TOO_LARGE
    assert end_offset(connection, name) == 0
    fine = connection.produce(name, 0, build_batch_from_values([(None, b"x" * 1000)] * 3))
    assert (fine.error_code, fine.base_offset) == (NONE, 0)
