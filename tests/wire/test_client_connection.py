"""``ClientConnection``, the client side of the protocol a follower speaks to its leader.

Requests go to a real broker over a real socket and the answers are decoded here;
the header rules (v0/v1 responses, ApiVersions always v0) are also checked against
``ServerConnection``'s encoder and against kafka-python's request encoder.
"""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import (
    NEED_DATA,
    ClientConnection,
    Response,
    response_header_flexible,
)
from kafkette.wire.connection import Request, RequestHeader, ServerConnection
from kafkette.wire.exceptions import FrameTooLargeError, MalformedFrameError

# ApiVersions v3+ must name the client software (Kafka refuses an empty name: 42).
SOFTWARE = {"client_software_name": "kafkette-tests", "client_software_version": "1"}

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated. Use files:DeprecationWarning")


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir: Path = tmp_path_factory.mktemp("client-connection")
    broker = EmbeddedBroker.start(data_dir=data_dir, configs={"num.partitions": "1"})
    try:
        yield broker.bootstrap
    finally:
        broker.stop(timeout=30)


class SocketClient:
    """A blocking socket driven by a ClientConnection, one request at a time."""

    def __init__(self, bootstrap: str) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.conn = ClientConnection()

    def call(self, api_key: int, version: int, body: dict, chunk: int = 65536) -> Response:
        self.sock.sendall(self.conn.send_request(api_key, version, body, "replica-test"))
        while True:
            response = self.conn.next_response()
            if response is not NEED_DATA:
                assert isinstance(response, Response)
                return response
            data = self.sock.recv(chunk)
            assert data, "broker closed the connection"
            self.conn.receive_data(data)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def client(bootstrap: str) -> Iterator[SocketClient]:
    c = SocketClient(bootstrap)
    try:
        yield c
    finally:
        c.close()


def test_header_flexibility_rules() -> None:
    assert not response_header_flexible(ApiKey.API_VERSIONS, 3)  # KIP-511: always v0
    assert not response_header_flexible(ApiKey.FETCH, 11)
    assert response_header_flexible(ApiKey.FETCH, 12)
    assert not response_header_flexible(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3)
    assert response_header_flexible(ApiKey.OFFSET_FOR_LEADER_EPOCH, 4)
    assert response_header_flexible(ApiKey.METADATA, 9)


@pytest.mark.parametrize("version", [0, 3])
def test_api_versions_against_the_broker(client: SocketClient, version: int) -> None:
    body = {"client_software_name": "kafkette", "client_software_version": "1"}
    response = client.call(ApiKey.API_VERSIONS, version, body)
    assert response.body["error_code"] == 0
    keys = {entry["api_key"]: entry for entry in response.body["api_keys"]}
    assert keys[ApiKey.FETCH]["max_version"] >= 12
    assert keys[ApiKey.OFFSET_FOR_LEADER_EPOCH]["max_version"] >= 3


def test_pipelined_responses_match_their_requests_fed_byte_by_byte(bootstrap: str) -> None:
    """Three requests of different header versions in flight, the answers read one byte at a
    time: each is decoded by the version of the request it answers."""
    host, _, port = bootstrap.rpartition(":")
    conn = ClientConnection()
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            conn.send_request(ApiKey.METADATA, 12, {"topics": []}, "t")
            + conn.send_request(ApiKey.API_VERSIONS, 3, SOFTWARE, "t")
            + conn.send_request(ApiKey.METADATA, 1, {"topics": []}, "t")
        )
        assert conn.in_flight == 3
        got: list[Response] = []
        while len(got) < 3:
            data = sock.recv(1)
            assert data
            conn.receive_data(data)
            response = conn.next_response()
            if response is not NEED_DATA:
                got.append(response)  # type: ignore[arg-type]
    assert [(r.correlation_id, r.api_key, r.api_version) for r in got] == [
        (0, ApiKey.METADATA, 12),
        (1, ApiKey.API_VERSIONS, 3),
        (2, ApiKey.METADATA, 1),
    ]
    assert len(got[0].body["brokers"]) == 1
    assert got[0].body["brokers"][0]["port"] == got[2].body["brokers"][0]["port"] == int(port)
    assert got[1].body["error_code"] == 0
    assert conn.in_flight == 0


def test_produce_then_fetch_v12_returns_the_batch_bytes(client: SocketClient) -> None:
    """A non-flexible request (Produce v8) and a flexible one (Fetch v12) round trip; the
    records come back as the bytes that were produced."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    topic = "cc-" + uuid.uuid4().hex[:8]
    created = client.call(
        ApiKey.CREATE_TOPICS,
        5,
        {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 10000,
        },
    )
    assert created.body["topics"][0]["error_code"] == 0
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(5):
        builder.append(i, timestamp=1000 + i, key=None, value=b"v%d" % i, headers=[])
    batch = bytes(builder.build())
    produced = client.call(
        ApiKey.PRODUCE,
        8,
        {
            "acks": -1,
            "timeout_ms": 10000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}],
        },
    )
    part = produced.body["responses"][0]["partition_responses"][0]
    assert (part["error_code"], part["base_offset"]) == (0, 0)
    fetched = client.call(
        ApiKey.FETCH,
        12,
        {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        },
    )
    answer = fetched.body["responses"][0]["partitions"][0]
    assert answer["error_code"] == 0
    assert answer["high_watermark"] == 5
    records = bytes(answer["records"])
    # Same batch; only the base offset (0 already) and nothing else may differ.
    assert len(records) == len(batch)
    assert records[12:] == batch[12:]


def _round_trip(api_key: int, version: int, request_body: dict, response_body: dict) -> dict:
    client = ClientConnection()
    server = ServerConnection()
    server.receive_data(client.send_request(api_key, version, request_body, "rt"))
    request = server.next_request()
    assert isinstance(request, Request)
    assert request.header.client_id == "rt"
    chunks = server.encode_response(request.header, response_body)
    client.receive_data(b"".join(bytes(c) for c in chunks))  # type: ignore[arg-type]
    response = client.next_response()
    assert isinstance(response, Response)
    return response.body


def test_offset_for_leader_epoch_round_trip_through_the_server_codec() -> None:
    request = {
        "replica_id": 2,
        "topics": [
            {
                "topic": "t",
                "partitions": [{"partition": 0, "current_leader_epoch": 3, "leader_epoch": 2}],
            }
        ],
    }
    response = {
        "topics": [
            {
                "topic": "t",
                "partitions": [
                    {"error_code": 0, "partition": 0, "leader_epoch": 2, "end_offset": 42}
                ],
            }
        ]
    }
    for version in (3, 4):
        body = _round_trip(ApiKey.OFFSET_FOR_LEADER_EPOCH, version, request, response)
        assert body["topics"][0]["partitions"][0]["end_offset"] == 42


def test_kafka_python_reads_our_request_header() -> None:
    """Our request bytes are what a real client sends: ServerConnection parses them with
    the header kafka-python would write (checked on the flexible Fetch v12)."""
    client = ClientConnection()
    frame = client.send_request(ApiKey.FETCH, 12, {"replica_id": 3, "topics": []}, "follower-3")
    size = struct.unpack_from(">i", frame)[0]
    assert size == len(frame) - 4
    api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 4)
    assert (api_key, version, correlation_id) == (ApiKey.FETCH, 12, 0)
    assert frame[12:14] == struct.pack(">h", len("follower-3"))
    server = ServerConnection()
    server.receive_data(frame)
    request = server.next_request()
    assert isinstance(request, Request)
    assert request.body["replica_id"] == 3
    assert request.header == RequestHeader(ApiKey.FETCH, 12, 0, "follower-3", True)


def test_out_of_order_correlation_id_is_malformed() -> None:
    client = ClientConnection()
    client.send_request(ApiKey.METADATA, 1, {"topics": []})
    client.receive_data(struct.pack(">ii", 4 + 8, 7) + b"\0" * 8)
    with pytest.raises(MalformedFrameError):
        client.next_response()


def test_unsolicited_response_and_huge_frame_are_refused() -> None:
    client = ClientConnection()
    client.receive_data(struct.pack(">ii", 4, 0))
    with pytest.raises(MalformedFrameError):
        client.next_response()
    client = ClientConnection(max_response_bytes=1000)
    client.send_request(ApiKey.METADATA, 1, {"topics": []})
    client.receive_data(struct.pack(">i", 1001))
    with pytest.raises(FrameTooLargeError):
        client.next_response()
