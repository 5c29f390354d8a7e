"""Answers that once differed from Kafka 4.0's, pinned to what Kafka 4.0.0 answers.

Every expected value here was measured against the reference Apache Kafka 4.0.0
(single-node KRaft, ``kafka-ref``) with the same raw requests; docs/compatibility.md
("Answers measured against Kafka 4.0") lists them. Requests are encoded by our codec
(``ClientConnection``) on plain sockets, so each test sees exactly the wire answer.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.raw_wire import WireConnection
from kafkette.wire.apis import ApiKey

NONE = 0
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
UNSUPPORTED_VERSION = 35
INVALID_CONFIG = 40
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
RESOURCE_BROKER = 4
# JoinGroup's consumer-protocol metadata: version 1, no topics, no user data, no owned
# partitions (the broker keeps it opaque).
PROTOCOLS = [{"name": "range", "metadata": b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"}]


class Raw(WireConnection):
    """One connection speaking our codec; ``closed`` tells whether the broker hung up."""

    def __init__(self, bootstrap: str, timeout: float = 20.0) -> None:
        super().__init__(bootstrap, "kafka4-answers", timeout)

    def closed_after(self, frame: bytes) -> bool:
        """Send a hand-made frame; True if the broker closes without answering."""
        self.sock.sendall(frame)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True


@pytest.fixture
def raw(broker) -> Iterator:
    opened: list[Raw] = []

    def connect() -> Raw:
        client = Raw(broker.bootstrap)
        opened.append(client)
        return client

    yield connect
    for client in opened:
        client.close()


def _create_topic(client: Raw, partitions: int = 1) -> str:
    name = f"k4-{uuid.uuid4().hex[:10]}"
    topic = {"name": name, "num_partitions": partitions, "replication_factor": 1}
    body = {"topics": [topic], "timeout_ms": 10_000, "validate_only": False}
    assert client.request(ApiKey.CREATE_TOPICS, 7, body)["topics"][0]["error_code"] == NONE
    return name


def _join(client: Raw, group: str, member_id: str = "", version: int = 9) -> dict:
    body = {
        "group_id": group,
        "session_timeout_ms": 30_000,
        "rebalance_timeout_ms": 30_000,
        "member_id": member_id,
        "group_instance_id": None,  # static membership disabled
        "protocol_type": "consumer",
        "protocols": PROTOCOLS,
        "reason": None,
    }
    answer = client.request(ApiKey.JOIN_GROUP, version, body)
    if answer["error_code"] == MEMBER_ID_REQUIRED:  # KIP-394, v4+
        body["member_id"] = answer["member_id"]
        answer = client.request(ApiKey.JOIN_GROUP, version, body)
    return answer


def _sync(client: Raw, group: str, member_id: str, generation: int) -> dict:
    body = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [{"member_id": member_id, "assignment": b"a"}],
    }
    return client.request(ApiKey.SYNC_GROUP, 5, body)


def _commit(client: Raw, version: int, group: str, generation: int, member: str, topic: str) -> int:
    partition = {
        "partition_index": 0,
        "committed_offset": 1,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [partition]}],
    }
    answer = client.request(ApiKey.OFFSET_COMMIT, version, body)
    return answer["topics"][0]["partitions"][0]["error_code"]


def _heartbeat(client: Raw, version: int, group: str, generation: int, member: str) -> int:
    body = {"group_id": group, "generation_id": generation, "member_id": member,
            "group_instance_id": None}
    return client.request(ApiKey.HEARTBEAT, version, body)["error_code"]


# --- version ranges -------------------------------------------------------------------


def test_join_group_and_produce_ranges_are_kafka_4(raw) -> None:
    client = raw()
    body = {"client_software_name": "t", "client_software_version": "1"}
    answer = client.request(ApiKey.API_VERSIONS, 3, body)
    ranges = {e["api_key"]: (e["min_version"], e["max_version"]) for e in answer["api_keys"]}
    assert ranges[ApiKey.JOIN_GROUP] == (2, 9)
    assert ranges[ApiKey.PRODUCE] == (0, 13)  # 0-2 for librdkafka (KAFKA-18659); 13 is Kafka 4.1's


def test_join_group_below_2_is_not_served(raw) -> None:
    """Kafka 4.0 closes the connection; kafkette answers UNSUPPORTED_VERSION where the
    response has a top-level error code (docs/protocol-coverage.md, answers that differ)."""
    for version in (0, 1):
        client = raw()
        body = {"group_id": "g", "session_timeout_ms": 30_000, "member_id": "",
                "protocol_type": "consumer", "protocols": PROTOCOLS}
        try:
            error = client.request(ApiKey.JOIN_GROUP, version, body)["error_code"]
        except ConnectionError:
            continue  # closed, as Kafka 4.0
        assert error == UNSUPPORTED_VERSION


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_v0_to_v2_close_the_connection_as_kafka_4(raw, version: int) -> None:
    """Kafka 4.0 advertises Produce 0 but closes the connection on 0-2 (removed, KIP-896)."""
    topic = _create_topic(raw())
    # v0-2 body: acks int16, timeout int32, one topic with one empty partition.
    body = struct.pack(">hi", 1, 1000) + struct.pack(">i", 1)
    body += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">iii", 1, 0, 0)
    header = struct.pack(">hhih", ApiKey.PRODUCE, version, 7, 1) + b"p"
    frame = struct.pack(">i", len(header) + len(body)) + header + body
    assert raw().closed_after(frame)
    # ... and the broker keeps serving.
    probe = raw()
    assert probe.request(ApiKey.METADATA, 12, {"topics": None})["brokers"]


# --- OffsetCommit and Heartbeat from members the coordinator does not know -------------


def test_commit_and_heartbeat_without_a_group(raw) -> None:
    client = raw()
    topic = _create_topic(client)
    for version in range(2, 10):
        group = f"k4-none-{uuid.uuid4().hex[:8]}"
        # No generation: an admin/simple commit, accepted whatever member id it names.
        assert _commit(client, version, group, -1, "stranger", topic) == NONE
        group = f"k4-none-{uuid.uuid4().hex[:8]}"
        expected = GROUP_ID_NOT_FOUND if version >= 9 else ILLEGAL_GENERATION
        assert _commit(client, version, group, 1, "stranger", topic) == expected, version
    for version in range(5):
        assert _heartbeat(client, version, f"k4-none-{uuid.uuid4().hex[:8]}", 1, "x") == (
            UNKNOWN_MEMBER_ID
        )


def test_commit_and_heartbeat_from_unknown_members_of_a_stable_group(raw) -> None:
    client = raw()
    topic = _create_topic(client)
    group = f"k4-stable-{uuid.uuid4().hex[:8]}"
    joined = _join(client, group)
    member, generation = joined["member_id"], joined["generation_id"]
    assert _sync(client, group, member, generation)["error_code"] == NONE
    for version in range(2, 10):
        for gen in (generation, generation + 5, -1):
            assert _commit(client, version, group, gen, "stranger", topic) == UNKNOWN_MEMBER_ID
        assert _commit(client, version, group, generation, "", topic) == UNKNOWN_MEMBER_ID
        assert _commit(client, version, group, generation + 5, member, topic) == (
            ILLEGAL_GENERATION
        )
        assert _commit(client, version, group, generation, member, topic) == NONE
    for version in range(5):
        assert _heartbeat(client, version, group, generation, "stranger") == UNKNOWN_MEMBER_ID
        assert _heartbeat(client, version, group, generation + 5, "stranger") == UNKNOWN_MEMBER_ID
        assert _heartbeat(client, version, group, generation, "") == UNKNOWN_MEMBER_ID
        assert _heartbeat(client, version, group, generation + 5, member) == ILLEGAL_GENERATION


def test_commit_to_an_emptied_group(raw) -> None:
    client = raw()
    topic = _create_topic(client)
    group = f"k4-empty-{uuid.uuid4().hex[:8]}"
    joined = _join(client, group)
    member = joined["member_id"]
    assert _sync(client, group, member, joined["generation_id"])["error_code"] == NONE
    leave = {"group_id": group, "members": [{"member_id": member, "group_instance_id": None}]}
    assert client.request(ApiKey.LEAVE_GROUP, 5, leave)["error_code"] == NONE
    for version in (2, 8, 9):
        assert _commit(client, version, group, -1, "stranger", topic) == NONE
        assert _commit(client, version, group, -1, "", topic) == NONE
        assert _commit(client, version, group, 1, "stranger", topic) == UNKNOWN_MEMBER_ID
        assert _commit(client, version, group, 1, member, topic) == UNKNOWN_MEMBER_ID
    assert _heartbeat(client, 4, group, 1, member) == UNKNOWN_MEMBER_ID


def test_sync_group_5_without_protocol_type_or_name(raw) -> None:
    """Mandatory from SyncGroup 5: INCONSISTENT_GROUP_PROTOCOL, even for an empty group id."""
    for protocol_type, protocol_name in ((None, "range"), ("consumer", None), (None, None)):
        body = {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None,
                "protocol_type": protocol_type, "protocol_name": protocol_name,
                "assignments": []}
        answer = raw().request(ApiKey.SYNC_GROUP, 5, body)
        assert answer["error_code"] == INCONSISTENT_GROUP_PROTOCOL


# --- a second member joins (static membership disabled) ---------------------------------


@pytest.mark.parametrize("version", [2, 9])
def test_second_member_join_rebalances_as_kafka_4(raw, version: int) -> None:
    import threading

    first, second, beat = raw(), raw(), raw()
    group = f"k4-two-{uuid.uuid4().hex[:8]}"
    joined = _join(first, group, version=version)
    member_a, generation = joined["member_id"], joined["generation_id"]
    assert (joined["leader"], len(joined["members"])) == (member_a, 1)
    assert _sync(first, group, member_a, generation)["error_code"] == NONE

    answers: dict[str, dict] = {}
    joiner = threading.Thread(target=lambda: answers.setdefault("b", _join(second, group,
                                                                          version=version)))
    joiner.start()
    # B's join waits for A: A's heartbeat is told to rejoin, A's rejoin completes both.
    deadline_rounds = 100
    while _heartbeat(beat, 4, group, generation, member_a) != REBALANCE_IN_PROGRESS:
        deadline_rounds -= 1
        assert deadline_rounds > 0, "no rebalance after the second member's join"
    assert "b" not in answers
    rejoined = _join(first, group, member_a, version=version)
    joiner.join(30)
    b = answers["b"]
    assert (rejoined["error_code"], b["error_code"]) == (NONE, NONE)
    assert rejoined["generation_id"] == b["generation_id"] == generation + 1
    # The first member stays leader and alone gets the member list (both members).
    assert rejoined["leader"] == b["leader"] == member_a
    assert len(rejoined["members"]) == 2 and len(b["members"]) == 0


# --- configs -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 7])
@pytest.mark.parametrize("validate_only", [True, False])
def test_message_format_version_is_an_unknown_topic_config(
    raw, version: int, validate_only: bool
) -> None:
    """Kafka 4.0 dropped message.format.version (KIP-724): INVALID_CONFIG, its message."""
    config = {"name": "message.format.version", "value": "3.0"}
    topic = {"name": f"k4-mfv-{uuid.uuid4().hex[:8]}", "num_partitions": 1,
             "replication_factor": 1, "configs": [config]}
    body = {"topics": [topic], "timeout_ms": 10_000, "validate_only": validate_only}
    answer = raw().request(ApiKey.CREATE_TOPICS, version, body)["topics"][0]
    assert answer["error_code"] == INVALID_CONFIG
    assert answer["error_message"] == "Unknown topic config name: message.format.version"


def _broker_configs(bootstrap: str, names: list[str]) -> dict[str, dict]:
    client = Raw(bootstrap)
    try:
        resource = {"resource_type": RESOURCE_BROKER, "resource_name": "",
                    "configuration_keys": names}
        body = {"resources": [resource], "include_synonyms": True,
                "include_documentation": False}
        result = client.request(ApiKey.DESCRIBE_CONFIGS, 4, body)["results"][0]
    finally:
        client.close()
    assert result["error_code"] == NONE
    return {entry["name"]: entry for entry in result["configs"]}


def _synonyms(entry: dict) -> list[tuple[str, str | None, int]]:
    return [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]]


def test_configs_given_at_start_are_static_broker_configs(broker_process, tmp_path: Path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("log.retention.hours=48\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    process = broker_process(
        data_dir, "--config", "num.partitions=2", "--config-file", str(properties)
    )
    names = ["listeners", "advertised.listeners", "log.dirs", "num.partitions",
             "log.retention.hours", "auto.create.topics.enable"]
    entries = _broker_configs(process.bootstrap, names)

    listeners = entries["listeners"]  # --listen 127.0.0.1:0, as configured
    assert (listeners["value"], listeners["config_source"]) == (
        "PLAINTEXT://127.0.0.1:0", STATIC_BROKER_CONFIG
    )
    advertised = entries["advertised.listeners"]  # what clients are told: the bound port
    assert advertised["value"] == f"PLAINTEXT://{process.bootstrap}"
    assert advertised["config_source"] == STATIC_BROKER_CONFIG
    assert entries["log.dirs"]["value"] == str(data_dir)
    assert entries["log.dirs"]["config_source"] == STATIC_BROKER_CONFIG
    # Kafka's synonyms for a static config: the static value, then the default.
    assert _synonyms(entries["num.partitions"]) == [
        ("num.partitions", "2", STATIC_BROKER_CONFIG), ("num.partitions", "1", DEFAULT_CONFIG)
    ]
    assert _synonyms(entries["log.retention.hours"]) == [
        ("log.retention.hours", "48", STATIC_BROKER_CONFIG),
        ("log.retention.hours", "168", DEFAULT_CONFIG),
    ]
    untouched = entries["auto.create.topics.enable"]
    assert untouched["config_source"] == DEFAULT_CONFIG
    assert _synonyms(untouched) == [("auto.create.topics.enable", "true", DEFAULT_CONFIG)]


def test_advertised_listener_flag_is_static(broker_process, tmp_path: Path, free_port: int) -> None:
    process = broker_process(
        tmp_path / "data",
        "--listen", f"127.0.0.1:{free_port}",
        "--advertised-listener", f"localhost:{free_port}",
    )
    entries = _broker_configs(process.bootstrap, ["listeners", "advertised.listeners"])
    assert _synonyms(entries["advertised.listeners"]) == [
        ("advertised.listeners", f"PLAINTEXT://localhost:{free_port}", STATIC_BROKER_CONFIG)
    ]
    assert entries["listeners"]["value"] == f"PLAINTEXT://127.0.0.1:{free_port}"
