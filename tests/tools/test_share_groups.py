"""``kafkette groups list|describe`` on share groups (KIP-932): the CLI as a subprocess against
a kafkette whose share group has a real confluent-kafka ShareConsumer holding records.

The figures are checked against what the test did (records produced, accepted and still held:
the start offset moves past the accepted ones, the lag counts the rest) and the members
against the broker's own ShareGroupDescribe answer. Kafka 4.0, the reference broker, serves
no share groups, so these run on kafkette only; the consumer-group tests keep checking that
the lines they print did not change.
"""

from __future__ import annotations

import json
import time

from confluent_kafka import AcknowledgeType

from bench.harness.raw_wire import call
from kafkette.wire.apis import ApiKey
from tests.share_groups.share_helpers import (
    create_topic,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
)
from tests.tools.test_groups import commit

DEADLINE_S = 30


def ok(done):
    assert done.returncode == 0, done.stderr
    return done


def described_members(bootstrap: str, group: str) -> dict[str, dict]:
    """The broker's ShareGroupDescribe members, by member id."""
    answer = call(bootstrap, ApiKey.SHARE_GROUP_DESCRIBE, 1,
                  {"group_ids": [group], "include_authorized_operations": False})
    return {m["member_id"]: m for m in answer["groups"][0]["members"]}


def holding_member(bootstrap: str, group: str, topic: str):
    """A ShareConsumer (explicit acknowledgement) that took all 14 records of ``topic``,
    accepted offsets 0-2 of partition 0 and holds the other 11 under their locks."""
    create_topic(bootstrap, topic, 2)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    produce(bootstrap, topic, [f"a{i}" for i in range(10)], partition=0)
    produce(bootstrap, topic, [f"b{i}" for i in range(4)], partition=1)
    consumer = share_consumer(bootstrap, group, topic, **{
        "share.acknowledgement.mode": "explicit", "client.id": "share-tool-client"})
    got = poll_until(consumer, lambda got: len(got) >= 14, timeout=DEADLINE_S)
    assert len(got) == 14
    for message in got:
        if message.partition() == 0 and message.offset() < 3:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
    consumer.commit_sync()
    return consumer


def test_list_and_describe_a_share_group_whose_member_holds_records(
    cli, kafkette_bootstrap, unique_topic
):
    b = ("-b", kafkette_bootstrap)
    topic, group = unique_topic("share"), unique_topic("share-group")
    consumer_group = unique_topic("plain-group")
    consumer = holding_member(kafkette_bootstrap, group, topic)
    commit(kafkette_bootstrap, consumer_group, {(topic, 0): 1})
    try:
        [(member_id, member)] = described_members(kafkette_bootstrap, group).items()
        host = member["client_host"]

        # list: the share group beside the consumer group, each with its own type.
        listed = ok(cli("groups", "list", *b)).stdout.splitlines()
        assert listed[0].split() == ["GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"]
        rows = {line.split()[0]: line.split() for line in listed[1:]}
        assert rows[group] == [group, "STABLE", "share", "SHARE"]
        assert rows[consumer_group] == [consumer_group, "EMPTY", "-", "CLASSIC"]
        assert [line.split()[0] for line in listed[1:]] == sorted(rows)
        as_json = json.loads(ok(cli("groups", "list", "--json", *b)).stdout)
        assert {"group": group, "state": "STABLE", "protocol_type": "share",
                "type": "SHARE"} in as_json

        # describe: a row per partition and member; 3 of partition 0's 10 records accepted,
        # the other 7 and partition 1's 4 held, so still to deliver.
        lines = ok(cli("groups", "describe", group, *b)).stdout.splitlines()
        assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG",
                                    "CONSUMER-ID", "HOST", "CLIENT-ID"]
        assert [line.split() for line in lines[1:]] == [
            [group, topic, "0", "3", "7", member_id, host, "share-tool-client"],
            [group, topic, "1", "0", "4", member_id, host, "share-tool-client"],
        ]
        [doc] = json.loads(ok(cli("groups", "describe", group, "--json", *b)).stdout)
        assert (doc["type"], doc["state"], doc["assignment_strategy"]) == (
            "SHARE", "STABLE", "simple")
        assert doc["members"] == [{
            "consumer_id": member_id, "host": host, "client_id": "share-tool-client",
            "assignment": [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}],
        }]
        assert [(r["partition"], r["start_offset"], r["lag"]) for r in doc["offsets"]] == [
            (0, 3, 7), (1, 0, 4)]

        members = ok(cli("groups", "describe", group, "--members", *b)).stdout.splitlines()
        assert members[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID",
                                      "#PARTITIONS", "ASSIGNMENT"]
        assert members[1].split() == [group, member_id, host, "share-tool-client", "2",
                                      f"{topic}(0,1)"]
        state = ok(cli("groups", "describe", group, "--state", *b)).stdout.splitlines()
        assert state[0].split() == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY",
                                    "STATE", "#MEMBERS"]
        fields = state[1].split()
        assert (fields[0], fields[2], fields[3:]) == (group, "(1)", ["simple", "STABLE", "1"])

        # A consumer group and a share group in one describe: each in its own shape.
        both = json.loads(ok(cli("groups", "describe", consumer_group, group, "--json",
                                 *b)).stdout)
        assert [d["group"] for d in both] == [consumer_group, group]
        assert "type" not in both[0] and both[0]["offsets"][0]["current_offset"] == 1
        assert both[1]["offsets"][0]["start_offset"] == 3
    finally:
        consumer.close()

    # Once the member has left, its records are back and the rows have no consumer.
    deadline = time.monotonic() + DEADLINE_S
    while True:
        done = ok(cli("groups", "describe", group, *b))
        if "has no active members" in done.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert done.stderr == f"Share group '{group}' has no active members.\n"
    assert [line.split() for line in done.stdout.splitlines()[1:]] == [
        [group, topic, "0", "3", "7", "-", "-", "-"],
        [group, topic, "1", "0", "4", "-", "-", "-"],
    ]
    listed = json.loads(ok(cli("groups", "list", "--json", *b)).stdout)
    assert {"group": group, "state": "EMPTY", "protocol_type": "share",
            "type": "SHARE"} in listed

    # reset-offsets moves committed offsets, which a share group has none of: refused, and
    # nothing is written beside it. delete (DeleteGroups) takes any empty group.
    refused = cli("groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                  "--execute", *b)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr == (f"kafkette: group '{group}' is a share group, which has start "
                              "offsets, not committed offsets: this command resets consumer "
                              f"groups only (see `kafkette groups describe {group}`)\n")
    assert ok(cli("groups", "delete", group, *b)).stdout == f"Deleted consumer group {group}.\n"
    assert group not in {g["group"] for g in json.loads(ok(cli("groups", "list", "--json",
                                                               *b)).stdout)}


def test_a_missing_group_is_still_exit_1(cli, kafkette_bootstrap):
    """Neither a consumer nor a share group: the line it always was."""
    missing = cli("groups", "describe", "no-such-group-anywhere", "-b", kafkette_bootstrap)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == ("kafkette: consumer group 'no-such-group-anywhere' does not "
                              "exist: see `kafkette groups list`\n")
