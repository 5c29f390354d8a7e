"""``kafkette groups``: the CLI as a subprocess against kafkette and the reference Kafka.

Lag figures are checked twice: against the offsets the test produced and committed, and
against what Kafka's own ``kafka-consumer-groups.sh --describe`` prints for the same group
on the same broker (where Java and the reference distribution are there).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.reference_kafka import reference_script_or_skip

DEADLINE_S = 30


def produce(bootstrap: str, topic: str, records: dict[int, list[int | None]]) -> None:
    """Records into each partition, one per timestamp given (None: the producer's clock)."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for partition, stamps in records.items():
        for i, stamp in enumerate(stamps):
            extra = {"timestamp": stamp} if stamp is not None else {}
            producer.produce(topic, value=b"v%d" % i, partition=partition, **extra)
    assert producer.flush(30) == 0


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for ``group`` without joining it (a fresh Kafka may say NOT_COORDINATOR)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                asynchronous=False)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()


def create_topic(cli, bootstrap: str, topic: str, partitions: int, *configs: str) -> None:
    """``kafkette topics create``; ``configs`` are ``KEY=VALUE`` topic configs."""
    flags = [flag for config in configs for flag in ("--config", config)]
    done = cli("topics", "create", topic, "--partitions", str(partitions), *flags, "-b",
               bootstrap)
    assert done.returncode == 0, done.stderr


def ok_json(done):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def active_member(request) -> Iterator[Callable[..., Consumer]]:
    """Start a subscribed consumer and wait (bounded) until it holds partitions."""
    consumers: list[Consumer] = []

    def start(bootstrap: str, group: str, topic: str, client_id: str) -> Consumer:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                             "client.id": client_id, "enable.auto.commit": False,
                             "auto.offset.reset": "earliest", "log_level": 0})
        consumers.append(consumer)
        consumer.subscribe([topic])
        deadline = time.monotonic() + DEADLINE_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the consumer got no assignment"
            consumer.poll(0.2)
        return consumer

    yield start
    for consumer in consumers:
        consumer.close()


def kafka_groups_tool(bootstrap: str, *args: str) -> str:
    """stdout of Kafka's kafka-consumer-groups.sh (skips without Java or the reference)."""
    script = reference_script_or_skip()
    done = subprocess.run([str(script), "bin", "kafka-consumer-groups.sh", "--bootstrap-server",
                           bootstrap, *args], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def kafka_describe_rows(output: str) -> set[tuple]:
    """(topic, partition, current, log end, lag, consumer id, host, client id) rows."""
    rows = set()
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 9 and fields[0] != "GROUP":
            rows.add(tuple(fields[1:]))
    return rows


def our_rows(doc: dict) -> set[tuple]:
    def text(value):
        return "-" if value is None else str(value)

    return {(r["topic"], text(r["partition"]), text(r["current_offset"]),
             text(r["log_end_offset"]), text(r["lag"]), text(r["consumer_id"]),
             text(r["host"]), text(r["client_id"])) for r in doc["offsets"]}


def test_describe_lag_of_an_inactive_group_matches_kafkas_tool(cli, any_bootstrap, unique_topic):
    topic, group = unique_topic("lag"), unique_topic("lag-group")
    create_topic(cli, any_bootstrap, topic, 3)
    produce(any_bootstrap, topic, {0: [None] * 5, 1: [None] * 3})
    commit(any_bootstrap, group, {(topic, 0): 2, (topic, 1): 3})

    [doc] = ok_json(cli("groups", "describe", group, "--json", "-b", any_bootstrap))
    assert doc["state"] == "EMPTY" and doc["members"] == []
    assert [(r["topic"], r["partition"], r["current_offset"], r["log_end_offset"], r["lag"],
             r["consumer_id"]) for r in doc["offsets"]] == [
        (topic, 0, 2, 5, 3, None), (topic, 1, 3, 3, 0, None)]

    plain = cli("groups", "describe", group, "-b", any_bootstrap)
    assert plain.returncode == 0
    assert plain.stderr == f"Consumer group '{group}' has no active members.\n"
    assert plain.stdout.splitlines()[1].split() == [group, topic, "0", "2", "5", "3",
                                                    "-", "-", "-"]
    kafkas = kafka_describe_rows(kafka_groups_tool(any_bootstrap, "--describe", "--group", group))
    assert our_rows(doc) == kafkas


def test_describe_active_member_rows_members_and_state(cli, kafkette_bootstrap, unique_topic,
                                                       active_member):
    topic, group = unique_topic("active"), unique_topic("active-group")
    b = ("-b", kafkette_bootstrap)
    create_topic(cli, kafkette_bootstrap, topic, 2)
    produce(kafkette_bootstrap, topic, {0: [None] * 4, 1: [None] * 2})
    consumer = active_member(kafkette_bootstrap, group, topic, "lag-client")
    consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    member_id = consumer.memberid()

    [doc] = ok_json(cli("groups", "describe", group, "--json", *b))
    assert doc["state"] == "STABLE"
    [member] = doc["members"]
    assert (member["consumer_id"], member["client_id"]) == (member_id, "lag-client")
    assert member["assignment"] == [{"topic": topic, "partition": 0},
                                    {"topic": topic, "partition": 1}]
    assert [(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"],
             r["consumer_id"], r["client_id"]) for r in doc["offsets"]] == [
        (0, 1, 4, 3, member_id, "lag-client"), (1, None, 2, None, member_id, "lag-client")]
    kafkas = kafka_groups_tool(kafkette_bootstrap, "--describe", "--group", group)
    assert our_rows(doc) == kafka_describe_rows(kafkas)

    members = cli("groups", "describe", group, "--members", *b).stdout.splitlines()
    assert members[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                  "ASSIGNMENT"]
    assert members[1].split() == [group, member_id, member["host"], "lag-client", "2",
                                  f"{topic}(0,1)"]
    [state] = ok_json(cli("groups", "describe", group, "--state", "--json", *b))
    assert (state["state"], len(state["members"]), state["assignment_strategy"]) == (
        "STABLE", 1, "range")
    assert "offsets" not in state
    listed = ok_json(cli("groups", "list", "--json", *b))
    assert {"group": group, "state": "STABLE", "protocol_type": "consumer",
            "type": "CLASSIC"} in listed

    # A group with members keeps its offsets: reset and delete refuse, as in Kafka.
    refused = cli("groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                  "--execute", *b)
    assert refused.returncode == 1
    assert refused.stderr == (f"kafkette: group '{group}' is STABLE with 1 member(s): offsets "
                              "can only be reset while the group is inactive; stop its "
                              "consumers and retry\n")
    kept = cli("groups", "delete", group, *b)
    assert kept.returncode == 1 and "still has members" in kept.stderr


def test_reset_offsets_dry_run_then_execute(cli, any_bootstrap, unique_topic):
    topic, group = unique_topic("reset"), unique_topic("reset-group")
    b = ("-b", any_bootstrap)
    create_topic(cli, any_bootstrap, topic, 2)
    produce(any_bootstrap, topic, {0: [None] * 6, 1: [None] * 4})
    commit(any_bootstrap, group, {(topic, 0): 5, (topic, 1): 1})

    planned = cli("groups", "reset-offsets", group, "--topic", topic, "--shift-by", "-2", *b)
    assert planned.returncode == 0, planned.stderr
    assert [line.split() for line in planned.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], [group, topic, "0", "3"],
        [group, topic, "1", "0"]]  # 1 - 2 is kept at the log start
    assert "add --execute" in planned.stderr
    [unchanged] = ok_json(cli("groups", "describe", group, "--json", *b))
    assert [r["current_offset"] for r in unchanged["offsets"]] == [5, 1]

    done = ok_json(cli("groups", "reset-offsets", group, "--topic", f"{topic}:1",
                       "--to-offset", "99", "--execute", "--json", *b))
    assert done == {"group": group, "executed": True, "offsets": [
        {"group": group, "topic": topic, "partition": 1, "current_offset": 1,
         "new_offset": 4}]}  # 99 is kept at the log end
    [after] = ok_json(cli("groups", "describe", group, "--json", *b))
    assert [(r["current_offset"], r["lag"]) for r in after["offsets"]] == [(5, 1), (4, 0)]


def test_reset_offsets_scenarios(cli, kafkette_bootstrap, unique_topic):
    topic, group = unique_topic("scen"), unique_topic("scen-group")
    b = ("-b", kafkette_bootstrap)
    # Records from 2001: a topic without time retention, or the broker's next retention
    # check (every 5 minutes) deletes them mid-test.
    create_topic(cli, kafkette_bootstrap, topic, 2, "retention.ms=-1")
    now = int(time.time() * 1000)
    old = 1_000_000_000_000  # 2001-09-09T01:46:40Z
    produce(kafkette_bootstrap, topic, {0: [old + i * 1000 for i in range(5)],
                                        1: [now - 7_200_000, now - 7_200_000, now]})
    commit(kafkette_bootstrap, group, {(topic, 0): 3})

    def plan(*args: str) -> list[int]:
        doc = ok_json(cli("groups", "reset-offsets", group, *args, "--json", *b))
        assert doc["executed"] is False
        return [row["new_offset"] for row in doc["offsets"]]

    scope = ("--topic", topic)
    assert plan(*scope, "--to-earliest") == [0, 0]
    assert plan(*scope, "--to-latest") == [5, 3]
    assert plan(*scope, "--to-current") == [3, 3]  # no committed offset: the log end
    assert plan(*scope, "--to-offset", "-4") == [0, 0]
    assert plan(*scope, "--to-datetime", "2001-09-09T01:46:42Z") == [2, 0]
    assert plan(*scope, "--to-datetime", "2001-09-09T01:46:42.500+00:00") == [3, 0]
    assert plan(*scope, "--by-duration", "PT1H") == [5, 2]  # nothing that recent in 0: the end
    assert plan("--all-topics", "--shift-by", "1") == [4]

    no_commit = cli("groups", "reset-offsets", group, *scope, "--shift-by", "1", *b)
    assert no_commit.returncode == 1
    assert f"cannot shift {topic}-1" in no_commit.stderr
    bad = cli("groups", "reset-offsets", group, *scope, "--by-duration", "1h", *b)
    assert bad.returncode == 2 and "not an ISO-8601 duration" in bad.stderr
    none = cli("groups", "reset-offsets", group, "--topic", "no-such-topic", "--to-latest", *b)
    assert none.returncode == 1 and "topic 'no-such-topic' does not exist" in none.stderr
    needs_one = cli("groups", "reset-offsets", group, *scope, *b)
    assert needs_one.returncode == 2 and "one of the arguments" in needs_one.stderr

    # A group that never existed gets offsets (Kafka allows a reset to create them).
    fresh = unique_topic("fresh-group")
    assert cli("groups", "reset-offsets", fresh, *scope, "--to-latest", "--execute",
               *b).returncode == 0
    [doc] = ok_json(cli("groups", "describe", fresh, "--json", *b))
    assert [(r["partition"], r["current_offset"], r["lag"]) for r in doc["offsets"]] == [
        (0, 5, 0), (1, 3, 0)]


def test_delete_groups_and_missing_groups(cli, any_bootstrap, unique_topic):
    topic, first, second = unique_topic("del"), unique_topic("del-a"), unique_topic("del-b")
    b = ("-b", any_bootstrap)
    create_topic(cli, any_bootstrap, topic, 1)
    commit(any_bootstrap, first, {(topic, 0): 0})
    commit(any_bootstrap, second, {(topic, 0): 0})

    gone = cli("groups", "delete", first, second, *b)
    assert gone.returncode == 0, gone.stderr
    assert gone.stdout == f"Deleted consumer group {first}.\nDeleted consumer group {second}.\n"
    listed = [g["group"] for g in ok_json(cli("groups", "list", "--json", *b))]
    assert first not in listed and second not in listed

    missing = cli("groups", "describe", first, *b)
    assert missing.returncode == 1
    assert missing.stderr == (f"kafkette: consumer group '{first}' does not exist: "
                              "see `kafkette groups list`\n")
    again = cli("groups", "delete", first, *b)
    assert again.returncode == 1 and f"consumer group '{first}' does not exist" in again.stderr


def test_help_has_examples_and_no_broker_is_exit_3(cli):
    helped = cli("groups", "reset-offsets", "--help")
    assert helped.returncode == 0
    assert "examples:\n  kafkette groups reset-offsets my-app --topic clicks --to-earliest" in (
        helped.stdout)
    down = cli("groups", "list", "-b", "127.0.0.1:1", timeout=30)
    assert down.returncode == 3 and down.stderr.startswith("kafkette: no broker answered")


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int | None]:
    """The group's committed offset of each partition (None where it has none)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                   timeout=DEADLINE_S)
        return [tp.offset if tp.offset >= 0 else None for tp in found]
    finally:
        consumer.close()


def test_delete_offsets_matches_kafkas_tool(cli, any_bootstrap, unique_topic, active_member):
    topic, other, group = unique_topic("deloff"), unique_topic("deloff-o"), unique_topic("dg")
    b = ("-b", any_bootstrap)
    create_topic(cli, any_bootstrap, topic, 3)
    create_topic(cli, any_bootstrap, other, 1)
    produce(any_bootstrap, topic, {0: [None] * 4, 1: [None] * 4, 2: [None] * 4})
    commit(any_bootstrap, group, {(topic, 0): 1, (topic, 1): 2, (topic, 2): 3, (other, 0): 0})

    done = cli("groups", "delete-offsets", group, "--topic", f"{topic}:0", *b)
    assert done.returncode == 0, done.stderr
    assert [line.split() for line in done.stdout.splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "STATUS"], [group, topic, "0", "Successful"]]
    assert committed(any_bootstrap, group, topic, 3) == [None, 2, 3]

    # Kafka's own tool on the same broker and group: the same answer, the same effect.
    kafkas = kafka_groups_tool(any_bootstrap, "--delete-offsets", "--group", group, "--topic",
                               f"{topic}:1")
    assert re.search(rf"^{re.escape(topic)}\s+1\s+Successful\s*$", kafkas, re.M), kafkas
    assert committed(any_bootstrap, group, topic, 3) == [None, None, 3]

    # A whole topic; the other topic's offset stays.
    rows = ok_json(cli("groups", "delete-offsets", group, "--topic", topic, "--json", *b))
    assert rows == [{"group": group, "topic": topic, "partition": p, "error": None}
                    for p in range(3)]
    assert committed(any_bootstrap, group, topic, 3) == [None, None, None]
    assert committed(any_bootstrap, group, other, 1) == [0]

    # An active group subscribed to the topic: the broker's GROUP_SUBSCRIBED_TO_TOPIC, exit 1.
    consumer = active_member(any_bootstrap, group, other, "deloff-client")
    consumer.commit(offsets=[TopicPartition(other, 0, 1)], asynchronous=False)
    refused = cli("groups", "delete-offsets", group, "--topic", other, *b)
    assert refused.returncode == 1
    assert refused.stdout.splitlines()[1].split() == [group, other, "0",
                                                      "GROUP_SUBSCRIBED_TO_TOPIC"]
    assert refused.stderr == (f"kafkette: offsets of group '{group}' were not deleted for "
                              f"{other}-0 (GROUP_SUBSCRIBED_TO_TOPIC): the group's consumers "
                              "are subscribed to the topic: stop them (or unsubscribe them "
                              "from it) first\n")
    assert committed(any_bootstrap, group, other, 1) == [1]

    missing = cli("groups", "delete-offsets", unique_topic("nobody"), "--topic", topic, *b)
    assert missing.returncode == 1 and missing.stdout == ""
    assert "does not exist: see `kafkette groups list`" in missing.stderr
    no_topic = cli("groups", "delete-offsets", group, "--topic", "no-such-topic-here", *b)
    assert no_topic.returncode == 1
    assert no_topic.stderr == ("kafkette: topic 'no-such-topic-here' does not exist: see "
                               "`kafkette topics list`, or create it with `kafkette topics "
                               "create no-such-topic-here`\n")
