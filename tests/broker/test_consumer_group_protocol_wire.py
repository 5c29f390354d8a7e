"""KIP-848 on the wire: ConsumerGroupHeartbeat / ConsumerGroupDescribe and the classic
APIs' answers for consumer groups, request by request, against a real broker.

Every expected answer here (codes and messages) was read from Apache Kafka 4.0 with
the same requests (``consumer_protocol_client.RawClient`` pointed at the reference);
where kafkette answers differently on purpose, docs/consumer-group-protocol.md says why.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker.consumer_protocol_client import RawClient

NONE = 0
UNKNOWN_MEMBER_ID = 25
UNSUPPORTED_VERSION = 35
INVALID_REQUEST = 42
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
FENCED_MEMBER_EPOCH = 110
UNRELEASED_INSTANCE_ID = 111
UNSUPPORTED_ASSIGNOR = 112
STALE_MEMBER_EPOCH = 113
INCONSISTENT_GROUP_PROTOCOL = 23


@pytest.fixture(scope="module")
def topic(broker) -> str:
    name = "cgp-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, 4, 1)])[name].result(20)
    return name


@pytest.fixture
def client(broker):
    with RawClient(broker.bootstrap) as c:
        yield c


def _member() -> str:
    return uuid.uuid4().hex[:22]


def _parts(response: dict) -> list[int]:
    assignment = response["assignment"]
    assert assignment is not None, response
    return sorted(p for t in assignment["topic_partitions"] for p in t["partitions"])


def _commit(client, group, topic, member, epoch, version=9) -> int:
    body = {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": topic, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}
    return client.request(8, version, body)["topics"][0]["partitions"][0]["error_code"]


def _fetch(client, group, member, epoch) -> int:
    body = {"groups": [{"group_id": group, "member_id": member, "member_epoch": epoch,
                        "topics": None}], "require_stable": False}
    return client.request(9, 9, body)["groups"][0]["error_code"]


def test_request_checks(client, topic) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    m = _member()
    r = client.heartbeat(group_id=group, member_id=m, member_epoch=0,
                         subscribed_topic_names=[topic], topic_partitions=[])
    assert (r["error_code"], r["error_message"]) == (
        INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    r = client.join(group, "", [topic])
    assert (r["error_code"], r["error_message"]) == (INVALID_REQUEST, "MemberId can't be empty.")
    r = client.join(group, m, [topic], server_assignor="nope")
    assert r["error_code"] == UNSUPPORTED_ASSIGNOR
    assert r["error_message"] == (
        "ServerAssignor nope is not supported. Supported assignors: uniform, range.")
    r = client.heartbeat(group_id=group, member_id=m, member_epoch=-3)
    assert (r["error_code"], r["error_message"]) == (INVALID_REQUEST, "MemberEpoch is invalid.")
    # Kafka 4.0: GROUP_ID_NOT_FOUND (fatal to clients); here membership does not survive a
    # restart, so a member with an epoch for a group unknown is told to rejoin.
    r = client.heartbeat(group_id=group, member_id=m, member_epoch=1)
    assert (r["error_code"], r["error_message"]) == (
        UNKNOWN_MEMBER_ID, f"Member {m} is not a member of group {group}.")
    assert r["member_id"] is None and r["member_epoch"] == 0


def test_join_revoke_then_assign(client, topic) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    m1, m2 = _member(), _member()
    r = client.join(group, m1, [topic])
    assert (r["error_code"], r["member_id"], r["member_epoch"]) == (NONE, m1, 1)
    assert r["heartbeat_interval_ms"] == 5000
    assert _parts(r) == [0, 1, 2, 3]
    owned1 = r["assignment"]["topic_partitions"]
    r = client.heartbeat(group_id=group, member_id=m1, member_epoch=1)
    assert (r["member_epoch"], r["assignment"]) == (1, None)  # nothing changed: no assignment
    r = client.heartbeat(group_id=group, member_id=m1, member_epoch=6)
    assert r["error_code"] == FENCED_MEMBER_EPOCH
    r = client.heartbeat(group_id=group, member_id=m2, member_epoch=1)
    assert (r["error_code"], r["error_message"]) == (
        UNKNOWN_MEMBER_ID, f"Member {m2} is not a member of group {group}.")
    # m2 joins: epoch 2; its partitions are still m1's, so it gets none yet.
    r = client.join(group, m2, [topic])
    assert (r["member_epoch"], _parts(r)) == (2, [])
    # m1 is asked to revoke two partitions first, at its old epoch ...
    r = client.heartbeat(group_id=group, member_id=m1, member_epoch=1, topic_partitions=owned1)
    assert r["member_epoch"] == 1
    kept = _parts(r)
    assert len(kept) == 2
    # ... and moves to epoch 2 once it no longer owns them.
    r = client.heartbeat(group_id=group, member_id=m1, member_epoch=1,
                         topic_partitions=r["assignment"]["topic_partitions"])
    assert (r["member_epoch"], r["assignment"]) == (2, None)
    r = client.heartbeat(group_id=group, member_id=m2, member_epoch=2)
    assert sorted(kept + _parts(r)) == [0, 1, 2, 3]

    described = client.request(69, 1, {"group_ids": [group], "include_authorized_operations":
                                       False})["groups"][0]
    assert (described["error_code"], described["group_state"], described["group_epoch"],
            described["assignment_epoch"], described["assignor_name"]) == (
        NONE, "Stable", 2, 2, "uniform")
    members = {m["member_id"]: m for m in described["members"]}
    assert set(members) == {m1, m2}
    assert all(m["member_type"] == 1 and m["client_host"] == "/127.0.0.1"
               and m["subscribed_topic_names"] == [topic] for m in members.values())
    assert {t["topic_name"] for t in members[m1]["assignment"]["topic_partitions"]} == {topic}

    # The classic APIs' view of a consumer group (Kafka 4.0's answers).
    v5 = client.request(15, 5, {"groups": [group], "include_authorized_operations": False})
    assert (v5["groups"][0]["error_code"], v5["groups"][0]["group_state"]) == (NONE, "Dead")
    v6 = client.request(15, 6, {"groups": [group, "no-such-group"],
                                "include_authorized_operations": False})["groups"]
    assert [(g["error_code"], g["error_message"], g["group_state"]) for g in v6] == [
        (GROUP_ID_NOT_FOUND, f"Group {group} is not a classic group.", "Dead"),
        (GROUP_ID_NOT_FOUND, "Group no-such-group not found.", "Dead"),
    ]
    listed = client.request(16, 5, {"states_filter": [], "types_filter": ["consumer"]})
    assert [(g["group_state"], g["protocol_type"], g["group_type"])
            for g in listed["groups"] if g["group_id"] == group] == [
        ("Stable", "consumer", "consumer")]
    listed = client.request(16, 5, {"states_filter": [], "types_filter": ["classic"]})
    assert group not in {g["group_id"] for g in listed["groups"]}

    # OffsetCommit / OffsetFetch check member and epoch (v9+).
    assert _commit(client, group, topic, m1, 2) == NONE
    assert _commit(client, group, topic, m1, 1) == STALE_MEMBER_EPOCH
    assert _commit(client, group, topic, m1, 3) == STALE_MEMBER_EPOCH
    assert _commit(client, group, topic, m1, 2, version=8) == UNSUPPORTED_VERSION
    assert _commit(client, group, topic, "zzz", 2) == UNKNOWN_MEMBER_ID
    assert _commit(client, group, topic, "", -1) == UNKNOWN_MEMBER_ID  # not empty
    assert _fetch(client, group, m1, 2) == NONE
    assert _fetch(client, group, m1, 1) == STALE_MEMBER_EPOCH
    assert _fetch(client, group, "zzz", 3) == UNKNOWN_MEMBER_ID
    assert _fetch(client, group, None, -1) == NONE

    deleted = client.request(42, 2, {"groups_names": [group]})["results"]
    assert deleted == [{"group_id": group, "error_code": NON_EMPTY_GROUP}]
    r = client.heartbeat(group_id=group, member_id=m1, member_epoch=-1)
    assert (r["error_code"], r["member_id"], r["member_epoch"]) == (NONE, m1, -1)
    r = client.heartbeat(group_id=group, member_id="nobody", member_epoch=-1)
    assert r["error_code"] == UNKNOWN_MEMBER_ID
    client.heartbeat(group_id=group, member_id=m2, member_epoch=-1)
    described = client.request(69, 1, {"group_ids": [group], "include_authorized_operations":
                                       False})["groups"][0]
    assert (described["group_state"], described["group_epoch"]) == ("Empty", 4)
    # An empty consumer group can be deleted; the offsets committed go with it.
    deleted = client.request(42, 2, {"groups_names": [group]})["results"]
    assert deleted == [{"group_id": group, "error_code": NONE}]


def test_static_membership(client, topic) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    s1, s2 = _member(), _member()
    r = client.join(group, s1, [topic], instance_id="i1")
    assert (r["member_epoch"], _parts(r)) == (1, [0, 1, 2, 3])
    r = client.join(group, s2, [topic], instance_id="i1")
    assert (r["error_code"], r["error_message"]) == (
        UNRELEASED_INSTANCE_ID,
        f"Static member {s2} with instance id i1 cannot join the group because the instance "
        f"id is owned by {s1} member.",
    )
    r = client.heartbeat(group_id=group, member_id=s1, member_epoch=-2)
    assert (r["error_code"], r["error_message"]) == (INVALID_REQUEST, "InstanceId can't be null.")
    r = client.heartbeat(group_id=group, member_id=s1, member_epoch=-2, instance_id="i1")
    assert (r["error_code"], r["member_epoch"]) == (NONE, -2)
    # The restarted instance takes the place, epoch and partitions: no rebalance.
    r = client.join(group, s2, [topic], instance_id="i1")
    assert (r["error_code"], r["member_id"], r["member_epoch"], _parts(r)) == (
        NONE, s2, 1, [0, 1, 2, 3])
    described = client.request(69, 1, {"group_ids": [group], "include_authorized_operations":
                                       False})["groups"][0]
    assert [(m["member_id"], m["instance_id"]) for m in described["members"]] == [(s2, "i1")]
    assert described["group_epoch"] == 1


def test_v0_names_the_member(client, topic) -> None:
    r = client.heartbeat(version=0, group_id="g-" + uuid.uuid4().hex[:6], member_id="",
                         member_epoch=0, rebalance_timeout_ms=30000,
                         subscribed_topic_names=[topic], topic_partitions=[])
    assert r["error_code"] == NONE and len(r["member_id"]) == 22  # Kafka's base64 Uuid


def test_classic_and_consumer_groups_share_ids(client, topic) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    join = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}
    assert client.request(11, 3, join)["error_code"] == NONE  # a classic member
    r = client.join(group, _member(), [topic])
    assert (r["error_code"], r["error_message"]) == (
        GROUP_ID_NOT_FOUND, f"Group {group} is not a consumer group.")
    # A classic member joins a consumer group only with a ConsumerProtocolSubscription as
    # its metadata (test_consumer_group_protocol.py runs real ones inside a consumer group).
    other = "g-" + uuid.uuid4().hex[:6]
    m = _member()
    assert client.join(other, m, [topic])["error_code"] == NONE
    assert client.request(11, 5, {**join, "group_id": other})["error_code"] == (
        INCONSISTENT_GROUP_PROTOCOL)
    described = client.request(69, 1, {"group_ids": [group], "include_authorized_operations":
                                       False})["groups"][0]
    assert (described["error_code"], described["error_message"]) == (
        GROUP_ID_NOT_FOUND, f"Group {group} is not a consumer group.")


def test_online_upgrade_of_an_empty_classic_group(client, topic) -> None:
    """Offsets committed by a classic (or simple) consumer stay when the group id is then
    used with the consumer protocol, and the group becomes a consumer group."""
    group = "g-" + uuid.uuid4().hex[:6]
    assert _commit(client, group, topic, "", -1) == NONE  # offsets-only classic group
    listed = client.request(16, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert [(g["group_type"], g["group_state"]) for g in listed if g["group_id"] == group] == [
        ("classic", "Empty")]
    m = _member()
    r = client.join(group, m, [topic])
    assert (r["error_code"], r["member_epoch"]) == (NONE, 1)
    listed = client.request(16, 5, {"states_filter": [], "types_filter": []})["groups"]
    assert [g["group_type"] for g in listed if g["group_id"] == group] == ["consumer"]
    fetched = client.request(9, 9, {"groups": [{"group_id": group, "member_id": m,
                                                "member_epoch": 1, "topics": None}],
                                    "require_stable": False})["groups"][0]
    assert [(p["partition_index"], p["committed_offset"])
            for t in fetched["topics"] for p in t["partitions"]] == [(0, 1)]
    # ... and back: once empty, a classic member may take it over again.
    client.heartbeat(group_id=group, member_id=m, member_epoch=-1)
    join = {"group_id": group, "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}]}
    assert client.request(11, 5, join)["error_code"] == 79  # MEMBER_ID_REQUIRED: accepted


def test_offset_delete_keeps_subscribed_topics(client, topic) -> None:
    group = "g-" + uuid.uuid4().hex[:6]
    m = _member()
    assert client.join(group, m, [topic])["member_epoch"] == 1
    assert _commit(client, group, topic, m, 1) == NONE
    body = {"group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}]}
    answer = client.request(47, 0, body)
    assert answer["error_code"] == NONE
    assert answer["topics"][0]["partitions"][0]["error_code"] == 86  # GROUP_SUBSCRIBED_TO_TOPIC
    client.heartbeat(group_id=group, member_id=m, member_epoch=-1)  # nobody subscribes now
    assert client.request(47, 0, body)["topics"][0]["partitions"][0]["error_code"] == NONE


FENCED_INSTANCE_ID = 82
INVALID_REGULAR_EXPRESSION = 128
INVALID_SESSION_TIMEOUT = 26


def _describe(client, group) -> dict:
    return client.request(69, 1, {"group_ids": [group], "include_authorized_operations":
                                  False})["groups"][0]


def test_static_member_resolved_through_its_instance_id(client, topic) -> None:
    """Kafka's throwIfStaticMemberIsUnknown / throwIfInstanceIdIsFenced: a heartbeat or
    a leave carrying an instance id is checked against the instance's member first."""
    group = "g-" + uuid.uuid4().hex[:6]
    s1, s2 = _member(), _member()
    r = client.join(group, s1, [topic], instance_id="i1")
    assert r["error_code"] == NONE
    r = client.heartbeat(group_id=group, member_id=s1, member_epoch=1, instance_id="nope")
    assert (r["error_code"], r["error_message"]) == (
        UNKNOWN_MEMBER_ID, "Instance id nope is unknown.")
    # i1 leaves for a restart, its replacement takes the instance id over ...
    r = client.heartbeat(group_id=group, member_id=s1, member_epoch=-2, instance_id="i1")
    assert r["error_code"] == NONE
    r = client.join(group, s2, [topic], instance_id="i1")
    assert (r["error_code"], r["member_id"]) == (NONE, s2)
    # ... and the zombie's heartbeats and leaves are fenced with Kafka's message.
    zombie = f"Static member {s1} with instance id i1 was fenced by member {s2}."
    for epoch in (1, -1, -2):
        r = client.heartbeat(group_id=group, member_id=s1, member_epoch=epoch, instance_id="i1")
        assert (r["error_code"], r["error_message"]) == (FENCED_INSTANCE_ID, zombie), epoch
    r = client.heartbeat(group_id=group, member_id=s2, member_epoch=-1, instance_id="nope")
    assert (r["error_code"], r["error_message"]) == (
        UNKNOWN_MEMBER_ID, "Instance id nope is unknown.")
    assert [m["member_id"] for m in _describe(client, group)["members"]] == [s2]


def test_first_heartbeat_without_a_subscription(client, topic) -> None:
    r = client.heartbeat(group_id="g-" + uuid.uuid4().hex[:6], member_id=_member(),
                         member_epoch=0, rebalance_timeout_ms=30000, topic_partitions=[])
    assert (r["error_code"], r["error_message"]) == (
        INVALID_REQUEST,
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
        "(re-)joining.",
    )


def test_regex_is_re2(client, broker) -> None:
    """RE2 as Kafka's RE2/J: a backtracking-prone pattern against long topic names is
    answered (Python's re would not return), a backreference is refused."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    # Python's re takes 2**60 steps to refuse the first name; the second one matches.
    longs = ["a" * 60 + "-" + uuid.uuid4().hex[:6], "aab" + uuid.uuid4().hex[:6]]
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in longs]).values():
        future.result(20)
    group = "g-" + uuid.uuid4().hex[:6]
    m = _member()
    r = client.join(group, m, [], subscribed_topic_regex="(a+)+b[0-9a-f]{6}")
    assert r["error_code"] == NONE
    for _ in range(3):
        r = client.heartbeat(group_id=group, member_id=m, member_epoch=r["member_epoch"])
        assert r["error_code"] == NONE
    described = _describe(client, group)["members"][0]
    assigned = {t["topic_name"] for t in described["target_assignment"]["topic_partitions"]}
    assert longs[1] in assigned and longs[0] not in assigned
    r = client.join(group, _member(), [], subscribed_topic_regex="(a)\\1")
    assert (r["error_code"], r["error_message"]) == (
        INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `(a)\\1` is not a valid regular expression: "
        "invalid escape sequence: \\1.",
    )


def test_invalid_classic_join_leaves_an_empty_consumer_group(client, topic) -> None:
    """A classic JoinGroup refused (bad session timeout) must not drop the empty
    consumer group it names."""
    group = "g-" + uuid.uuid4().hex[:6]
    m = _member()
    assert client.join(group, m, [topic])["error_code"] == NONE
    assert client.heartbeat(group_id=group, member_id=m, member_epoch=-1)["error_code"] == NONE
    join = {"group_id": group, "session_timeout_ms": 1, "rebalance_timeout_ms": 1000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b""}], "reason": None}
    assert client.request(11, 5, join)["error_code"] == INVALID_SESSION_TIMEOUT
    described = _describe(client, group)
    assert (described["error_code"], described["group_state"]) == (NONE, "Empty")
