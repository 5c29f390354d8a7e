"""Bad input on one connection never hurts the broker, other clients, or stored data.

Each case sends something no well-behaved client sends over a raw socket and
checks the broker's answer: Kafka closes the connection on frames it cannot
parse, answers an unknown ApiVersions version with a v0 body and error 35
(KIP-511), and refuses a batch with a bad CRC with CORRUPT_MESSAGE for that
partition only. After every case a fresh client produces and reads the whole
``survivor`` topic back: all earlier records are still there at their offsets.
"""

from __future__ import annotations

import random
import socket
import struct
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Producer
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from kafkette.wire.records import build_batch_from_values, decode_batches

UNSUPPORTED_VERSION = 35
CORRUPT_MESSAGE = 2
SOCKET_REQUEST_MAX_BYTES = 104857600  # Kafka's default, which the module's broker keeps


@dataclass
class Survivor:
    """A topic whose every record is known; each health check adds a few."""

    topic: str
    records: list[tuple[int, int, bytes]] = field(default_factory=list)  # partition, offset, value
    produced: int = 0


def produce_some(bootstrap: str, survivor: Survivor, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    acked = []

    def on_delivery(err, msg) -> None:
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.value()))

    for _ in range(count):
        survivor.produced += 1
        producer.produce(
            survivor.topic, value=b"survivor-%d" % survivor.produced, on_delivery=on_delivery
        )
    assert producer.flush(20) == 0
    assert len(acked) == count
    survivor.records.extend(acked)


@pytest.fixture(scope="module")
def survivor(broker) -> Survivor:
    from confluent_kafka.admin import AdminClient, NewTopic

    state = Survivor("survivor")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(state.topic, 3, 1)])[state.topic].result(15)
    produce_some(broker.bootstrap, state, 100)
    return state


@pytest.fixture
def still_healthy(broker, survivor, read_all):
    """After the test: another connection produces and reads everything back intact."""
    yield
    produce_some(broker.bootstrap, survivor, 10)
    stored = read_all(broker.bootstrap, survivor.topic, 3)
    assert sorted((r.partition, r.offset, r.value) for r in stored) == sorted(survivor.records)


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request_header(api_key: int, version: int, correlation_id: int = 7) -> bytes:
    client_id = b"malformed"
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id


def produce_request(topic: str, partitions: dict[int, bytes], version: int = 9) -> ProduceRequest:
    data = ProduceRequest.TopicProduceData
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            data(
                name=topic,
                partition_data=[
                    data.PartitionProduceData(index=index, records=records)
                    for index, records in partitions.items()
                ],
            )
        ],
    )


CLOSING_CASES = {
    "http-request": b"GET / HTTP/1.1\r\nHost: kafkette\r\n\r\n",
    "random-bytes": frame(random.Random(11).randbytes(40)),
    "negative-length": struct.pack(">i", -5) + b"\0" * 16,
    "oversize-length": struct.pack(">i", SOCKET_REQUEST_MAX_BYTES + 1),
    "shorter-than-a-header": frame(b"\x00\x03\x00"),
    "unknown-api-key": frame(request_header(1000, 0) + b"\0" * 8),
    "unsupported-produce-version": frame(request_header(0, 99) + b"\0" * 8),
    "client-id-overruns-frame": frame(struct.pack(">hhih", 18, 3, 1, 500) + b"abc"),
    "metadata-body-cut-short": frame(request_header(3, 9) + b"\x00\x00\x00\x05\x00"),
}


@pytest.mark.usefixtures("still_healthy")
@pytest.mark.parametrize("data", CLOSING_CASES.values(), ids=CLOSING_CASES.keys())
def test_unparseable_input_closes_the_connection(broker, raw_client, data: bytes) -> None:
    connection = raw_client(broker.bootstrap)
    connection.send_bytes(data)
    assert connection.is_closed_by_peer(timeout=10)


@pytest.mark.usefixtures("still_healthy")
def test_produce_body_cut_short_closes_the_connection(broker, raw_client, survivor) -> None:
    request = produce_request(survivor.topic, {0: build_batch_from_values([(None, b"cut")])})
    request.with_header(correlation_id=1, client_id="malformed")
    whole = request.encode(version=9, header=True, framed=True)
    payload = whole[4:-20]
    connection = raw_client(broker.bootstrap)
    connection.send_bytes(frame(payload))
    assert connection.is_closed_by_peer(timeout=10)


@pytest.mark.usefixtures("still_healthy")
def test_truncated_frame_then_eof(broker, raw_client) -> None:
    connection = raw_client(broker.bootstrap)
    connection.send_bytes(struct.pack(">i", 100) + request_header(18, 3)[:10])
    connection.sock.shutdown(socket.SHUT_WR)
    assert connection.is_closed_by_peer(timeout=10)


@pytest.mark.usefixtures("still_healthy")
def test_unknown_api_versions_version_gets_v0_answer(broker, raw_client) -> None:
    connection = raw_client(broker.bootstrap)
    # A future ApiVersions: flexible header and a body we cannot know.
    connection.send_bytes(frame(request_header(18, 99, correlation_id=42) + b"\x00\x05hello"))
    answer = ApiVersionsResponse.decode(connection.read_frame(), version=0, header=True)
    assert answer.header.correlation_id == 42
    assert answer.error_code == UNSUPPORTED_VERSION
    advertised = {
        entry.api_key: (entry.min_version, entry.max_version) for entry in answer.api_keys
    }
    assert advertised[18][0] == 0 and advertised[18][1] >= 3  # ApiVersions itself
    assert 0 in advertised and 1 in advertised  # Produce and Fetch

    # The connection stays usable: the client retries with a version we know.
    retry = connection.request(
        ApiVersionsRequest(client_software_name="malformed", client_software_version="1"), 3
    )
    assert retry.error_code == 0
    assert {entry.api_key for entry in retry.api_keys} == set(advertised)


@pytest.mark.usefixtures("still_healthy")
def test_bad_crc_is_corrupt_message_for_that_partition_only(broker, raw_client, survivor) -> None:
    good = build_batch_from_values([(None, b"crc-good-%d" % i) for i in range(3)])
    bad = bytearray(build_batch_from_values([(None, b"crc-bad-%d" % i) for i in range(3)]))
    bad[-1] ^= 0xFF  # a payload byte: the stored CRC no longer matches
    connection = raw_client(broker.bootstrap)
    response = connection.request(produce_request(survivor.topic, {0: bytes(bad), 1: good}), 9)
    assert isinstance(response, ProduceResponse)
    results = {p.index: p for p in response.responses[0].partition_responses}
    assert results[0].error_code == CORRUPT_MESSAGE
    assert results[0].base_offset == -1
    assert results[1].error_code == 0
    base = results[1].base_offset
    survivor.records.extend((1, base + i, b"crc-good-%d" % i) for i in range(3))

    # Nothing of the corrupt batch reached partition 0.
    data = connection.fetch(survivor.topic, 0, 0)
    values = [r.value for _, records in decode_batches(data.records) for r in records]
    assert not [v for v in values if v and v.startswith(b"crc-bad")]

    # And the same connection goes on working.
    again = connection.produce(survivor.topic, 2, build_batch_from_values([(None, b"crc-after")]))
    assert again.error_code == 0
    survivor.records.append((2, again.base_offset, b"crc-after"))


@pytest.mark.usefixtures("still_healthy")
def test_frames_split_into_single_bytes_are_reassembled(broker, raw_client, survivor) -> None:
    request = ApiVersionsRequest(client_software_name="slow", client_software_version="1")
    request.with_header(correlation_id=5, client_id="slow")
    data = request.encode(version=3, header=True, framed=True)
    connection = raw_client(broker.bootstrap)
    connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for byte in data:
        connection.send_bytes(bytes([byte]))
    answer = ApiVersionsResponse.decode(connection.read_frame(), version=3, header=True)
    assert answer.header.correlation_id == 5
    assert answer.error_code == 0
