"""Consumer groups end to end: real kafka-python and confluent-kafka consumers, real broker.

Every consumer is its own process (``group_helpers.py consume``) so one can be
``kill -9``-ed; the broker is ``kafkette serve`` with ``group.initial.rebalance.delay.ms=0``
and a lowered ``group.min.session.timeout.ms`` so that a dead member is noticed quickly.

Record accounting is exact: every test produces uniquely-valued records to known
partitions and checks, per group, that each value was consumed exactly once. Before
each membership change the test waits until the group has *committed* everything
(read back with the admin client), so no redelivery is legitimate and any duplicate
or gap is the broker's fault.

Debugging a failure: each consumer's stderr (and, at teardown, the stacks of those
still running) is in ``consumer-<name>.log`` in the test's tmp dir, the broker's log
in ``broker-<n>.log``. ``KAFKETTE_E2E_LOG_LEVEL=DEBUG`` makes the broker log JoinGroup,
SyncGroup and failed Heartbeats; ``KAFKETTE_E2E_CLIENT_DEBUG=1`` turns on kafka-python's
debug log in the consumers.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka import errors as KafkaErrors

from kafkette.broker.groups import partition_for_group
from kafkette.broker.groups.offsets_records import (
    GroupMetadataKey,
    decode_group_metadata_value,
    decode_key,
)
from tests.broker import group_helpers as helpers

ConsumerProcess = helpers.ConsumerProcess
GroupBroker = helpers.GroupBroker
wait_until = helpers.wait_until

PARTITIONS = 6
SESSION_MS = 4000
HEARTBEAT_MS = 500
MAX_POLL_MS = 20_000
OFFSETS_PARTITIONS = 50
BROKER_CONFIGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "num.partitions": str(PARTITIONS),
    "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
}
WAIT = 60.0  # generous bound for any group to settle or catch up


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GroupBroker]:
    """One broker shared by the tests that do not restart it."""
    root = tmp_path_factory.mktemp("groups")
    broker = GroupBroker(root / "data", root, BROKER_CONFIGS).start()
    try:
        yield broker
    finally:
        broker.terminate()


@pytest.fixture
def consumers(tmp_path: Path) -> Iterator[Callable[..., ConsumerProcess]]:
    """Factory ``consumers(bootstrap, group, topic, client=..., auto_commit=..., **extra)``.

    Every process it starts is killed at teardown (if a test did not stop it).
    """
    started: list[ConsumerProcess] = []

    def start(
        bootstrap: str,
        group: str,
        topic: str,
        client: str = "confluent",
        auto_commit: bool = False,
        session_timeout_ms: int = SESSION_MS,
        name: str | None = None,
        **extra: object,
    ) -> ConsumerProcess:
        process = ConsumerProcess.start(
            name or f"{group}-{len(started)}",
            tmp_path,
            client=client,
            bootstrap=bootstrap,
            group=group,
            topic=topic,
            auto_commit=auto_commit,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_interval_ms=max(MAX_POLL_MS, session_timeout_ms),
            extra=extra,
        )
        started.append(process)
        return process

    yield start
    running = [process for process in started if process.alive]
    for process in running:
        process.dump_stacks()  # a failed test leaves them running: log where each one was
    if running:
        time.sleep(0.2)
    for process in started:
        process.kill()


# --- small helpers ------------------------------------------------------------------------------


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(bootstrap: str, partitions: int = PARTITIONS) -> str:
    name = unique("groups")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=15)
    return name


class Produced:
    """Everything produced to one topic so far: values in order and end offset per partition."""

    def __init__(self, topic: str, partitions: int = PARTITIONS) -> None:
        self.topic = topic
        self.values: list[str] = []
        self.ends = dict.fromkeys(range(partitions), 0)

    def produce(self, bootstrap: str, tag: str, count: int) -> list[str]:
        """``count`` records spread evenly over every partition; returns their values."""
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        errors: list[str] = []
        values = [f"{tag}-{i}" for i in range(count)]
        for i, value in enumerate(values):
            partition = i % len(self.ends)
            producer.produce(
                self.topic,
                value=value.encode(),
                partition=partition,
                on_delivery=lambda err, _msg: err and errors.append(str(err)),
            )
            self.ends[partition] += 1
        assert producer.flush(30) == 0, "producer did not deliver everything in 30s"
        assert not errors, errors[:3]
        self.values.extend(values)
        return values


def consumed(members: list[ConsumerProcess]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for member in members:
        counts.update(member.values())
    return counts


def describe(members: list[ConsumerProcess], broker: GroupBroker | None = None) -> str:
    text = "\n".join(m.describe() for m in members)
    return f"{text}\nbroker log tail:\n{broker.log_text(30)}" if broker else text


def wait_consumed(
    members: list[ConsumerProcess], expected: list[str], broker: GroupBroker | None = None
) -> None:
    """Wait until the members together consumed every value of ``expected``."""
    wanted = set(expected)

    def done() -> bool:
        return wanted <= set(consumed(members))

    def missing() -> str:
        left = wanted - set(consumed(members))
        return f"{len(left)} records never consumed, e.g. {sorted(left)[:5]}\n" + describe(
            members, broker
        )

    wait_until(done, WAIT, missing)


def assert_exactly_once(members: list[ConsumerProcess], produced: list[str], group: str) -> None:
    counts = consumed(members)
    repeated = {v: n for v, n in counts.items() if n > 1}
    missing = set(produced) - set(counts)
    unexpected = set(counts) - set(produced)
    assert not repeated, f"group {group}: records consumed more than once: {list(repeated)[:5]}"
    assert not missing, f"group {group}: records never consumed: {sorted(missing)[:5]}"
    assert not unexpected, f"group {group}: records nobody produced: {sorted(unexpected)[:5]}"


def committed_offsets(bootstrap: str, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """kafka-python ``list_group_offsets``: one OffsetFetch (v8) for all ``groups``."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        result = admin.list_group_offsets(groups)
    finally:
        admin.close()
    return {
        group: {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}
        for group, offsets in result.items()
    }


def wait_committed(bootstrap: str, group: str, produced: Produced) -> None:
    """Wait until ``group`` committed the end offset of every partition of the topic."""
    wanted = {(produced.topic, p): end for p, end in produced.ends.items()}
    seen: dict = {}

    def done() -> bool:
        nonlocal seen
        seen = committed_offsets(bootstrap, [group]).get(group, {})
        return all(seen.get(tp, -1) == end for tp, end in wanted.items())

    wait_until(done, WAIT, lambda: f"group {group} committed {seen}, want {wanted}")


def balanced(members: list[ConsumerProcess], sizes: list[int] | None = None) -> bool:
    """The members' assignments partition the topic (optionally with these sorted sizes)."""
    assignments = [m.partitions() for m in members]
    flat = [p for a in assignments for p in a]
    if sorted(flat) != list(range(PARTITIONS)):
        return False
    if sizes is not None:
        return sorted(len(a) for a in assignments) == sizes
    return all(assignments)


def group_generation(bootstrap: str, group: str) -> int:
    """The generation in the group's last metadata record in ``__consumer_offsets``."""
    partition = partition_for_group(group, OFFSETS_PARTITIONS)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        tp = TopicPartition("__consumer_offsets", partition, 0)
        end = consumer.get_watermark_offsets(tp, timeout=10)[1]
        consumer.assign([tp])
        generation = -1
        offset = 0
        deadline = time.monotonic() + 30
        while offset < end:
            assert time.monotonic() < deadline, "reading __consumer_offsets timed out"
            for message in consumer.consume(500, 0.5):
                if message.error() is not None:
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise AssertionError(str(message.error()))
                offset = message.offset() + 1
                key = decode_key(message.key())
                if isinstance(key, GroupMetadataKey) and key.group_id == group:
                    if message.value() is not None:
                        generation = decode_group_metadata_value(message.value()).generation
        return generation
    finally:
        consumer.close()


# --- the group life cycle, per client and assignor ----------------------------------------------


def run_group_life_cycle(
    broker: GroupBroker,
    consumers: Callable[..., ConsumerProcess],
    client: str,
    auto_commit: bool,
    second_group: bool,
    **extra: object,
) -> None:
    """3 members -> 2 partitions each; a 4th joins -> all 4 work; kill -9 one -> 3 take over."""
    bootstrap = broker.bootstrap
    topic = create_topic(bootstrap)
    produced = Produced(topic)
    group = unique(f"{client}-group")
    start = dict(client=client, auto_commit=auto_commit, **extra)
    members = [consumers(bootstrap, group, topic, **start) for _ in range(3)]
    others: list[ConsumerProcess] = []
    other_group = unique("subscriber-group")
    if second_group:
        others = [consumers(bootstrap, other_group, topic, client=client) for _ in range(2)]

    wait_until(
        lambda: balanced(members, [2, 2, 2]),
        WAIT,
        lambda: "3 members with 2 partitions each\n" + describe(members, broker),
    )
    first = produced.produce(bootstrap, "first", 600)
    wait_consumed(members, first, broker)
    for member in members:
        owned = set(member.partitions())
        got = {r.partition for r in member.records}
        assert got == owned, f"{member.name} consumed from {got} but owns {owned}"
    wait_committed(bootstrap, group, produced)

    # A fourth member: a rebalance, after which every member owns at least one partition.
    members.append(consumers(bootstrap, group, topic, **start))
    wait_until(
        lambda: balanced(members, [1, 1, 2, 2]),
        WAIT,
        lambda: "4 members sharing 6 partitions\n" + describe(members, broker),
    )
    before = {m.name: len(m.records) for m in members}
    second = produced.produce(bootstrap, "second", 600)
    wait_consumed(members, second, broker)
    idle = [m.name for m in members if len(m.records) == before[m.name]]
    assert not idle, f"members without work after the 4th joined: {idle}"
    wait_committed(bootstrap, group, produced)

    # kill -9 one member: no LeaveGroup; the others get its partitions after the session timeout.
    victim = members[0]
    survivors = members[1:]
    victim.kill()
    killed_at = time.monotonic()
    wait_until(
        lambda: balanced(survivors, [2, 2, 2]),
        SESSION_MS / 1000 + WAIT,
        lambda: (
            "survivors taking over the killed member's partitions\n" + describe(members, broker)
        ),
    )
    took = time.monotonic() - killed_at
    earliest = (SESSION_MS - HEARTBEAT_MS) / 1000 - 0.5
    assert took >= earliest, f"moved {took:.1f}s after kill -9, before the session timeout"
    third = produced.produce(bootstrap, "third", 600)
    wait_consumed(survivors, third, broker)
    assert_exactly_once(members, produced.values, group)

    if second_group:
        wait_consumed(others, produced.values, broker)
        assert_exactly_once(others, produced.values, other_group)
    for member in survivors + others:
        member.stop()


def test_kafka_python_group_life_cycle(group_broker, consumers) -> None:
    run_group_life_cycle(
        group_broker, consumers, "kafka-python", auto_commit=False, second_group=True
    )


def test_kafka_python_group_with_auto_commit(group_broker, consumers) -> None:
    run_group_life_cycle(
        group_broker, consumers, "kafka-python", auto_commit=True, second_group=False
    )


@pytest.mark.parametrize("auto_commit", [False, True], ids=["manual-commit", "auto-commit"])
@pytest.mark.parametrize("assignor", ["range", "roundrobin", "cooperative-sticky"])
def test_confluent_group_life_cycle(group_broker, consumers, assignor, auto_commit) -> None:
    run_group_life_cycle(
        group_broker,
        consumers,
        "confluent",
        auto_commit=auto_commit,
        second_group=assignor == "range" and not auto_commit,
        **{"partition.assignment.strategy": assignor},
    )


# --- restart: committed offsets and groups come back --------------------------------------------


def test_groups_resume_from_committed_offsets_after_restart(tmp_path, consumers) -> None:
    """Two groups stay connected through a graceful broker restart, a third is restarted cold.

    After the restart more records are produced: the live groups read exactly those
    (no rebalance needed: the broker restores them Stable with the same generation),
    and the cold group's new consumers read exactly those too.
    """
    broker = GroupBroker(tmp_path / "data", tmp_path, BROKER_CONFIGS).start()
    try:
        bootstrap = broker.bootstrap
        topic = create_topic(bootstrap)
        produced = Produced(topic)
        live = {unique("live-kafka-python"): "kafka-python", unique("live-confluent"): "confluent"}
        cold = unique("cold-confluent")
        # A session long enough to outlast the restart: the live members must not expire.
        # Reconnect backoff capped at 0.5 s (both clients default to exponential backoff up
        # to many seconds): on a busy machine a member could otherwise come back after its
        # session, and the group would rebalance for the client's sake, not the broker's.
        backoff = {
            "kafka-python": {"reconnect_backoff_max_ms": 500},
            "confluent": {"reconnect.backoff.max.ms": 500},
        }
        groups = {
            group: [
                consumers(
                    bootstrap,
                    group,
                    topic,
                    client=client,
                    session_timeout_ms=20_000,
                    **backoff[client],
                )
                for _ in range(2)
            ]
            for group, client in live.items()
        }
        groups[cold] = [consumers(bootstrap, cold, topic, auto_commit=True) for _ in range(2)]
        for group, members in groups.items():
            wait_until(
                lambda m=members: balanced(m, [3, 3]),
                WAIT,
                lambda m=members, g=group: f"group {g} settled\n" + describe(m, broker),
            )
        before = produced.produce(bootstrap, "before", 600)
        for group, members in groups.items():
            wait_consumed(members, before, broker)
            wait_committed(bootstrap, group, produced)
        for member in groups[cold]:
            member.stop()
        generations = {group: group_generation(bootstrap, group) for group in live}
        rebalances = {m.name: len(m.rebalances) for g in live for m in groups[g]}

        assert broker.terminate() == 0, "graceful stop failed:\n" + broker.log_text()
        broker.start()
        groups[cold] += [consumers(bootstrap, cold, topic, auto_commit=True) for _ in range(2)]
        restarted = groups[cold][2:]
        wait_until(
            lambda: balanced(restarted, [3, 3]),
            WAIT,
            lambda: "cold group settled after restart\n" + describe(restarted, broker),
        )
        after = produced.produce(bootstrap, "after", 600)
        for group, members in groups.items():
            wait_consumed(members, after, broker)
            assert_exactly_once(members, produced.values, group)
        assert set(consumed(restarted)) == set(after), "the cold group re-read committed records"
        for group in live:
            assert group_generation(bootstrap, group) == generations[group], (
                f"group {group} went through a new generation across the restart"
            )
        moved = {m.name for g in live for m in groups[g] if len(m.rebalances) != rebalances[m.name]}
        assert not moved, f"live members rebalanced across the restart: {moved}"
        for members in groups.values():
            for member in members:
                member.stop()
    finally:
        broker.kill()


# --- static membership --------------------------------------------------------------------------


def test_static_member_restart_keeps_generation(group_broker, consumers) -> None:
    """A static member (group.instance.id) that restarts takes its old place: no rebalance."""
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap)
    produced = Produced(topic)
    group = unique("static")

    def static(instance: str, name: str) -> ConsumerProcess:
        return consumers(
            bootstrap,
            group,
            topic,
            name=name,
            session_timeout_ms=30_000,
            **{"group.instance.id": instance, "partition.assignment.strategy": "range"},
        )

    first_a, b = static("instance-a", "a"), static("instance-b", "b")
    wait_until(
        lambda: balanced([first_a, b], [3, 3]),
        WAIT,
        lambda: "two static members settled\n" + describe([first_a, b], group_broker),
    )
    first = produced.produce(bootstrap, "first", 300)
    wait_consumed([first_a, b], first, group_broker)
    wait_committed(bootstrap, group, produced)
    generation = group_generation(bootstrap, group)
    assert generation >= 1, f"no group metadata record for {group}"
    owned = first_a.partitions()
    b_rebalances = list(b.rebalances)
    old_member_id = first_a.member_id

    first_a.stop()  # a static member's close() sends no LeaveGroup
    second_a = static("instance-a", "a-restarted")
    wait_until(
        lambda: second_a.partitions() == owned,
        WAIT,
        lambda: f"restarted member taking back {owned}\n" + describe([second_a, b], group_broker),
    )
    second = produced.produce(bootstrap, "second", 300)
    wait_consumed([second_a, b], second, group_broker)
    assert_exactly_once([first_a, second_a, b], produced.values, group)
    assert b.rebalances == b_rebalances, f"the other member saw a rebalance: {b.rebalances}"
    assert group_generation(bootstrap, group) == generation, "the restart bumped the generation"

    admin = AdminClient({"bootstrap.servers": bootstrap})
    description = admin.describe_consumer_groups([group])[group].result(timeout=15)
    members = {m.group_instance_id: m.member_id for m in description.members}
    assert set(members) == {"instance-a", "instance-b"}, members
    assert members["instance-a"] == second_a.member_id != old_member_id
    second_a.stop()
    b.stop()


# --- admin: list, describe, delete groups and offsets; OffsetFetch of several groups -------------


def test_admin_list_describe_and_delete_groups_and_offsets(group_broker, consumers) -> None:
    bootstrap = group_broker.bootstrap
    topic = create_topic(bootstrap)
    produced = Produced(topic)
    active, simple, unknown_group = unique("admin-active"), unique("admin-simple"), unique("nobody")
    member = consumers(bootstrap, active, topic, client="kafka-python")
    wait_until(lambda: balanced([member]), WAIT, lambda: describe([member], group_broker))
    records = produced.produce(bootstrap, "admin", 120)
    wait_consumed([member], records, group_broker)
    wait_committed(bootstrap, active, produced)
    # Simple commits (no group membership) create an Empty group that owns offsets.
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": simple})
    committer.commit(
        offsets=[TopicPartition(topic, p, 5 + p) for p in range(PARTITIONS)], asynchronous=False
    )
    committer.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
    states = {g.group_id: g.state for g in listed.valid}
    assert states.get(active) == ConsumerGroupState.STABLE, states
    assert states.get(simple) == ConsumerGroupState.EMPTY, states
    kadmin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        kafka_python_listed = {g["group_id"]: g for g in kadmin.list_groups()}
        assert kafka_python_listed[active]["protocol_type"] == "consumer"
        assert kafka_python_listed[simple]["group_state"] == "Empty"

        descriptions = admin.describe_consumer_groups([active, simple])
        stable = descriptions[active].result(timeout=15)
        assert stable.state == ConsumerGroupState.STABLE
        assert stable.partition_assignor == "range", stable.partition_assignor
        assert len(stable.members) == 1
        assignment = stable.members[0].assignment.topic_partitions
        assigned = {(tp.topic, tp.partition) for tp in assignment}
        assert assigned == {(topic, p) for p in range(PARTITIONS)}
        empty = descriptions[simple].result(timeout=15)
        assert empty.state == ConsumerGroupState.EMPTY and not empty.members

        # One OffsetFetch (v8+: the broker says so) for three groups, one of them unknown.
        versions = {key.name: span for key, span in kadmin.api_versions().items()}
        assert versions["OffsetFetch"][1] >= 8, versions["OffsetFetch"]
        offsets = committed_offsets(bootstrap, [active, simple, unknown_group])
        assert offsets[active] == {(topic, p): produced.ends[p] for p in range(PARTITIONS)}
        assert offsets[simple] == {(topic, p): 5 + p for p in range(PARTITIONS)}
        assert offsets[unknown_group] == {}
        fetched = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(simple)])
        by_partition = {
            tp.partition: tp.offset for tp in fetched[simple].result(timeout=15).topic_partitions
        }
        assert by_partition == {p: 5 + p for p in range(PARTITIONS)}

        # OffsetDelete: allowed for the Empty group, refused for a subscribed topic.
        deleted = kadmin.delete_group_offsets(simple, [KTopicPartition(topic, 0)])
        assert deleted == {KTopicPartition(topic, 0): KafkaErrors.NoError}, deleted
        left = committed_offsets(bootstrap, [simple])[simple]
        assert (topic, 0) not in left and left[(topic, 1)] == 6, left
        refused = kadmin.delete_group_offsets(active, [KTopicPartition(topic, 0)])
        assert refused == {KTopicPartition(topic, 0): KafkaErrors.GroupSubscribedToTopicError}

        # DeleteGroups: a group with members is refused, Empty groups go with their offsets.
        with pytest.raises(KafkaException) as refused_delete:
            admin.delete_consumer_groups([active])[active].result(timeout=15)
        assert refused_delete.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        member.stop()
        wait_until(
            lambda: (
                {g["group_id"]: g["group_state"] for g in kadmin.list_groups()}.get(active)
                == "Empty"
            ),
            WAIT,
            f"{active} Empty after its only member left",
        )
        results = admin.delete_consumer_groups([active, simple])
        for group in (active, simple):
            assert results[group].result(timeout=15) is None
        remaining = {g.group_id for g in admin.list_consumer_groups().result(timeout=15).valid}
        assert not {active, simple} & remaining, remaining
        assert committed_offsets(bootstrap, [active, simple]) == {active: {}, simple: {}}
        assert kadmin.delete_groups([active]) == {active: "GroupIdNotFoundError"}
    finally:
        kadmin.close()
