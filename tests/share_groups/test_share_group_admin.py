"""Share groups administered over the wire: ListGroups (type share), DescribeGroups and
ConsumerGroupDescribe refusing them, ShareGroupDescribe, Describe/Alter/Delete
ShareGroupOffsets, DeleteGroups; and the share state surviving a restart on the same
data dir (``__share_group_state``): what was accepted is never delivered again, what
was acquired and not acknowledged is."""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType

from bench.harness.raw_wire import call
from kafkette import testing
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode
from tests.share_groups.share_helpers import (
    create_topic,
    nothing_more,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    values,
)

EXPLICIT = {"share.acknowledgement.mode": "explicit"}


def _accept_first(boot: str, group: str, topic: str, count: int) -> None:
    """One member accepts the first ``count`` records and leaves; the rest go back."""
    consumer = share_consumer(boot, group, topic, **EXPLICIT)
    got = poll_until(consumer, lambda got: len(got) >= count)
    for m in got:
        kind = AcknowledgeType.ACCEPT if m.offset() < count else AcknowledgeType.RELEASE
        consumer.acknowledge(m, kind)
    consumer.commit_sync()
    consumer.close()


def _describe_offsets(boot: str, group: str, topics=None, version: int = 1) -> dict:
    body = {"groups": [{"group_id": group, "topics": topics}]}
    return call(boot, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, body)["groups"][0]


def test_list_describe_and_the_start_offset(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, [f"v{i}" for i in range(10)])
    member = share_consumer(boot, group, topic)
    poll_until(member, lambda got: len(got) >= 10)
    member.commit_sync()

    listed = call(boot, ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["share"]})
    mine = [g for g in listed["groups"] if g["group_id"] == group]
    assert mine == [{"group_id": group, "protocol_type": "share", "group_state": "Stable",
                     "group_type": "share"}]
    described = call(boot, ApiKey.SHARE_GROUP_DESCRIBE, 1,
                     {"group_ids": [group], "include_authorized_operations": False})
    entry = described["groups"][0]
    assert (entry["error_code"], entry["group_state"], entry["assignor_name"]) == (
        0, "Stable", "simple")
    assert len(entry["members"]) == 1
    assert entry["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == topic
    classic = call(boot, ApiKey.DESCRIBE_GROUPS, 5,
                   {"groups": [group], "include_authorized_operations": False})
    assert classic["groups"][0]["group_state"] == "Dead"
    offsets = _describe_offsets(boot, group)
    (row,) = offsets["topics"][0]["partitions"]
    assert (row["start_offset"], row["lag"]) == (10, 0)
    member.close()


def test_alter_and_delete_share_group_offsets(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, [f"v{i}" for i in range(10)])
    _accept_first(boot, group, topic, 4)
    (row,) = _describe_offsets(boot, group, [{"topic_name": topic, "partitions": [0]}])[
        "topics"][0]["partitions"]
    assert (row["start_offset"], row["lag"]) == (4, 6)

    busy = share_consumer(boot, group, topic, **EXPLICIT)
    held = poll_until(busy, lambda got: len(got) >= 6)  # a member, holding v4..v9
    assert values(held) == [f"v{i}" for i in range(4, 10)]
    alter = {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 0, "start_offset": 8}]}]}
    refused = call(boot, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)
    assert refused["error_code"] == ErrorCode.NON_EMPTY_GROUP
    busy.close()  # records it took go back, counted
    deadline = time.monotonic() + 10
    while call(boot, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, alter)["error_code"] and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)  # the leave heartbeat lands
    later = share_consumer(boot, group, topic)
    assert values(poll_until(later, lambda got: len(got) >= 2)) == ["v8", "v9"]
    later.commit_sync()
    later.close()

    unknown = call(boot, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {"group_id": group, "topics": [
        {"topic_name": topic, "partitions": [{"partition_index": 5, "start_offset": 0}]}]})
    assert unknown["responses"][0]["partitions"][0]["error_code"] == (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

    deleted = call(boot, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0,
                   {"group_id": group, "topics": [{"topic_name": topic}]})
    assert deleted["error_code"] == 0 and deleted["responses"][0]["error_code"] == 0
    assert _describe_offsets(boot, group)["topics"] == []
    again = share_consumer(boot, group, topic)  # starts over: earliest
    assert len(poll_until(again, lambda got: len(got) >= 10)) == 10
    again.commit_sync()
    again.close()


def test_delete_groups_removes_a_share_group(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, ["a"])
    _accept_first(boot, group, topic, 1)
    answer = call(boot, ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
    assert answer["results"][0]["error_code"] == 0
    gone = _describe_offsets(boot, group)
    assert gone["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_share_state_survives_a_restart(tmp_path) -> None:
    data = tmp_path / "data"
    configs = {"group.share.min.record.lock.duration.ms": "1000"}
    with testing.broker(configs, data_dir=data) as running:
        boot = running.bootstrap
        create_topic(boot, "jobs")
        set_group_configs(boot, "g", share_auto_offset_reset="earliest")
        produce(boot, "jobs", [f"v{i}" for i in range(6)])
        consumer = share_consumer(boot, "g", "jobs", **EXPLICIT)
        got = poll_until(consumer, lambda got: len(got) >= 6)
        # accept v0, v2 and v5, reject v1, leave v3 and v4 acquired (never acknowledged)
        for m in got:
            kind = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.REJECT,
                    2: AcknowledgeType.ACCEPT, 5: AcknowledgeType.ACCEPT}.get(m.offset())
            if kind is not None:
                consumer.acknowledge(m, kind)
        consumer.commit_sync()
    with testing.broker(configs, data_dir=data) as running:
        boot = running.bootstrap
        listed = call(boot, ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
        assert [(g["group_id"], g["group_type"]) for g in listed["groups"]] == [("g", "share")]
        consumer = share_consumer(boot, "g", "jobs")
        again = poll_until(consumer, lambda got: len(got) >= 2)
        again += nothing_more(consumer, 1.0)
        assert values(again) == ["v3", "v4"]
        consumer.commit_sync()
        consumer.close()


def test_a_share_group_has_no_consumer_offsets(broker, names) -> None:
    """OffsetCommit, OffsetFetch and OffsetDelete on a share group's id: Kafka's
    GROUP_ID_NOT_FOUND ("not a consumer group")."""
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    member = share_consumer(boot, group, topic)
    nothing_more(member, 1.0)  # the group exists
    commit = call(boot, ApiKey.OFFSET_COMMIT, 8, {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "retention_time_ms": -1,
        "topics": [{"name": topic, "partitions": [{
            "partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
            "committed_metadata": None}]}],
    })
    assert commit["topics"][0]["partitions"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    fetched = call(boot, ApiKey.OFFSET_FETCH, 9, {
        "groups": [{"group_id": group, "member_id": None, "member_epoch": -1,
                    "topics": None}], "require_stable": False,
    })
    assert fetched["groups"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    deleted = call(boot, ApiKey.OFFSET_DELETE, 0, {
        "group_id": group, "topics": [{"name": topic, "partitions": [{"partition_index": 0}]}],
    })
    assert deleted["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    member.close()
