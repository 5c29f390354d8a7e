"""The KIP-848 state machine alone (no broker): timeouts, fencing, regex subscriptions,
the retry of a lost answer and topic changes, driven with explicit ``now_ms``."""

from __future__ import annotations

import uuid

from kafkette.broker.groups.config import GroupConfig
from kafkette.broker.groups.consumer.state import (
    ConsumerGroups,
    HeartbeatRequest,
)
from kafkette.wire.errors import ErrorCode

T = uuid.UUID(int=7)
U = uuid.UUID(int=8)
TOPICS = {"orders": (T, 4), "orders-eu": (U, 2), "__consumer_offsets": (uuid.UUID(int=9), 3)}
CONFIG = GroupConfig(group_consumer_session_timeout_ms=1000)


def _join(groups, member, now, topics=TOPICS, **fields):
    fields.setdefault("subscribed_topic_names", ["orders"])
    return groups.heartbeat(
        HeartbeatRequest("g", member, 0, rebalance_timeout_ms=500, owned={}, **fields),
        topics, now,
    )


def _beat(groups, member, epoch, now, owned=None, topics=TOPICS):
    return groups.heartbeat(HeartbeatRequest("g", member, epoch, owned=owned), topics, now)


def test_session_timeout_removes_a_silent_member() -> None:
    groups = ConsumerGroups(CONFIG)
    assert _join(groups, "a", 0).member_epoch == 1
    assert _join(groups, "b", 0).member_epoch == 2
    assert groups.next_deadline_ms() == 1000
    revoke = _beat(groups, "a", 1, 900)  # asked to give two partitions to b
    assert sum(len(p) for p in revoke.assignment.values()) == 2
    groups.tick(1000)  # b said nothing for 1 s
    assert set(groups.groups["g"].members) == {"a"}
    result = _beat(groups, "a", 1, 1100, owned=revoke.assignment)  # revoked: next epoch
    assert result.member_epoch == 3  # b is gone: a gets everything back
    assert sum(len(p) for p in result.assignment.values()) == 4


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    groups = ConsumerGroups(CONFIG)
    first = _join(groups, "a", 0)
    _join(groups, "b", 10)
    revoke = _beat(groups, "a", 1, 20, owned=first.assignment)
    assert revoke.member_epoch == 1 and sum(len(p) for p in revoke.assignment.values()) == 2
    # a keeps heartbeating but never gives the two partitions up: 500 ms rebalance timeout.
    _beat(groups, "a", 1, 400, owned=first.assignment)
    _beat(groups, "b", 2, 400)
    groups.tick(520)
    assert set(groups.groups["g"].members) == {"b"}
    assert _beat(groups, "a", 1, 530).error == 25  # UNKNOWN_MEMBER_ID: rejoin


def test_lost_answer_retry_and_fencing() -> None:
    groups = ConsumerGroups(CONFIG)
    joined = _join(groups, "a", 0)
    _join(groups, "b", 1)
    revoke = _beat(groups, "a", 1, 2, owned=joined.assignment)
    moved = _beat(groups, "a", 1, 3, owned=revoke.assignment)
    assert moved.member_epoch == 2
    # The answer was lost: the client retries with its previous epoch, owning what it has.
    assert _beat(groups, "a", 1, 4, owned=revoke.assignment).error == 0
    assert _beat(groups, "a", 1, 5, owned=joined.assignment).error == ErrorCode.FENCED_MEMBER_EPOCH
    assert _beat(groups, "a", 7, 6).error == ErrorCode.FENCED_MEMBER_EPOCH


def test_regex_subscription_follows_topics() -> None:
    groups = ConsumerGroups(CONFIG)
    joined = _join(groups, "a", 0, subscribed_topic_names=None, subscribed_topic_regex="orders.*")
    assert joined.assignment == {T: frozenset(range(4)), U: frozenset(range(2))}  # no __ topics
    grown = {**TOPICS, "orders-us": (uuid.UUID(int=10), 1)}
    result = _beat(groups, "a", 1, 1, owned=joined.assignment, topics=grown)
    assert result.member_epoch == 2 and uuid.UUID(int=10) in result.assignment
    assert groups.validate(HeartbeatRequest("g", "a", 0, rebalance_timeout_ms=1, owned={},
                                            subscribed_topic_regex="(")).error == 128


def test_range_assignor_by_request() -> None:
    groups = ConsumerGroups(CONFIG)
    _join(groups, "a", 0, server_assignor="range")
    _join(groups, "b", 0, server_assignor="range")
    assert groups.groups["g"].assignor == "range"
    first = _beat(groups, "a", 1, 1, owned={T: frozenset(range(4))})
    assert first.assignment == {T: frozenset({0, 1})}


def test_unloading_an_offsets_partition_drops_its_consumer_groups() -> None:
    """Cluster mode: leadership of the group's offsets partition moved away."""
    from kafkette.broker.groups import GroupCoordinatorState

    state = GroupCoordinatorState(CONFIG)
    assert _join(state.consumer_groups, "a", 0).error == 0
    other = next(i for i in range(CONFIG.offsets_topic_num_partitions)
                 if i != state.partition_for("g"))
    state.unload_partition(other, 16)
    assert state.consumer_groups.is_consumer_group("g")
    state.unload_partition(state.partition_for("g"), 16)
    assert not state.consumer_groups.is_consumer_group("g")


def test_offsets_cleanup_keeps_live_groups_and_drops_empty_ones() -> None:
    from kafkette.broker.groups import GroupCoordinatorState

    state = GroupCoordinatorState(CONFIG)
    assert _join(state.consumer_groups, "a", 0).error == 0
    committed = state.offsets.commit_offsets(group_id="g", generation_id=-1, member_id="",
                                     group_instance_id=None, offsets={("orders", 0): (5, -1, "")},
                                     now_ms=0)
    assert committed.result == {("orders", 0): 0}
    week = CONFIG.offsets_retention_ms
    assert state.expire_offsets(week * 2).result == 0  # a live member: nothing expires
    state.consumer_groups.heartbeat(HeartbeatRequest("g", "a", -1), TOPICS, week * 2)
    assert state.consumer_groups.is_consumer_group("g")  # empty, offsets still there
    assert state.expire_offsets(week * 4).result == 1
    assert not state.consumer_groups.is_consumer_group("g")


def test_lost_answer_retry_owning_a_subset() -> None:
    """Kafka's isSubset: the retry may own less than the assignment it never saw."""
    groups = ConsumerGroups(CONFIG)
    joined = _join(groups, "a", 0)
    assert joined.member_epoch == 1
    groups.remove_member(groups.groups["g"], groups.groups["g"].members["a"])
    _join(groups, "a", 10)  # rejoined: epoch 3, all four partitions
    member = groups.groups["g"].members["a"]
    member.previous_epoch = 2
    some = {T: frozenset({0, 1})}
    assert _beat(groups, "a", 2, 20, owned=some).error == 0
    fenced = _beat(groups, "a", 2, 30, owned={T: frozenset({0, 7})})
    assert fenced.error == ErrorCode.FENCED_MEMBER_EPOCH


def test_regex_resolved_once_per_topic_view() -> None:
    groups = ConsumerGroups(CONFIG)
    view = dict(TOPICS)
    first = _join(groups, "a", 0, topics=view, subscribed_topic_names=None,
                  subscribed_topic_regex="orders.*")
    assert set(first.assignment) == {T, U}
    view["orders-us"] = (uuid.UUID(int=10), 1)  # the same view object: not looked at again
    assert _beat(groups, "a", 1, 10, topics=view).member_epoch == 1
    fresh = dict(view)  # a new topic table: resolved again
    grown = _beat(groups, "a", 1, 20, topics=fresh)
    assert grown.member_epoch == 2 and uuid.UUID(int=10) in grown.assignment


def test_regex_matches_filtered_by_describe_permission() -> None:
    groups = ConsumerGroups(CONFIG)
    joined = groups.heartbeat(HeartbeatRequest(
        "g", "a", 0, rebalance_timeout_ms=500, owned={}, subscribed_topic_regex="orders.*",
        topic_filter=lambda names: {n for n in names if n != "orders-eu"},
    ), TOPICS, 0)
    assert set(joined.assignment) == {T}


def test_deadlines_come_from_a_heap_that_skips_renewed_ones() -> None:
    groups = ConsumerGroups(CONFIG)
    _join(groups, "a", 0)
    _join(groups, "b", 100, subscribed_topic_names=["orders-eu"])  # nothing to revoke
    assert groups.next_deadline_ms() == 1000
    _beat(groups, "a", 1, 500)  # renewed: its 1000 entry is stale now
    assert groups.next_deadline_ms() == 1100
    assert groups.tick(1099) == []
    assert groups.tick(1100) == [("g", "b")]
    assert set(groups.groups["g"].members) == {"a"}


def test_static_join_never_overwrites_another_member() -> None:
    groups = ConsumerGroups(CONFIG)
    _join(groups, "a", 0)
    refused = _join(groups, "a", 10, instance_id="i1")
    assert refused.error == 25
    member = groups.groups["g"].members["a"]
    assert member.instance_id is None and member.member_epoch == 1
    assert groups.groups["g"].static_members == {}


def test_transactional_commit_without_member_with_members() -> None:
    groups = ConsumerGroups(CONFIG)
    _join(groups, "a", 0)
    assert groups.validate_offset_commit("g", "", -1, -1, transactional=True) == 0
    assert groups.validate_offset_commit("g", "", -1, -1, transactional=True,
                                         instance_id="i") == 25
    assert groups.validate_offset_commit("g", "", -1, 9) == 25  # OffsetCommit: refused


def test_assignor_class_names() -> None:
    from kafkette.broker.config import ConfigError, load_config
    from kafkette.broker.groups.consumer.assignors import assignor_names

    assert assignor_names(
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"
    ) == ["range", "uniform"]
    load_config({"group.consumer.assignors":
                 "org.apache.kafka.coordinator.group.assignor.UniformAssignor"})
    for raw, message in (
        ("uniform,com.acme.Mine", "Invalid value com.acme.Mine for configuration "
         "group.consumer.assignors: Class com.acme.Mine cannot be found"),
        ("", "Invalid value  for configuration group.consumer.assignors: at least one "
         "assignor is required"),
    ):
        try:
            load_config({"group.consumer.assignors": raw})
        except ConfigError as exc:
            assert str(exc) == message
        else:
            raise AssertionError(raw)


# --- the reconciliation invariant, as a property ---------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_EVENT = st.tuples(st.sampled_from(["join", "leave", "grow", "beat", "beat-full", "lose"]),
                   st.integers(0, 5), st.sampled_from([None, "uniform", "range"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(_EVENT, min_size=1, max_size=120))
def test_no_partition_is_owned_by_two_members(events) -> None:
    """Whatever joins, leaves, topic growth and lost answers happen, no two clients ever
    own the same partition at once: a client owns what its last answer gave it until it
    heartbeats again, and a partition goes to a new owner only once the old one's
    heartbeat showed it released."""
    groups = ConsumerGroups(GroupConfig())
    partitions = 6
    clients: dict[str, list] = {}  # member -> [epoch, owned]
    now = 0
    for kind, who, assignor in events:
        now += 10
        topics = {"t": (T, partitions)}
        member = f"m{who}"
        if kind == "join" and member not in clients:
            r = groups.heartbeat(HeartbeatRequest(
                "g", member, 0, rebalance_timeout_ms=100_000, subscribed_topic_names=["t"],
                owned={}, server_assignor=assignor), topics, now)
            assert r.error == 0, r
            clients[member] = [r.member_epoch, dict(r.assignment or {})]
        elif kind == "leave" and member in clients:
            del clients[member]
            groups.heartbeat(HeartbeatRequest("g", member, -1), topics, now)
        elif kind == "grow":
            partitions = min(partitions + 1, 12)
        elif member in clients:
            epoch, owned = clients[member]
            full = kind == "beat-full"
            r = groups.heartbeat(
                HeartbeatRequest("g", member, epoch, owned=dict(owned) if full else None),
                topics, now,
            )
            if r.error:  # fenced: it drops everything and rejoins
                assert r.error in (ErrorCode.FENCED_MEMBER_EPOCH, 25), r
                clients[member] = [0, {}]
                r = groups.heartbeat(HeartbeatRequest(
                    "g", member, 0, rebalance_timeout_ms=100_000,
                    subscribed_topic_names=["t"], owned={}), topics, now)
                clients[member] = [r.member_epoch, dict(r.assignment or {})]
            elif kind != "lose" or r.assignment is None:  # "lose": the answer never came
                clients[member][0] = r.member_epoch
                if r.assignment is not None:
                    clients[member][1] = dict(r.assignment)
        seen: dict[tuple, str] = {}
        for name, (_epoch, owned) in clients.items():
            for tid, parts in owned.items():
                for p in parts:
                    assert (tid, p) not in seen, (p, name, seen.get((tid, p)))
                    seen[(tid, p)] = name


def test_classic_members_inside_a_consumer_group() -> None:
    """The upgraded group's classic members: their generation is their epoch, a target
    change is REBALANCE_IN_PROGRESS on Heartbeat, their rejoin reconciles, and commits
    check the generation (ILLEGAL_GENERATION), at any OffsetCommit version."""
    from kafkette.broker.groups.consumer.embedded_protocol import (
        decode_assignment,
        encode_assignment,
    )

    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x06orders" + b"\xff\xff\xff\xff"
    groups = ConsumerGroups(CONFIG)
    groups.upgrade_classic("g", 5, [{
        "member_id": "c1", "instance_id": None, "client_id": "x", "client_host": "/h",
        "rebalance_timeout_ms": 500, "session_timeout_ms": 1000,
        "protocols": [("range", subscription)],
        "assignment": encode_assignment({"orders": frozenset(range(4))}),
    }], TOPICS, 0)
    assert groups.classic_heartbeat("g", "c1", 5, 10) == 0
    assert groups.validate_offset_commit("g", "c1", 5, 2) == 0
    assert groups.validate_offset_commit("g", "c1", 4, 2) == 22  # ILLEGAL_GENERATION
    _join(groups, "n", 20)  # a consumer-protocol member: the target moves
    assert groups.classic_heartbeat("g", "c1", 5, 30) == 27  # REBALANCE_IN_PROGRESS
    error, member, generation, name = groups.classic_join(
        "g", "c1", None, [("range", subscription)], 1000, 500, "x", "/h", "unused", 40)
    assert (error, member, name) == (0, "c1", "range") and generation == 6
    error, _name, assignment = groups.classic_sync("g", "c1", generation)
    kept = decode_assignment(assignment)["orders"]
    assert error == 0 and len(kept) == 2
    assert groups.classic_heartbeat("g", "c1", generation, 50) == 0
    got = _beat(groups, "n", 6, 60)
    assert set(got.assignment[T]) == set(range(4)) - kept


def _subscription(topics, owned=None) -> bytes:
    """A ConsumerProtocolSubscription: v0 (eager) when ``owned`` is None, else v1."""
    import struct

    out = [struct.pack(">hi", 0 if owned is None else 1, len(topics))]
    for t in topics:
        out.append(struct.pack(">h", len(t)) + t.encode())
    out.append(struct.pack(">i", -1))
    if owned is not None:
        out.append(struct.pack(">i", len(owned)))
        for t, parts in owned.items():
            out.append(struct.pack(">h", len(t)) + t.encode())
            out.append(struct.pack(f">i{len(parts)}i", len(parts), *parts))
    return b"".join(out)


def _classic_join_twice(groups, now, metadata):
    """A new classic member: MEMBER_ID_REQUIRED, then the join with that id."""
    _e, kid, _gen, _name = groups.classic_join(
        "g", "", None, [("range", metadata)], 1000, 500, "k", "/h", "K", now)
    return groups.classic_join(
        "g", kid, None, [("range", metadata)], 1000, 500, "k", "/h", "unused", now)


def test_classic_rejoin_keeps_a_stable_members_partitions() -> None:
    """A classic member rejoining after a rebalance (eager v0 or cooperative v1 listing
    nothing it owns) still gets every partition of its target: no partition is left
    without an owner while the group reads Stable."""
    from kafkette.broker.groups.consumer.embedded_protocol import decode_assignment

    topics = {"t": (T, 2)}
    for eager in (True, False):
        groups = ConsumerGroups(CONFIG)
        got = _join(groups, "C", 0, topics=topics, subscribed_topic_names=["t"])
        meta = _subscription(["t"], None if eager else {})
        error, kid, gen, _name = _classic_join_twice(groups, 0, meta)
        assert error == 0
        assert groups.classic_heartbeat("g", kid, gen, 0) in (0, 27)
        got = _beat(groups, "C", got.member_epoch, 0, owned={T: frozenset(got.assignment[T])},
                    topics=topics)
        got = _beat(groups, "C", got.member_epoch, 0, owned={T: frozenset(got.assignment[T])},
                    topics=topics)
        error, kid, gen, _name = groups.classic_join(
            "g", kid, None, [("range", meta)], 1000, 500, "k", "/h", "unused", 0)
        assert error == 0
        error, _name, raw = groups.classic_sync("g", kid, gen)
        assert error == 0
        assert groups.classic_heartbeat("g", kid, gen, 0) == 0
        group = groups.groups["g"]
        assert group.state == "Stable"
        k_parts = decode_assignment(raw).get("t", frozenset())
        c_parts = group.members["C"].assigned.get(T, frozenset())
        assert set(k_parts) | set(c_parts) == {0, 1}, (eager, k_parts, c_parts)
        assert {p for (_t, p) in group.owners} == {0, 1}


def test_classic_rejoin_still_owning_revoked_partitions_keeps_them_pending() -> None:
    """A cooperative classic member that must give partitions up and rejoins still
    listing them stays UNREVOKED: the other member does not get them meanwhile."""
    from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

    topics = {"t": (T, 2)}
    meta = _subscription(["t"], {"t": [0, 1]})
    groups = ConsumerGroups(CONFIG)
    groups.upgrade_classic("g", 5, [{
        "member_id": "K", "instance_id": None, "client_id": "k", "client_host": "/h",
        "rebalance_timeout_ms": 30000, "session_timeout_ms": 10000,
        "protocols": [("cooperative-sticky", meta)],
        "assignment": encode_assignment({"t": frozenset({0, 1})}),
    }], topics, 0)
    got = _join(groups, "C", 0, topics=topics, subscribed_topic_names=["t"])
    assert groups.classic_heartbeat("g", "K", 5, 0) == 27
    for _ in range(2):
        error, _kid, _gen, _name = groups.classic_join(
            "g", "K", None, [("cooperative-sticky", meta)], 10000, 30000, "k", "/h", "", 0)
        assert error == 0
        assert groups.groups["g"].members["K"].state == "unrevoked_partitions"
    got = _beat(groups, "C", got.member_epoch, 0, owned={}, topics=topics)
    assert not (got.assignment or {}).get(T), got.assignment
    # Once K rejoins without them, C gets them.
    kept = _subscription(["t"], {"t": [0]})
    error, _kid, _gen, _name = groups.classic_join(
        "g", "K", None, [("cooperative-sticky", kept)], 10000, 30000, "k", "/h", "", 0)
    assert error == 0 and groups.groups["g"].members["K"].state == "stable"
    got = _beat(groups, "C", got.member_epoch, 0, owned={}, topics=topics)
    assert got.assignment[T] == frozenset({1})


class _Classic:
    """A GroupCoordinatorState driven by hand: classic calls, their replies by ticket."""

    def __init__(self, **config) -> None:
        import itertools

        from kafkette.broker.groups import GroupCoordinatorState

        config.setdefault("group_initial_rebalance_delay_ms", 0)
        ids = itertools.count(1)
        self.state = GroupCoordinatorState(
            GroupConfig(**config), new_member_id=lambda client: f"{client}-{next(ids)}")
        self.tickets = itertools.count(1)
        self.answers: dict = {}
        self.now = 0

    def absorb(self, outcome):
        for reply in outcome.replies:
            assert reply.ticket not in self.answers
            self.answers[reply.ticket] = reply.response
        deadline = self.state.next_deadline_ms()
        if deadline is not None and deadline <= self.now:
            self.absorb(self.state.tick(self.now))
        return outcome.result

    def join(self, member_id="", instance=None, topics=("orders",)) -> int:
        ticket = next(self.tickets)
        self.absorb(self.state.join_group(
            ticket, group_id="g", member_id=member_id, group_instance_id=instance,
            protocol_type="consumer", protocols=[("range", _subscription(list(topics)))],
            session_timeout_ms=10_000, rebalance_timeout_ms=30_000, now_ms=self.now,
            client_id="c", client_host="/h", require_known_member_id=True,
        ))
        return ticket

    def sync(self, member_id, generation, assignments=()) -> int:
        ticket = next(self.tickets)
        self.absorb(self.state.sync_group(
            ticket, group_id="g", generation_id=generation, member_id=member_id,
            group_instance_id=None, protocol_type=None, protocol_name=None,
            assignments=dict(assignments), now_ms=self.now,
        ))
        return ticket

    def heartbeat(self, req):
        return self.absorb(self.state.outcome(self.state.consumer_heartbeat(req, TOPICS, self.now)))

    def stable_member(self) -> tuple[str, int]:
        """One classic member, Stable, owning every partition of ``orders``."""
        from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

        first = self.answers[self.join()]
        joined = self.answers[self.join(first.member_id)]
        assert joined.error == 0, joined
        synced = self.answers[self.sync(joined.member_id, joined.generation_id, {
            joined.member_id: encode_assignment({"orders": frozenset(range(4))})})]
        assert synced.error == 0
        return joined.member_id, joined.generation_id


def _consumer_join(member="n", instance=None, epoch=0):
    return HeartbeatRequest("g", member, epoch, instance_id=instance, rebalance_timeout_ms=500,
                            subscribed_topic_names=["orders"], owned={} if epoch == 0 else None)


def test_upgrade_of_a_classic_group_mid_rebalance() -> None:
    """Kafka's convertToConsumerGroup: whatever the classic group's state; a pending
    JoinGroup is answered REBALANCE_IN_PROGRESS and the members keep their last
    assignment."""
    broker = _Classic()
    a, _gen = broker.stable_member()
    pending = broker.join()  # a new member: MEMBER_ID_REQUIRED, then its join
    newcomer = broker.answers[pending].member_id
    waiting = broker.join(newcomer)
    assert waiting not in broker.answers  # PreparingRebalance: waits for a
    got = broker.heartbeat(_consumer_join())
    assert got.error == 0, got
    assert broker.answers[waiting].error == 27  # REBALANCE_IN_PROGRESS
    group = broker.state.consumer_groups.groups["g"]
    assert set(group.members) == {a, newcomer, "n"}  # the newcomer with nothing yet
    assert broker.state.classic.classic_group_members("g") == 0


def test_upgrade_undone_when_the_joining_heartbeat_fails() -> None:
    """The upgrade and the heartbeat that triggers it succeed or fail together."""
    broker = _Classic(group_consumer_max_size=1)
    a, gen = broker.stable_member()
    got = broker.heartbeat(_consumer_join())
    assert got.error == 81, got  # GROUP_MAX_SIZE_REACHED
    assert not broker.state.consumer_groups.is_consumer_group("g")
    assert broker.state.classic.classic_group_members("g") == 1
    assert broker.state.heartbeat(group_id="g", generation_id=gen, member_id=a,
                                  group_instance_id=None, now_ms=0).result == 0


def test_consumer_member_of_a_lost_group_is_told_to_rejoin() -> None:
    """After a restart, a consumer-protocol heartbeat (epoch != 0) on an id that is now
    a non-empty classic group: UNKNOWN_MEMBER_ID (rejoin), not the fatal
    GROUP_ID_NOT_FOUND."""
    broker = _Classic()
    broker.stable_member()
    got = broker.heartbeat(_consumer_join(epoch=3))
    assert got.error == 25, got
    assert broker.state.classic.classic_group_members("g") == 1


def _upgraded_static(groups: ConsumerGroups) -> None:
    """A consumer group holding one static classic member "K" (instance "i") owning all
    of ``orders``."""
    from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

    groups.upgrade_classic("g", 5, [{
        "member_id": "K", "instance_id": "i", "client_id": "k", "client_host": "/h",
        "rebalance_timeout_ms": 500, "session_timeout_ms": 1000,
        "protocols": [("range", _subscription(["orders"]))],
        "assignment": encode_assignment({"orders": frozenset(range(4))}),
    }], TOPICS, 0)


def test_consumer_static_member_replaces_a_classic_one() -> None:
    """Kafka answers UNRELEASED_INSTANCE_ID only when both are consumer-protocol
    members: one replacing a classic member with the same instance id takes its place."""
    groups = ConsumerGroups(CONFIG)
    _upgraded_static(groups)
    got = _join(groups, "N", 10, instance_id="i")
    assert got.error == 0, got
    group = groups.groups["g"]
    assert set(group.members) == {"N"} and group.static_members == {"i": "N"}
    assert group.members["N"].classic is None
    assert set(group.owners.values()) == {"N"}


def test_restarted_static_classic_member_replaces_itself() -> None:
    """A classic join with an instance id registers it; a restarted static classic
    member (new member id, same instance id) replaces the old one, an old member id with
    that instance id is fenced."""
    groups = ConsumerGroups(CONFIG)
    _upgraded_static(groups)
    meta = _subscription(["orders"])
    error, new_id, gen, _name = groups.classic_join(
        "g", "", "i", [("range", meta)], 1000, 500, "k", "/h", "K2", 10)
    assert (error, new_id, gen) == (0, "K2", 5)
    group = groups.groups["g"]
    assert set(group.members) == {"K2"} and group.static_members == {"i": "K2"}
    assert set(group.owners.values()) == {"K2"} and len(group.owners) == 4
    error, *_ = groups.classic_join("g", "K", "i", [("range", meta)], 1000, 500, "k", "/h",
                                    "x", 20)
    assert error == 82  # FENCED_INSTANCE_ID
    # A new static classic member registers its instance id.
    error, j_id, _gen, _name = groups.classic_join(
        "g", "", "j", [("range", meta)], 1000, 500, "k", "/h", "J", 30)
    assert error == 0 and group.static_members["j"] == j_id


def test_classic_heartbeat_waits_on_unreleased_partitions_and_arms_a_join_timeout() -> None:
    """Kafka's: REBALANCE_IN_PROGRESS not while another member still holds the
    partitions (rejoining would not get them); once told to rejoin, a classic member that
    does not within its rebalance timeout is removed."""
    from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

    everything = _subscription(["orders"], {"orders": [0, 1, 2, 3]})
    groups = ConsumerGroups(CONFIG)
    groups.upgrade_classic("g", 5, [{
        "member_id": "K", "instance_id": None, "client_id": "k", "client_host": "/h",
        "rebalance_timeout_ms": 500, "session_timeout_ms": 1000,
        "protocols": [("cooperative-sticky", everything)],
        "assignment": encode_assignment({"orders": frozenset(range(4))}),
    }], TOPICS, 0)
    meta = _subscription(["orders"], {})
    error, k2, gen2, _name = groups.classic_join(
        "g", "", "i2", [("cooperative-sticky", meta)], 1000, 500, "k", "/h", "K2", 0)
    assert error == 0
    group = groups.groups["g"]
    assert group.members[k2].state == "unreleased_partitions"
    assert groups.classic_heartbeat("g", k2, gen2, 10) == 0  # K still holds them
    assert groups.classic_heartbeat("g", "K", 5, 10) == 27
    error, _k, gen, _name = groups.classic_join(
        "g", "K", None, [("cooperative-sticky", everything)], 1000, 500, "k", "/h", "", 20)
    assert error == 0 and group.members["K"].state == "unrevoked_partitions"
    kept = sorted(p for _t, p in _partitions_of(group.target["K"]))
    error, _k, gen, _name = groups.classic_join(
        "g", "K", None, [("cooperative-sticky", _subscription(["orders"], {"orders": kept}))],
        1000, 500, "k", "/h", "", 30)
    assert error == 0 and group.members["K"].state == "stable"
    assert groups.classic_heartbeat("g", k2, gen2, 40) == 27  # free now: rejoin
    assert groups.tick(300) == []
    assert groups.classic_heartbeat("g", k2, gen2, 400) == 27  # deadline not pushed back
    assert groups.classic_heartbeat("g", "K", gen, 400) == 0
    assert groups.tick(560) == [("g", k2)]  # 40 + its rebalance timeout passed


def _partitions_of(assignment):
    for tid, parts in assignment.items():
        for p in parts:
            yield tid, p


def test_classic_leave_by_instance_id_and_downgrade() -> None:
    """LeaveGroup v3+ names a static member by instance id (FENCED_INSTANCE_ID when the
    member id is someone else's); once only classic members are left, the group goes
    back to the classic protocol (Kafka's maybeDowngrade after a classic leave)."""
    from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

    broker = _Classic()
    state = broker.state
    state.consumer_groups.upgrade_classic("g", 5, [{
        "member_id": m, "instance_id": i, "client_id": "k", "client_host": "/h",
        "rebalance_timeout_ms": 500, "session_timeout_ms": 10_000,
        "protocols": [("range", _subscription(["orders"]))],
        "assignment": encode_assignment({"orders": frozenset(parts)}),
    } for m, i, parts in (("K", "i", {0, 1}), ("L", None, {2, 3}))], TOPICS, 0)
    left = state.leave_group(group_id="g", members=[("L", "i")], now_ms=0).result
    assert [r.error for r in left.members] == [82]  # FENCED_INSTANCE_ID
    assert state.consumer_groups.is_consumer_group("g")
    left = state.leave_group(group_id="g", members=[("", "i")], now_ms=0).result
    assert [r.error for r in left.members] == [0]
    assert not state.consumer_groups.is_consumer_group("g")
    assert state.classic.classic_group_members("g") == 1  # L, as a classic group member again


def test_classic_join_with_any_member_id_creates_it() -> None:
    """Kafka's classicGroupJoinToConsumerGroup (createIfNotExists): the id handed with
    MEMBER_ID_REQUIRED is not remembered; a join with an id the group does not know
    creates the member, so nothing grows with the MEMBER_ID_REQUIRED answers."""
    groups = ConsumerGroups(CONFIG)
    _upgraded_static(groups)
    meta = _subscription(["orders"])
    for n in range(3):
        error, given, *_ = groups.classic_join(
            "g", "", None, [("range", meta)], 1000, 500, "k", "/h", f"X{n}", 0)
        assert (error, given) == (79, f"X{n}")  # MEMBER_ID_REQUIRED
    assert set(groups.groups["g"].members) == {"K"}
    error, member, *_ = groups.classic_join(
        "g", "X1", None, [("range", meta)], 1000, 500, "k", "/h", "unused", 0)
    assert (error, member) == (0, "X1")
    assert set(groups.groups["g"].members) == {"K", "X1"}


def test_classic_paths_use_the_current_topic_view_and_classic_checks() -> None:
    """A classic JoinGroup/SyncGroup resolves against the topic view it brings (a topic
    created since the last consumer heartbeat is assigned); OffsetFetch from a classic
    member with another generation is ILLEGAL_GENERATION."""
    from kafkette.broker.groups.consumer.embedded_protocol import (
        decode_assignment,
        encode_assignment,
    )

    broker = _Classic()
    state = broker.state
    state.consumer_groups.upgrade_classic("g", 5, [{
        "member_id": "K", "instance_id": None, "client_id": "k", "client_host": "/h",
        "rebalance_timeout_ms": 500, "session_timeout_ms": 10_000,
        "protocols": [("range", _subscription(["orders"]))],
        "assignment": encode_assignment({"orders": frozenset(range(4))}),
    }], TOPICS, 0)
    fresh = {**TOPICS, "fresh": (uuid.UUID(int=11), 2)}
    ticket = next(broker.tickets)
    broker.absorb(state.join_group(
        ticket, group_id="g", member_id="K", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", _subscription(["orders", "fresh"]))], session_timeout_ms=10_000,
        rebalance_timeout_ms=500, now_ms=0, client_id="k", client_host="/h", topics=fresh))
    joined = broker.answers[ticket]
    assert joined.error == 0
    ticket = next(broker.tickets)
    broker.absorb(state.sync_group(
        ticket, group_id="g", generation_id=joined.generation_id, member_id="K",
        group_instance_id=None, protocol_type=None, protocol_name=None, assignments={},
        now_ms=0, topics=fresh))
    assert decode_assignment(broker.answers[ticket].assignment) == {
        "orders": frozenset(range(4)), "fresh": frozenset({0, 1})}
    consumer = state.consumer_groups
    assert consumer.validate_offset_fetch("g", "K", joined.generation_id) == 0
    assert consumer.validate_offset_fetch("g", "K", 1) == 22  # ILLEGAL_GENERATION


def test_downgrade_generation_and_max_size() -> None:
    """Kafka's downgrade: the classic group's generation is the consumer group's epoch;
    no downgrade when the classic members exceed group.max.size."""
    import dataclasses

    from kafkette.broker.groups.consumer.embedded_protocol import encode_assignment

    for max_size, downgraded in ((1, False), (10, True)):
        broker = _Classic()
        state = broker.state
        state.consumer_groups.upgrade_classic("g", 5, [{
            "member_id": m, "instance_id": None, "client_id": "k", "client_host": "/h",
            "rebalance_timeout_ms": 500, "session_timeout_ms": 10_000,
            "protocols": [("range", _subscription(["orders"]))],
            "assignment": encode_assignment({"orders": frozenset(parts)}),
        } for m, parts in (("K", {0, 1}), ("L", {2, 3}))], TOPICS, 0)
        got = broker.heartbeat(_consumer_join())
        assert got.error == 0
        state.config = dataclasses.replace(state.config, group_max_size=max_size)
        assert broker.heartbeat(HeartbeatRequest("g", "n", -1)).error == 0
        assert state.consumer_groups.is_consumer_group("g") is not downgraded
        if downgraded:
            assert state.classic.groups["g"].generation_id == 7  # 5, n's join, n's leave


def test_classic_join_without_a_shared_protocol_is_refused() -> None:
    """Kafka's supportsClassicProtocols: a classic member inside a consumer group must
    share a protocol with the other classic members, or a later downgrade could elect
    none (it crashed the coordinator's timer before)."""
    groups = ConsumerGroups(CONFIG)
    _join(groups, "c", 0)
    metadata = _subscription(["orders"])
    error, _kid, _gen, _name = _classic_join_twice(groups, 0, metadata)
    assert error == 0
    _e, other, _g, _n = groups.classic_join(
        "g", "", None, [("roundrobin", metadata)], 1000, 500, "k", "/h", "R", 0,
        require_known_member_id=False)
    assert _e == 23  # INCONSISTENT_GROUP_PROTOCOL
    assert other not in groups.groups["g"].members


def test_consumer_member_replacing_a_classic_one_drops_its_join_timer() -> None:
    """A static classic member told to rejoin has a join deadline; the consumer-protocol
    member that takes its instance id over must not be removed by it."""
    groups = ConsumerGroups(CONFIG)
    _join(groups, "c", 0)
    _e, kid, gen, _n = groups.classic_join(
        "g", "", "inst", [("range", _subscription(["orders"]))], 45000, 1000, "k", "/h",
        "K1", 0, require_known_member_id=False)
    _join(groups, "d", 0)  # the target moves: the classic member is told to rejoin
    assert groups.classic_heartbeat("g", kid, gen, 0) == 27
    assert groups.groups["g"].members[kid].join_deadline_ms is not None
    got = _join(groups, "K2", 10, instance_id="inst")
    assert got.error == 0
    assert groups.groups["g"].members["K2"].join_deadline_ms is None
    for now in (500, 1001):
        groups.tick(now)
        got = _beat(groups, "K2", got.member_epoch, now,
                    owned={T: frozenset((got.assignment or {}).get(T, ()))})
        assert got.error == 0, (now, got)
    assert "K2" in groups.groups["g"].members
