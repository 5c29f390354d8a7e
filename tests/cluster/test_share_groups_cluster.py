"""Share groups on a three-broker cluster: the share coordinator moves with leadership.

A share partition's state lives with its share coordinator, the leader of the
``__share_group_state`` partition its key ("group:topicId:partition") hashes to; the data
partition's leader reads it when the share partition starts there and writes every
acknowledgement to it (ReadShareGroupState / WriteShareGroupState when that is another
broker). Each test picks a group whose share coordinator is not the data partition's
leader, so the state goes over the wire:

- acknowledgements persist at the remote coordinator (ReadShareGroupState there shows
  them, the data leader answers NOT_COORDINATOR for the key);
- kill -9 of the data partition's leader mid-delivery, then of the share coordinator:
  after the new leader (coordinator) serves, nothing whose acknowledgement the broker
  confirmed is delivered again, nothing acquired and unconfirmed is lost.
- the data partition's leadership moved away and back without a kill (reassignment
  reorder + preferred election): the same, and the coordinator's state ends complete.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import raw_wire
from kafkette.broker.share_groups.persister import coordinator_key
from kafkette.wire.apis import ApiKey
from tests.cluster import zk_wire
from tests.share_groups.share_helpers import nothing_more, poll_until, produce, share_consumer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TOPIC = "jobs"
KEY_TYPE_GROUP, KEY_TYPE_SHARE = 0, 2
CONFIGS = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
}


def _topic_id(cluster) -> uuid.UUID:
    for broker_id in cluster.running():
        topic = zk_wire.metadata(cluster.brokers[broker_id].address, [TOPIC])["topics"][TOPIC]
        if topic["error_code"] == 0:
            return uuid.UUID(topic["topic_id"])
    raise AssertionError("no broker knows the topic")


def _coordinator(cluster, key: str, key_type: int, timeout: float = 30.0) -> int:
    """The coordinator a running broker names, once it is a running one (a broker's
    metadata may still name one just stopped)."""
    deadline = time.monotonic() + timeout
    while True:
        running = cluster.running()
        for broker_id in running:
            try:
                error, node = zk_wire.find_coordinator(
                    cluster.brokers[broker_id].address, key, key_type)
            except OSError:
                continue
            if error == 0 and node in running:
                return node
        assert time.monotonic() < deadline, f"no coordinator for {key!r}:\n{cluster.logs()}"
        time.sleep(0.2)


def _set_earliest(cluster, group: str) -> None:
    """share.auto.offset.reset=earliest through one broker: group configs live in
    ZooKeeper, so every broker describes (and runs the group with) it at once."""
    body = {
        "resources": [{
            "resource_type": 32, "resource_name": group,
            "configs": [{"name": "share.auto.offset.reset", "config_operation": 0,
                         "value": "earliest"}],
        }],
        "validate_only": False,
    }
    first, *others = cluster.running()
    answer = raw_wire.call(cluster.brokers[first].address,
                           ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer["responses"][0]["error_code"] == 0, answer
    describe = {"resources": [{"resource_type": 32, "resource_name": group,
                               "configuration_keys": ["share.auto.offset.reset"]}],
                "include_synonyms": False, "include_documentation": False}
    for broker_id in others:
        deadline = time.monotonic() + 10
        while True:
            answer = raw_wire.call(cluster.brokers[broker_id].address,
                                   ApiKey.DESCRIBE_CONFIGS, 4, describe)
            entries = answer["results"][0]["configs"]
            if [(e["name"], e["value"]) for e in entries] == [
                    ("share.auto.offset.reset", "earliest")]:
                break
            assert time.monotonic() < deadline, (broker_id, answer)
            time.sleep(0.05)


def _setup(cluster, records: int, victim: str | None = None
           ) -> tuple[object, str, uuid.UUID, int, int]:
    """A three-broker cluster, ``TOPIC`` (one partition, RF 3) with ``records`` records,
    and a group whose share coordinator is not the partition's leader (and whose group
    coordinator is the ``victim``, "leader" or "coordinator", so its membership moves
    too; without a victim, neither, so describing its offsets asks another broker):
    (cluster, group, topic id, data leader, share coordinator)."""
    built = cluster(3, configs=CONFIGS)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 3)])[TOPIC].result(timeout=20)
    leader = built.wait_leader(TOPIC, 0)
    tid = _topic_id(built)
    candidates = []  # (group, share coordinator): the first one whose group
    for i in range(40):  # coordinator is the victim too, else the first one at all
        group = f"g{i}"
        share_coordinator = _coordinator(built, coordinator_key((group, tid, 0)), KEY_TYPE_SHARE)
        if share_coordinator == leader:
            continue
        candidates.append((group, share_coordinator))
        group_coordinator = _coordinator(built, group, KEY_TYPE_GROUP)
        if victim is None:
            if group_coordinator not in (leader, share_coordinator):
                break
        elif group_coordinator == {"leader": leader, "coordinator": share_coordinator}[victim]:
            break
    else:
        assert candidates, "every group's share coordinator is the data leader"
        group, share_coordinator = candidates[0]
    _set_earliest(built, group)
    produce(built.bootstrap, TOPIC, [str(i) for i in range(records)])
    return built, group, tid, leader, share_coordinator


def _read_state(cluster, broker_id: int, group: str, tid: uuid.UUID) -> dict:
    answer = raw_wire.call(
        cluster.brokers[broker_id].address, ApiKey.READ_SHARE_GROUP_STATE, 0,
        {"group_id": group, "topics": [{"topic_id": tid, "partitions": [
            {"partition": 0, "leader_epoch": -1}]}]},
    )
    return answer["results"][0]["partitions"][0]


def _describe_offsets(cluster, group: str, topics: list | None) -> dict:
    """DescribeShareGroupOffsets v1 at the group's coordinator (found again while the
    coordinator moves: COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR)."""
    deadline = time.monotonic() + 30
    while True:
        address = cluster.brokers[_coordinator(cluster, group, KEY_TYPE_GROUP)].address
        try:
            described = raw_wire.call(address, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1,
                                      {"groups": [{"group_id": group, "topics": topics}]})
        except OSError:  # a stopped coordinator, still named by a broker's metadata
            assert time.monotonic() < deadline, f"{address} does not answer"
            time.sleep(0.1)
            continue
        entry = described["groups"][0]
        if entry["error_code"] not in (14, 15, 16) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert entry["error_code"] == 0, entry
    return entry


def test_acknowledgements_persist_at_a_remote_share_coordinator(cluster) -> None:
    built, group, tid, leader, share_coordinator = _setup(cluster, 60)
    consumer = share_consumer(built.bootstrap, group, TOPIC,
                              **{"share.acknowledgement.mode": "explicit"})
    reported: list = []
    consumer.set_acknowledgement_commit_callback(lambda o, e: reported.append((o, e)))
    try:
        got = poll_until(consumer, lambda got: len(got) >= 60, timeout=30)
        assert sorted(m.offset() for m in got) == list(range(60))
        _describe_offsets(built, group, None)  # what a broker caches now must not stick
        for m in got:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT if m.offset() % 5
                                 else AcknowledgeType.REJECT)
        consumer.commit_sync()
        assert reported and all(error is None for _o, error in reported), reported
    finally:
        consumer.close()
    # The state is the coordinator's: everything acknowledged, the start offset past it.
    state = _read_state(built, share_coordinator, group, tid)
    assert state["error_code"] == 0, state
    assert state["start_offset"] == 60, state
    assert _read_state(built, leader, group, tid)["error_code"] == 16  # NOT_COORDINATOR
    # DescribeShareGroupOffsets at the group coordinator reports the coordinator's state
    # (the start offset, lag 0), whether the topics are named or not.
    for topics in (None, [{"topic_name": TOPIC, "partitions": [0]}]):
        entry = _describe_offsets(built, group, topics)
        assert [(t["topic_name"], p["partition_index"], p["start_offset"], p["lag"])
                for t in entry["topics"] for p in t["partitions"]] == [(TOPIC, 0, 60, 0)]
    # A new member of the group gets nothing again.
    again = share_consumer(built.bootstrap, group, TOPIC)
    try:
        assert nothing_more(again, 3.0) == []
    finally:
        again.close()
    # AlterShareGroupOffsets at the group coordinator starts the share partition over at
    # its coordinator; the data leader's copy does not outlive the group's last session.
    group_coordinator = built.brokers[_coordinator(built, group, KEY_TYPE_GROUP)].address
    altered = raw_wire.call(group_coordinator, ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {
        "group_id": group, "topics": [{"topic_name": TOPIC, "partitions": [
            {"partition_index": 0, "start_offset": 30}]}]})
    assert altered["error_code"] == 0, altered
    assert altered["responses"][0]["partitions"][0]["error_code"] == 0, altered
    entry = _describe_offsets(built, group, None)
    assert [p["start_offset"] for t in entry["topics"] for p in t["partitions"]] == [30]
    third = share_consumer(built.bootstrap, group, TOPIC)
    try:
        got = poll_until(third, lambda got: len(got) >= 30, timeout=30)
        assert sorted(m.offset() for m in got) == list(range(30, 60))
        third.commit_sync()
    finally:
        third.close()
    # The group coordinator goes; its successor never saw a member of the group, yet
    # knows it by its share state (as Kafka's coordinator knows it by its records).
    gone = _coordinator(built, group, KEY_TYPE_GROUP)
    built.stop(gone)
    entry = _describe_offsets(built, group, None)
    assert [p["start_offset"] for t in entry["topics"] for p in t["partitions"]] == [60]
    # Where no group had its coordinator apart from both, the stopped one was the share
    # coordinator too (or the data leader): the checks below ask the current one.
    share_coordinator = _coordinator(built, coordinator_key((group, tid, 0)), KEY_TYPE_SHARE)
    group_coordinator = built.brokers[_coordinator(built, group, KEY_TYPE_GROUP)].address
    deleted = raw_wire.call(group_coordinator, ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, {
        "group_id": group, "topics": [{"topic_name": TOPIC}]})
    assert deleted["error_code"] == 0 and deleted["responses"][0]["error_code"] == 0, deleted
    assert _describe_offsets(built, group, None)["topics"] == []
    assert _read_state(built, share_coordinator, group, tid)["start_offset"] == -1
    # Fencing at the coordinator, as Kafka's: a reader's newer leader epoch fences older
    # writers; InitializeShareGroupState's newer state epoch fences older ones.
    def call(api: int, version: int, **part) -> int:
        answer = raw_wire.call(built.brokers[share_coordinator].address, api, version, {
            "group_id": group, "topics": [{"topic_id": tid, "partitions": [
                {"partition": 0, **part}]}]})
        return answer["results"][0]["partitions"][0]["error_code"]

    def write(leader_epoch: int, state_epoch: int) -> int:
        return call(ApiKey.WRITE_SHARE_GROUP_STATE, 1, state_epoch=state_epoch,
                    leader_epoch=leader_epoch, start_offset=60, delivery_complete_count=-1,
                    state_batches=[])

    assert call(ApiKey.READ_SHARE_GROUP_STATE, 0, leader_epoch=7) == 0
    assert write(6, state["state_epoch"]) == 74  # FENCED_LEADER_EPOCH
    assert call(ApiKey.READ_SHARE_GROUP_STATE, 0, leader_epoch=6) == 74
    assert call(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, state_epoch=state["state_epoch"] + 2,
                start_offset=60) == 0
    assert write(7, state["state_epoch"] + 1) == 124  # FENCED_STATE_EPOCH
    assert write(7, state["state_epoch"] + 2) == 0
    assert _read_state(built, share_coordinator, group, tid)["state_epoch"] == (
        state["state_epoch"] + 2)


def _kill_mid_delivery(cluster, victim: str) -> None:
    records = 200
    rng = random.Random(31)
    built, group, tid, leader, share_coordinator = _setup(cluster, records, victim)
    killed = leader if victim == "leader" else share_coordinator
    confirmed: dict[int, str] = {}
    reported: list = []

    def settle(decided: dict[int, str]) -> None:
        for offsets, error in reported:
            if error is not None:
                continue
            for offs in offsets.values():
                for offset in offs:
                    if offset in decided:
                        confirmed[offset] = decided[offset]
        reported.clear()

    def acknowledge(consumer, messages: list) -> None:
        """Accept (or reject every 7th) ``messages``; confirmed as the brokers answer."""
        decided = {}
        for m in messages:
            kind = "reject" if m.offset() % 7 == 0 else "accept"
            consumer.acknowledge(m, AcknowledgeType.REJECT if kind == "reject"
                                 else AcknowledgeType.ACCEPT)
            decided[m.offset()] = kind
        try:
            consumer.commit_sync()
        except KafkaException:
            pass  # what failed is not confirmed (the callback says which)
        settle(decided)

    def poll(consumer, at_least: int) -> list:
        got = poll_until(consumer, lambda got: len(got) >= at_least, timeout=30)
        assert got, f"nothing delivered:\n{built.logs()}"
        for m in got:
            assert m.offset() not in confirmed, f"offset {m.offset()} delivered again"
        return got

    consumer = share_consumer(built.bootstrap, group, TOPIC,
                              **{"share.acknowledgement.mode": "explicit"})
    consumer.set_acknowledgement_commit_callback(lambda o, e: reported.append((o, e)))
    got = poll(consumer, 40)
    cut = max(1, int(len(got) * rng.uniform(0.3, 0.7)))
    acknowledge(consumer, got[:cut])  # confirmed before the kill; the rest is held
    assert confirmed, f"no acknowledgement confirmed before the kill:\n{built.logs()}"
    built.kill(killed)
    built.wait_leader(TOPIC, 0, exclude=(killed,))
    # What the member held is acknowledged after the kill: confirmed if the brokers say
    # so (not when it was acquired from a dead leader). Then more records, from the (new)
    # leader, acknowledged through the (new) share coordinator.
    acknowledge(consumer, got[cut:])
    if victim == "coordinator":
        # The data leader lives: it keeps the write until the new coordinator takes it.
        lost = [m.offset() for m in got[cut:] if m.offset() not in confirmed]
        assert not lost, f"acknowledgements not written to the new coordinator: {lost}"
    before = len(confirmed)
    if len(confirmed) < records:
        acknowledge(consumer, poll(consumer, min(30, records - len(confirmed))))
        assert len(confirmed) > before, (
            f"no acknowledgement confirmed after the kill:\n{built.logs()}")
    consumer.close()
    final = share_consumer(built.bootstrap, group, TOPIC)
    try:
        rest = nothing_more(final, 2.0) if len(confirmed) == records else poll_until(
            final, lambda got: len(got) >= records - len(confirmed), timeout=30)
        rest += nothing_more(final, 2.0)
        final.commit_sync()
    finally:
        final.close()
    offsets = [m.offset() for m in rest]
    assert len(offsets) == len(set(offsets)), "a record delivered twice after the kill"
    assert not set(offsets) & set(confirmed), "an acknowledged record came back"
    assert set(offsets) | set(confirmed) == set(range(records)), (
        f"records lost: {sorted(set(range(records)) - set(offsets) - set(confirmed))}")
    if victim == "coordinator":
        new = _coordinator(built, coordinator_key((group, tid, 0)), KEY_TYPE_SHARE)
        assert new != killed
        state = _read_state(built, new, group, tid)
        assert state["error_code"] == 0 and state["start_offset"] == records, state


def test_kill_9_of_the_data_leader_mid_delivery(cluster) -> None:
    _kill_mid_delivery(cluster, "leader")


def test_kill_9_of_the_share_coordinator_mid_delivery(cluster) -> None:
    _kill_mid_delivery(cluster, "coordinator")


def _move_leadership(built, wait_until, leader: int, to: int) -> None:
    """Leadership of ``TOPIC``-0 to ``to`` without a kill: the replicas reordered
    (AlterPartitionReassignments, ``to`` first), then ElectLeaders (preferred)."""
    from confluent_kafka import ElectionType
    from confluent_kafka import TopicPartition as CTopicPartition
    from kafka import KafkaAdminClient, TopicPartition

    state = wait_until(lambda: (s := built.partition_state(TOPIC, 0)) and sorted(
        s["isr"]) == [1, 2, 3] and s, timeout=30, what="a full ISR before the move")
    assert state["leader"] == leader, state
    replicas = [to] + [b for b in (1, 2, 3) if b != to]
    reassign = KafkaAdminClient(bootstrap_servers=built.bootstrap, request_timeout_ms=30000)
    try:
        assert reassign.alter_partition_reassignments(
            {TopicPartition(TOPIC, 0): replicas}) == {TopicPartition(TOPIC, 0): None}
        wait_until(lambda: reassign.list_partition_reassignments() == {}, timeout=30,
                   what="the reorder done")
    finally:
        reassign.close()
    admin = AdminClient({"bootstrap.servers": built.bootstrap})

    def elected() -> dict | None:
        s = built.partition_state(TOPIC, 0) or {}
        if s.get("leader") == to:
            return s
        try:
            admin.elect_leaders(ElectionType.PREFERRED, [CTopicPartition(TOPIC, 0)]).result(15)
        except KafkaException:
            pass  # asked again
        return None

    moved = wait_until(elected, timeout=30, what=f"broker {to} leading {TOPIC}-0")
    assert moved["leader_epoch"] > state["leader_epoch"], (state, moved)


@pytest.mark.parametrize("to_coordinator, ack_during_move", [
    (False, False), (True, True)], ids=["via-third-broker", "via-share-coordinator"])
def test_leadership_moves_away_and_back_mid_delivery(
    cluster, wait_until, to_coordinator: bool, ack_during_move: bool
) -> None:
    """The data partition's leadership moves to another broker and back (replicas
    reordered, then a preferred election: no kill) while a member acknowledges: every
    record ends accepted, none whose acknowledgement was confirmed comes back, and the
    share coordinator's state ends at start offset 200. The interim leader is the third
    broker (the state stays remote), or the share coordinator itself (the state is local
    there), the member then acknowledging what it holds while the leadership moves."""
    records = 200
    built, group, tid, leader, share_coordinator = _setup(cluster, records)
    interim = share_coordinator if to_coordinator else next(
        b for b in (1, 2, 3) if b not in (leader, share_coordinator))
    confirmed: set[int] = set()
    delivered: list[int] = []
    reported: list = []

    def acknowledge(consumer, messages: list) -> None:
        for m in messages:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        try:
            consumer.commit_sync()
        except KafkaException:
            pass  # what failed is not confirmed (the callback says which)
        for offsets, error in reported:
            if error is None:
                for offs in offsets.values():
                    confirmed.update(offs)
        reported.clear()

    consumer = share_consumer(built.bootstrap, group, TOPIC,
                              **{"share.acknowledgement.mode": "explicit"})
    consumer.set_acknowledgement_commit_callback(lambda o, e: reported.append((o, e)))
    held: list = []  # delivered, not acknowledged yet (all must be before the next poll)

    def step(what: str, accept: int | None, led_by: int) -> None:
        """Poll, accept the first ``accept`` records (all: None), hold the rest."""
        got = poll_until(consumer, lambda got: len(got) >= 20, timeout=30)
        assert got, f"nothing delivered {what}:\n{built.logs()}"
        for m in got:
            assert m.offset() not in confirmed, f"offset {m.offset()} delivered again {what}"
        delivered.extend(m.offset() for m in got)
        cut = len(got) if accept is None else accept
        acknowledge(consumer, got[:cut])
        held.extend(got[cut:])
        assert built.partition_state(TOPIC, 0)["leader"] == led_by

    def acknowledge_held() -> None:
        while held:
            acknowledge(consumer, held[:10])
            del held[:10]
            time.sleep(0.02)

    try:
        step("before the moves", 20, leader)
        assert len(confirmed) == 20, f"{sorted(confirmed)}:\n{built.logs()}"
        if ack_during_move:
            # Whatever the old leader confirms before it steps down is in the state the
            # interim leader reads; the rest fails and is delivered again.
            mover = threading.Thread(target=_move_leadership,
                                     args=(built, wait_until, leader, interim))
            mover.start()
            acknowledge_held()
            mover.join()
        else:
            _move_leadership(built, wait_until, leader, interim)
            # Acquired from the old leader: the acknowledgements fail (INVALID_RECORD_STATE
            # at the interim leader), the records come again from it.
            acknowledge_held()
            assert len(confirmed) == 20, sorted(confirmed)
        before = len(confirmed)
        step("from the interim leader", 30, interim)
        assert len(confirmed) > before, (
            f"no acknowledgement confirmed by the interim leader:\n{built.logs()}")
        assert len(confirmed) < records, "everything acknowledged before the move back"
        _move_leadership(built, wait_until, interim, leader)
        acknowledge_held()
        deadline = time.monotonic() + 60
        while len(confirmed) < records and time.monotonic() < deadline:
            step("after the move back", None, leader)
    finally:
        consumer.close()
    missing = sorted(set(range(records)) - confirmed)
    assert not missing, f"never accepted: {missing}\n{built.logs()}"
    assert set(delivered) == set(range(records))
    state = _read_state(built, share_coordinator, group, tid)
    assert state["error_code"] == 0 and state["start_offset"] == records, state
    again = share_consumer(built.bootstrap, group, TOPIC)
    try:
        assert nothing_more(again, 3.0) == []
    finally:
        again.close()


def _log_bytes(cluster, broker_id: int, topic: str) -> int:
    folder = cluster.brokers[broker_id].data_dir / f"{topic}-0"
    return sum(p.stat().st_size for p in folder.glob("*.log"))


def _list_latest(address: str, topic: str) -> dict:
    answer = raw_wire.call(address, ApiKey.LIST_OFFSETS, 7, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return answer["topics"][0]["partitions"][0]


def test_a_new_leader_behind_the_committed_high_watermark_waits_for_it(cluster) -> None:
    """Kafka's OFFSET_NOT_AVAILABLE: a follower that becomes leader knows the HW only as
    its old leader last told it; until the HW reaches the new epoch's start offset,
    "latest" is not answered (ListOffsets) and a share partition does not start there
    (it would start before records the group's ``latest`` means to skip)."""
    # Sessions long enough that a frozen follower stays in the ISR throughout.
    built = cluster(3, configs={**CONFIGS, "zookeeper.session.timeout.ms": "30000"})
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    controller = built.controller()
    for attempt in range(10):
        # A layout where the replica to freeze is the last in order and not the
        # controller: the leader's successor is then the other follower.
        topic = f"lagging{attempt}"
        admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=20)
        leader = built.wait_leader(topic, 0)
        replicas = json.loads(built.zk().get(f"/brokers/topics/{topic}")[0])["partitions"]["0"]
        successor, frozen = [r for r in replicas if r != leader]
        if frozen != controller:
            break
    else:
        raise AssertionError("no layout with a follower to freeze other than the controller")
    deadline = time.monotonic() + 30
    while len((built.partition_state(topic, 0) or {}).get("isr", [])) < 3:
        assert time.monotonic() < deadline, built.partition_state(topic, 0)
        time.sleep(0.1)
    # The successor replicates; the frozen follower keeps every HW at 0 while in the ISR.
    built.freeze(frozen)
    producer = Producer({"bootstrap.servers": built.bootstrap_of(leader), "acks": "1"})
    for i in range(40):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(10) == 0
    while _log_bytes(built, successor, topic) < _log_bytes(built, leader, topic):
        assert time.monotonic() < deadline, "the successor did not replicate"
        time.sleep(0.05)
    built.stop(leader)  # controlled shutdown: the successor leads at once
    assert built.wait_leader(topic, 0, exclude=(leader,)) == successor
    address = built.brokers[successor].address
    deadline = time.monotonic() + 20
    while (answer := _list_latest(address, topic))["error_code"] != 78:
        assert answer["error_code"] in (6, 74, 75), answer  # the leadership still moving
        assert time.monotonic() < deadline, answer
        time.sleep(0.1)
    # A share group starting now (share.auto.offset.reset=latest) must not start at 0.
    consumer = share_consumer(built.bootstrap_of(successor), "late-group", topic)
    try:
        assert nothing_more(consumer, 2.0) == []
        built.thaw(frozen)  # the frozen follower fetches: the HW reaches 40
        deadline = time.monotonic() + 30
        while (answer := _list_latest(address, topic))["error_code"] != 0:
            assert answer["error_code"] == 78, answer
            assert time.monotonic() < deadline, answer
            time.sleep(0.1)
        assert answer["offset"] == 40, answer
        # The share partition starts at 40 once the HW is known: only what comes next.
        got: list = []
        deadline = time.monotonic() + 30
        while not got:
            produce(built.bootstrap_of(successor), topic, ["after"])
            got = poll_until(consumer, lambda got: bool(got), timeout=2.0)
            assert time.monotonic() < deadline, "the share group got nothing"
        assert min(m.offset() for m in got) >= 40, [m.offset() for m in got]
    finally:
        consumer.close()
