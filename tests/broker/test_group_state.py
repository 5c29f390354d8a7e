"""The classic group state machine, driven the way the broker drives it.

``Broker`` below plays the broker glue: it hands out tickets, collects replies,
appends records to an in-memory ``__consumer_offsets`` and calls ``tick`` whenever
``next_deadline_ms`` has passed. Time is simulated, so timer tests are exact.
"""

from __future__ import annotations

import itertools
import struct

import pytest

from kafkette.broker.groups import (
    GroupConfig,
    GroupCoordinatorState,
    GroupState,
    JoinResponse,
    SyncResponse,
)
from kafkette.broker.groups import offsets_records as rec
from kafkette.wire.errors import ErrorCode as E

SESSION = 10_000
REBALANCE = 30_000
DELAY = 3000  # group.initial.rebalance.delay.ms, Kafka's default
FORM = 2 * DELAY  # joins arriving together: the delay runs once more for the latecomers


def consumer_subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 naming ``topics`` (no user data)."""
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


class Broker:
    def __init__(self, **config) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", DELAY)
        self.now = 1_000_000
        self.ids = itertools.count(1)
        self.state = GroupCoordinatorState(
            GroupConfig(**config), new_member_id=lambda client: f"{client}-{next(self.ids)}"
        )
        self.tickets = itertools.count(1)
        self.answers: dict[int, JoinResponse | SyncResponse] = {}
        self.log: list[rec_tuple] = []

    # the broker's duty after every call: persist, answer, fire due timers
    def absorb(self, outcome):
        for r in outcome.records:
            assert r.partition == self.state.partition_for(rec_group(r.key))
            self.log.append((r.key, r.value))
        for reply in outcome.replies:
            assert reply.ticket not in self.answers, f"ticket {reply.ticket} answered twice"
            self.answers[reply.ticket] = reply.response
        deadline = self.state.next_deadline_ms()
        if deadline is not None and deadline <= self.now:
            self.absorb(self.state.tick(self.now))
        return outcome.result

    def advance(self, ms: int) -> None:
        """Move the clock, firing timers at their exact deadlines on the way."""
        target = self.now + ms
        while True:
            deadline = self.state.next_deadline_ms()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.absorb(self.state.tick(self.now))
        self.now = target

    def keep_alive(self, ms: int, generation: int, *members) -> None:
        """Advance ``ms`` while ``members`` (ids, or (id, instance) pairs) heartbeat
        every SESSION/4, as live clients do."""
        end = self.now + ms
        while self.now < end:
            self.advance(min(SESSION // 4, end - self.now))
            for m in members:
                mid, inst = m if isinstance(m, tuple) else (m, None)
                self.heartbeat(mid, generation, instance=inst)

    def join(self, member_id="", *, group="g", instance=None, protocols=None, session=SESSION,
             rebalance=REBALANCE, ptype="consumer", client="c", v4=True, skip=False) -> int:
        ticket = next(self.tickets)
        self.absorb(self.state.join_group(
            ticket, group_id=group, member_id=member_id, group_instance_id=instance,
            protocol_type=ptype, protocols=protocols or [("range", consumer_subscription("t"))],
            session_timeout_ms=session, rebalance_timeout_ms=rebalance, now_ms=self.now,
            client_id=client, client_host="/127.0.0.1", require_known_member_id=v4,
            supports_skip_assignment=skip,
        ))
        return ticket

    def sync(self, member_id, generation, *, group="g", instance=None, assignments=(),
             ptype=None, pname=None) -> int:
        ticket = next(self.tickets)
        self.absorb(self.state.sync_group(
            ticket, group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance, protocol_type=ptype, protocol_name=pname,
            assignments=dict(assignments), now_ms=self.now,
        ))
        return ticket

    def heartbeat(self, member_id, generation, *, group="g", instance=None) -> int:
        return self.absorb(self.state.heartbeat(
            group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance, now_ms=self.now))

    def commit(self, offsets, *, group="g", generation=-1, member_id="", instance=None):
        return self.absorb(self.state.offsets.commit_offsets(
            group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=instance, offsets=offsets, now_ms=self.now))

    def leave(self, members, *, group="g"):
        return self.absorb(self.state.leave_group(group_id=group, members=members,
                                                  now_ms=self.now))

    def answer(self, ticket):
        return self.answers.get(ticket)

    # --- composite steps -------------------------------------------------------------

    def new_member(self, client="c", **kw) -> tuple[str, int]:
        """v4+ first join: MEMBER_ID_REQUIRED, then the real join; returns (id, ticket)."""
        first = self.answer(self.join(client=client, **kw))
        assert first.error == E.MEMBER_ID_REQUIRED and first.member_id
        assert first.generation_id == -1 and first.leader == ""
        return first.member_id, self.join(first.member_id, client=client, **kw)

    def stable_group(self, n: int, group="g", **kw) -> tuple[list[str], int]:
        """n members joined and synced; returns (member ids in join order, generation)."""
        joined = [self.new_member(client=f"c{i}", group=group, **kw) for i in range(n)]
        self.advance(FORM)
        answers = [self.answer(t) for _, t in joined]
        assert all(a is not None and a.error == E.NONE for a in answers), answers
        gen = answers[0].generation_id
        leader = answers[0].leader
        ids = [mid for mid, _ in joined]
        syncs = {}
        for mid in ids:
            if mid != leader:
                syncs[mid] = self.sync(mid, gen, group=group)
        syncs[leader] = self.sync(leader, gen, group=group,
                                  assignments={m: f"to-{m}".encode() for m in ids})
        for mid, t in syncs.items():
            assert self.answer(t) == SyncResponse(E.NONE, "consumer", "range",
                                                  f"to-{mid}".encode())
        assert self.state.classic.group_state(group) is GroupState.STABLE
        return ids, gen


rec_tuple = tuple[bytes, "bytes | None"]


def rec_group(key: bytes) -> str:
    return rec.decode_key(key).group_id


# --- join / sync / heartbeat ---------------------------------------------------------


def test_single_member_round() -> None:
    b = Broker()
    member_id, ticket = b.new_member()
    b.advance(DELAY)
    a = b.answer(ticket)
    assert a == JoinResponse(
        error=E.NONE, generation_id=1, protocol_type="consumer", protocol_name="range",
        leader=member_id, member_id=member_id,
        members=(a.members[0],), skip_assignment=False,
    )
    assert [m.member_id for m in a.members] == [member_id]
    assert a.members[0].metadata == consumer_subscription("t")
    assert b.state.classic.group_state("g") is GroupState.COMPLETING_REBALANCE
    assert b.heartbeat(member_id, 1) == E.NONE  # allowed while awaiting sync
    s = b.sync(member_id, 1, assignments={member_id: b"A"}, ptype="consumer", pname="range")
    assert b.answer(s) == SyncResponse(E.NONE, "consumer", "range", b"A")
    assert b.state.classic.group_state("g") is GroupState.STABLE
    assert b.heartbeat(member_id, 1) == E.NONE
    # the completed generation was persisted
    meta = [v for k, v in b.log if isinstance(rec.decode_key(k), rec.GroupMetadataKey)]
    value = rec.decode_group_metadata_value(meta[-1])
    assert (value.generation, value.protocol, value.leader) == (1, "range", member_id)
    assert [(m.member_id, m.assignment) for m in value.members] == [(member_id, b"A")]


def test_three_members_round_followers_wait_for_leader() -> None:
    b = Broker(group_initial_rebalance_delay_ms=3000)
    joined = [b.new_member(client=f"c{i}") for i in range(3)]
    assert all(b.answer(t) is None for _, t in joined)  # initial delay still running
    b.advance(3000)
    # members 2 and 3 arrived during the delay, so Kafka waits one more delay
    assert all(b.answer(t) is None for _, t in joined)
    b.advance(3000)
    answers = [b.answer(t) for _, t in joined]
    ids = [mid for mid, _ in joined]
    assert {a.generation_id for a in answers} == {1}
    leader = answers[0].leader
    assert leader == ids[0]
    for mid, a in zip(ids, answers, strict=True):
        assert a.member_id == mid and a.leader == leader
        assert (len(a.members) == 3) == (mid == leader)
    followers = [m for m in ids if m != leader]
    pending = [b.sync(m, 1) for m in followers]
    assert all(b.answer(t) is None for t in pending)
    lt = b.sync(leader, 1, assignments={m: m.encode() for m in ids})
    for mid, t in zip([*followers, leader], [*pending, lt], strict=True):
        assert b.answer(t) == SyncResponse(E.NONE, "consumer", "range", mid.encode())


def test_leader_assignment_missing_members_get_empty() -> None:
    b = Broker()
    (m1, _), (m2, _) = b.new_member("a"), b.new_member("b")
    b.advance(FORM)
    s2 = b.sync(m2, 1)
    s1 = b.sync(m1, 1, assignments={m1: b"x", "stranger": b"y"})
    assert b.answer(s1).assignment == b"x"
    assert b.answer(s2) == SyncResponse(E.NONE, "consumer", "range", b"")


def test_member_id_required_only_from_v4() -> None:
    b = Broker()
    t = b.join(v4=False)
    b.advance(DELAY)
    a = b.answer(t)
    assert a.error == E.NONE and a.member_id == "c-1" and a.generation_id == 1


def test_pending_member_expires_after_session_timeout() -> None:
    b = Broker()
    first = b.answer(b.join(session=7000))
    assert first.error == E.MEMBER_ID_REQUIRED
    assert b.state.next_deadline_ms() == b.now + 7000
    b.advance(7000)
    late = b.answer(b.join(first.member_id))
    assert late.error == E.UNKNOWN_MEMBER_ID


def test_pending_member_holds_up_rebalance_until_it_joins() -> None:
    b = Broker()
    ids, gen = b.stable_group(1)
    rejoin = b.join(ids[0])  # leader rejoin -> rebalance
    other = b.answer(b.join(client="x"))
    assert other.error == E.MEMBER_ID_REQUIRED
    # the leader alone had rejoined, so the rebalance finished before the pending member
    assert b.answer(rejoin).generation_id == gen + 1
    t2 = b.join(other.member_id, client="x")
    assert b.answer(t2) is None  # triggers the next rebalance; leader must rejoin
    assert b.heartbeat(ids[0], gen + 1) == E.REBALANCE_IN_PROGRESS
    t1 = b.join(ids[0])
    assert b.answer(t1).generation_id == b.answer(t2).generation_id == gen + 2


def test_initial_rebalance_delay_extends_while_members_arrive() -> None:
    b = Broker(group_initial_rebalance_delay_ms=3000)
    _, t1 = b.new_member("a", rebalance=10_000)
    b.advance(2000)
    _, t2 = b.new_member("b", rebalance=10_000)
    b.advance(999)
    assert b.answer(t1) is None
    b.advance(1)  # t=3000: a member arrived during the delay -> wait once more
    assert b.answer(t1) is None and b.answer(t2) is None
    b.advance(2999)
    assert b.answer(t1) is None
    b.advance(1)  # t=6000
    assert b.answer(t1).generation_id == b.answer(t2).generation_id == 1


def test_initial_rebalance_delay_without_newcomers() -> None:
    b = Broker(group_initial_rebalance_delay_ms=3000)
    _, t1 = b.new_member("a")
    b.advance(2999)
    assert b.answer(t1) is None
    b.advance(1)
    assert b.answer(t1).error == E.NONE


def test_initial_delay_is_capped_by_rebalance_timeout() -> None:
    b = Broker(group_initial_rebalance_delay_ms=3000)
    _, t1 = b.new_member("a", rebalance=4000)
    b.advance(2000)
    _, t2 = b.new_member("b", rebalance=4000)
    b.advance(1000)  # t=3000 -> one more wait of min(3000, 1000)
    assert b.answer(t1) is None
    b.advance(1000)
    assert b.answer(t1).error == b.answer(t2).error == E.NONE


def test_fourth_member_triggers_rebalance() -> None:
    b = Broker()
    ids, gen = b.stable_group(3)
    d_id, d_ticket = b.new_member("d")
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    assert b.answer(d_ticket) is None
    for mid in ids:
        assert b.heartbeat(mid, gen) == E.REBALANCE_IN_PROGRESS
    rejoins = [b.join(mid) for mid in ids]
    answers = [b.answer(t) for t in [*rejoins, d_ticket]]
    assert all(a.error == E.NONE and a.generation_id == gen + 1 for a in answers)
    leader = answers[0].leader
    assert leader == ids[0]
    everyone = [*ids, d_id]
    assert sorted(m.member_id for m in answers[0].members) == sorted(everyone)
    syncs = {m: b.sync(m, gen + 1) for m in everyone if m != leader}
    syncs[leader] = b.sync(leader, gen + 1, assignments={m: m.encode() for m in everyone})
    for m, t in syncs.items():
        assert b.answer(t).assignment == m.encode()


def test_session_expiry_removes_member_and_rebalances() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    b.advance(SESSION - 1)
    assert b.heartbeat(a, gen) == E.NONE
    assert b.state.classic.member_ids("g") == [a, c]
    b.advance(1)
    # c never heartbeated: it was removed at its deadline
    assert b.state.classic.member_ids("g") == [a]
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    assert b.heartbeat(a, gen) == E.REBALANCE_IN_PROGRESS
    assert b.heartbeat(c, gen) == E.UNKNOWN_MEMBER_ID
    t = b.join(a)
    ans = b.answer(t)
    assert ans.generation_id == gen + 1 and [m.member_id for m in ans.members] == [a]


def test_rebalance_timeout_kicks_members_that_did_not_rejoin() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    t = b.join(a)  # the leader asks for a rebalance
    assert b.answer(t) is None
    b.keep_alive(REBALANCE - 1, gen, c)  # c heartbeats but never rejoins
    assert b.heartbeat(c, gen) == E.REBALANCE_IN_PROGRESS
    assert b.answer(t) is None
    b.advance(1)
    ans = b.answer(t)
    assert ans.generation_id == gen + 1
    assert [m.member_id for m in ans.members] == [a]
    assert b.heartbeat(c, gen) == E.UNKNOWN_MEMBER_ID


def test_follower_that_never_syncs_is_removed() -> None:
    b = Broker()
    (m1, _), (m2, _) = b.new_member("a"), b.new_member("b")
    b.advance(FORM)
    s1 = b.sync(m1, 1, assignments={m1: b"1", m2: b"2"})
    assert b.answer(s1).assignment == b"1"
    b.keep_alive(REBALANCE - 1, 1, m1, m2)
    assert b.state.classic.member_ids("g") == [m1, m2]
    b.advance(1)
    assert b.state.classic.member_ids("g") == [m1]
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE


def test_new_member_join_waits_at_most_five_minutes() -> None:
    b = Broker()
    ids, gen = b.stable_group(1, rebalance=1_000_000)
    _, t = b.new_member("late", rebalance=1_000_000)
    # the old member keeps heartbeating but never rejoins; the newcomer's JoinGroup is
    # bounded by Kafka's 5-minute new-member timeout.
    for _ in range(80):
        b.advance(SESSION // 2)
        if b.answer(t) is not None:
            break
        b.heartbeat(ids[0], gen)
    assert b.answer(t).error == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(
    ("offers", "chosen"),
    [
        ([["range"]], "range"),
        ([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin"]], "roundrobin"),
        ([["a", "b"], ["b", "a"], ["b", "a"]], "b"),
        ([["a", "b"], ["a", "b"], ["b", "a"]], "a"),
        ([["cooperative-sticky", "range"], ["range", "cooperative-sticky"]],
         "cooperative-sticky"),  # tie: first vote in join order wins
    ],
)
def test_protocol_selection_by_vote(offers, chosen) -> None:
    b = Broker()
    tickets = [
        b.new_member(f"c{i}", protocols=[(p, p.encode()) for p in offer])[1]
        for i, offer in enumerate(offers)
    ]
    b.advance(FORM)
    answers = [b.answer(t) for t in tickets]
    assert {a.protocol_name for a in answers} == {chosen}
    assert all(m.metadata == chosen.encode() for m in answers[0].members)


@pytest.mark.parametrize(
    ("group", "ptype", "protocols"),
    [
        ("g", "consumer", [("roundrobin", b"")]),  # no protocol every member supports
        ("g", "connect", [("range", b"")]),  # another protocol type
        ("fresh", "", [("range", b"")]),  # an empty group still needs a type...
        ("fresh", "consumer", []),  # ...and at least one protocol
    ],
)
def test_inconsistent_group_protocol(group, ptype, protocols) -> None:
    b = Broker()
    b.stable_group(1)
    t = next(b.tickets)
    b.absorb(b.state.join_group(
        t, group_id=group, member_id="", group_instance_id=None, protocol_type=ptype,
        protocols=protocols, session_timeout_ms=SESSION, rebalance_timeout_ms=REBALANCE,
        now_ms=b.now))
    assert b.answer(t).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert b.state.classic.group_state("g") is GroupState.STABLE
    assert {x.group_id for x in b.state.classic.list_groups()} == {"g"}  # no phantom group


def test_empty_protocol_list_refused_even_by_new_group() -> None:
    b = Broker()
    t = next(b.tickets)
    out = b.state.join_group(t, group_id="n", member_id="", group_instance_id=None,
                             protocol_type="consumer", protocols=[], session_timeout_ms=SESSION,
                             rebalance_timeout_ms=REBALANCE, now_ms=b.now)
    assert out.replies[0].response.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert b.state.classic.list_groups() == []  # no phantom group left behind


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"group": ""}, E.INVALID_GROUP_ID),
        ({"session": 5999}, E.INVALID_SESSION_TIMEOUT),
        ({"session": 1_800_001}, E.INVALID_SESSION_TIMEOUT),
        ({"member_id": "ghost"}, E.UNKNOWN_MEMBER_ID),
    ],
)
def test_join_validation(kwargs, error) -> None:
    b = Broker()
    assert b.answer(b.join(**kwargs)).error == error


def test_group_max_size() -> None:
    b = Broker(group_max_size=2)
    b.stable_group(2)
    # checked before a member id is handed out
    assert b.answer(b.join(client="third")) == JoinResponse(E.GROUP_MAX_SIZE_REACHED)
    assert b.state.classic.group_state("g") is GroupState.STABLE


def test_follower_rejoin_with_same_metadata_in_stable_gets_current_generation() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    ans = b.answer(b.join(c))
    assert (ans.error, ans.generation_id, ans.leader, ans.members) == (E.NONE, gen, a, ())
    assert b.state.classic.group_state("g") is GroupState.STABLE


def test_follower_rejoin_with_new_metadata_rebalances() -> None:
    b = Broker()
    (_a, c), _gen = b.stable_group(2)
    t = b.join(c, protocols=[("range", consumer_subscription("t", "u"))])
    assert b.answer(t) is None
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE


def test_duplicate_join_supersedes_the_waiting_one() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    t1 = b.join(a)
    t2 = b.join(a)
    assert b.answer(t1).error == E.REBALANCE_IN_PROGRESS
    assert b.answer(t2) is None
    b.join(c)
    assert b.answer(t2).generation_id == gen + 1


def test_rebalance_during_completing_answers_waiting_syncs() -> None:
    b = Broker()
    (_m1, _), (m2, _) = b.new_member("a"), b.new_member("b")
    b.advance(FORM)
    s2 = b.sync(m2, 1)
    _, t3 = b.new_member("c")
    assert b.answer(s2) == SyncResponse(E.REBALANCE_IN_PROGRESS)
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    assert b.answer(t3) is None


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("no_group", E.UNKNOWN_MEMBER_ID),
        ("empty_group_id", E.INVALID_GROUP_ID),
        ("unknown_member", E.UNKNOWN_MEMBER_ID),
        ("wrong_generation", E.ILLEGAL_GENERATION),
        ("wrong_type", E.INCONSISTENT_GROUP_PROTOCOL),
        ("wrong_name", E.INCONSISTENT_GROUP_PROTOCOL),
        ("preparing", E.REBALANCE_IN_PROGRESS),
    ],
)
def test_sync_errors(case, error) -> None:
    b = Broker()
    (a, _c), gen = b.stable_group(2)
    kw = {"member_id": a, "generation": gen}
    if case == "no_group":
        kw["group"] = "nope"
    elif case == "empty_group_id":
        kw["group"] = ""
    elif case == "unknown_member":
        kw["member_id"] = "ghost"
    elif case == "wrong_generation":
        kw["generation"] = gen + 7
    elif case == "wrong_type":
        kw["ptype"] = "connect"
    elif case == "wrong_name":
        kw["pname"] = "roundrobin"
    elif case == "preparing":
        b.join(a)
    member_id, generation = kw.pop("member_id"), kw.pop("generation")
    assert b.answer(b.sync(member_id, generation, **kw)) == SyncResponse(error)


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("no_group", E.UNKNOWN_MEMBER_ID),
        ("empty_group_id", E.INVALID_GROUP_ID),
        ("unknown_member", E.UNKNOWN_MEMBER_ID),
        ("wrong_generation", E.ILLEGAL_GENERATION),
        ("ok", E.NONE),
    ],
)
def test_heartbeat_errors(case, error) -> None:
    b = Broker()
    (a,), gen = b.stable_group(1)
    kw = {"group": {"no_group": "nope", "empty_group_id": ""}.get(case, "g")}
    member = "ghost" if case == "unknown_member" else a
    generation = gen + 1 if case == "wrong_generation" else gen
    assert b.heartbeat(member, generation, **kw) == error


# --- static membership ------------------------------------------------------------------


def static_group(b: Broker, n: int, protocols=None) -> tuple[list[str], int]:
    tickets = [b.join(client=f"s{i}", instance=f"inst-{i}", protocols=protocols)
               for i in range(n)]
    b.advance(FORM)
    answers = [b.answer(t) for t in tickets]
    ids = [a.member_id for a in answers]
    gen = answers[0].generation_id
    leader = answers[0].leader
    for mid in ids:
        if mid != leader:
            b.sync(mid, gen, instance=f"inst-{ids.index(mid)}")
    b.sync(leader, gen, instance="inst-0", assignments={m: m.encode() for m in ids})
    assert b.state.classic.group_state("g") is GroupState.STABLE
    return ids, gen


def test_static_members_skip_member_id_required() -> None:
    b = Broker()
    t = b.join(instance="inst-0")
    b.advance(DELAY)
    ans = b.answer(t)
    assert ans.error == E.NONE and ans.generation_id == 1


def test_static_member_restart_rejoins_without_rebalance() -> None:
    b = Broker()
    (leader, follower), gen = static_group(b, 2)
    records_before = len(b.log)
    ans = b.answer(b.join(client="s1", instance="inst-1"))  # restarted: no member id
    assert ans.error == E.NONE and ans.generation_id == gen
    new_id = ans.member_id
    assert new_id != follower and ans.leader == leader and ans.members == ()
    assert b.state.classic.group_state("g") is GroupState.STABLE
    assert len(b.log) == records_before + 1  # the new member id is persisted
    s = b.sync(new_id, gen, instance="inst-1")
    assert b.answer(s).assignment == follower.encode()  # keeps its assignment
    assert b.heartbeat(new_id, gen, instance="inst-1") == E.NONE
    # the old incarnation is fenced everywhere
    assert b.heartbeat(follower, gen, instance="inst-1") == E.FENCED_INSTANCE_ID
    assert b.answer(b.join(follower, instance="inst-1")).error == E.FENCED_INSTANCE_ID
    assert b.answer(b.sync(follower, gen, instance="inst-1")) == SyncResponse(
        E.FENCED_INSTANCE_ID)
    assert b.commit({("t", 0): (5, -1, "")}, generation=gen, member_id=follower,
                    instance="inst-1") == {("t", 0): E.FENCED_INSTANCE_ID}
    assert b.leave([(follower, "inst-1")]).members[0].error == E.FENCED_INSTANCE_ID


@pytest.mark.parametrize("skip", [False, True])
def test_static_leader_restart(skip) -> None:
    b = Broker()
    (leader, follower), gen = static_group(b, 2)
    ans = b.answer(b.join(client="s0", instance="inst-0", skip=skip))
    assert ans.error == E.NONE and ans.generation_id == gen
    assert b.state.classic.group_state("g") is GroupState.STABLE
    if skip:
        # v9+: told it is the leader, given the members, asked not to assign
        assert ans.skip_assignment and ans.leader == ans.member_id
        assert sorted(m.member_id for m in ans.members) == sorted([ans.member_id, follower])
    else:
        # older clients are given the old leader id so they do not assign
        assert not ans.skip_assignment and ans.leader == leader and ans.members == ()


@pytest.mark.parametrize(
    ("offer", "rebalances"),
    [
        ([("range", b"new-metadata")], False),  # same choice of protocol: just persisted
        ([("roundrobin", b""), ("range", b"")], False),  # range is still the vote winner
        ([("roundrobin", b"")], True),  # the group's protocol would change
    ],
)
def test_static_member_restart_with_changed_protocols(offer, rebalances) -> None:
    b = Broker()
    both = [("range", consumer_subscription("t")), ("roundrobin", consumer_subscription("t"))]
    (leader, _follower), gen = static_group(b, 2, protocols=both)
    t = b.join(client="s1", instance="inst-1", protocols=offer)
    if rebalances:
        assert b.answer(t) is None
        assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
        b.join(leader, instance="inst-0", protocols=both)
        assert b.answer(t).protocol_name == "roundrobin"
        assert b.answer(t).generation_id == gen + 1
    else:
        assert b.answer(t).error == E.NONE and b.answer(t).generation_id == gen
        assert b.state.classic.group_state("g") is GroupState.STABLE


def test_static_member_replaced_while_waiting_is_fenced() -> None:
    b = Broker()
    (leader, follower), gen = static_group(b, 2)
    t_old = b.join(follower, instance="inst-1",
                   protocols=[("range", consumer_subscription("other"))])  # -> rebalance
    assert b.answer(t_old) is None
    t_new = b.join(client="s1", instance="inst-1")
    assert b.answer(t_old).error == E.FENCED_INSTANCE_ID
    t_lead = b.join(leader, instance="inst-0")
    assert b.answer(t_new).error == E.NONE
    assert b.answer(t_lead).generation_id == gen + 1


def test_static_member_not_rejoining_is_kept_through_rebalance() -> None:
    b = Broker()
    (leader, follower), gen = static_group(b, 2)
    t = b.join(leader, instance="inst-0")
    b.keep_alive(REBALANCE, gen, (follower, "inst-1"))
    ans = b.answer(t)
    # static members are not dropped at the rebalance timeout (their session decides)
    assert ans.generation_id == gen + 1
    assert sorted(m.member_id for m in ans.members) == sorted([leader, follower])


def test_completed_sync_answers_the_leader_first() -> None:
    # The broker writes the replies in their order, in one pass: the leader whose
    # SyncGroup completes the sync comes first, even behind an earlier member.
    b = Broker()
    (s0, s1), gen = static_group(b, 2)
    t2 = b.join(client="s2", instance="inst-2")  # a new member: rebalance
    t1 = b.join(s1, instance="inst-1")
    b.keep_alive(REBALANCE, gen, (s0, "inst-0"))  # s0 stays (static) but never rejoins
    s2 = b.answer(t2).member_id
    assert b.answer(t1).leader == s1 and b.state.classic.member_ids("g") == [s0, s1, s2]
    waiting = [b.sync(s0, gen + 1, instance="inst-0"), b.sync(s2, gen + 1, instance="inst-2")]
    leader = b.sync(s1, gen + 1, instance="inst-1", assignments={s1: b"1"})
    assert list(b.answers)[-3:] == [leader, *waiting]


# --- LeaveGroup --------------------------------------------------------------------------


def test_batched_leave() -> None:
    b = Broker()
    (a, c, d), gen = b.stable_group(3)
    result = b.leave([(a, None), (c, None), ("ghost", None)])
    assert result.error == E.NONE
    assert [(m.member_id, m.error) for m in result.members] == [
        (a, E.NONE), (c, E.NONE), ("ghost", E.UNKNOWN_MEMBER_ID)]
    assert b.state.classic.member_ids("g") == [d]
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    ans = b.answer(b.join(d))
    assert ans.generation_id == gen + 1 and ans.leader == d


def test_leave_by_instance_id_and_last_member_empties_group() -> None:
    b = Broker()
    (_leader,), gen = static_group(b, 1)
    result = b.leave([("", "inst-0"), ("", "inst-9")])
    assert [m.error for m in result.members] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert b.state.classic.group_state("g") is GroupState.EMPTY
    assert b.state.classic.generation("g") == gen + 1
    value = rec.decode_group_metadata_value(b.log[-1][1])
    assert (value.generation, value.protocol, value.leader, value.members) == (
        gen + 1, None, None, ())


def test_leave_of_waiting_member_answers_its_join() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    t = b.join(a)
    b.leave([(a, None)])
    assert b.answer(t).error == E.UNKNOWN_MEMBER_ID
    t_c = b.join(c)
    assert b.answer(t_c).generation_id == gen + 1


def test_leave_pending_member_and_unknown_group() -> None:
    b = Broker()
    first = b.answer(b.join())
    assert b.leave([(first.member_id, None)]).members[0].error == E.NONE
    r = b.leave([("x", None)], group="nope")
    assert r.error == E.NONE and r.members[0].error == E.UNKNOWN_MEMBER_ID
    assert b.leave([("x", None)], group="").error == E.INVALID_GROUP_ID


# --- OffsetCommit / OffsetFetch --------------------------------------------------------


def test_simple_commit_to_unknown_group_creates_empty_group() -> None:
    b = Broker()
    assert b.commit({("t", 0): (10, 3, "m"), ("t", 1): (20, -1, None)}, group="simple") == {
        ("t", 0): E.NONE, ("t", 1): E.NONE}
    assert b.state.classic.group_state("simple") is GroupState.EMPTY
    fetched = b.state.offsets.fetch_offsets("simple", [("t", 0), ("t", 1), ("t", 2)])
    assert fetched.error == E.NONE
    assert [(p.offset, p.leader_epoch, p.metadata) for p in fetched.partitions.values()] == [
        (10, 3, "m"), (20, -1, ""), (-1, -1, "")]
    assert set(b.state.offsets.fetch_offsets("simple", None).partitions) == {("t", 0), ("t", 1)}
    keys = [rec.decode_key(k) for k, _ in b.log]
    assert keys == [rec.OffsetCommitKey("simple", "t", 0), rec.OffsetCommitKey("simple", "t", 1)]
    assert rec.decode_offset_commit_value(b.log[0][1]) == rec.OffsetCommitValue(
        10, 3, "m", b.now)


@pytest.mark.parametrize(
    ("case", "error"),
    [
        ("simple_to_missing_group_with_generation", E.ILLEGAL_GENERATION),
        ("simple_to_group_with_members", E.UNKNOWN_MEMBER_ID),
        ("member_wrong_generation", E.ILLEGAL_GENERATION),
        ("unknown_member", E.UNKNOWN_MEMBER_ID),
        ("member_ok", E.NONE),
        ("member_during_preparing", E.NONE),
        ("member_during_completing", E.REBALANCE_IN_PROGRESS),
        ("simple_to_empty_group", E.NONE),
        ("metadata_too_large", E.OFFSET_METADATA_TOO_LARGE),
    ],
)
def test_commit_checks(case, error) -> None:
    b = Broker(offset_metadata_max_bytes=10)
    (a, c), gen = b.stable_group(2)
    offsets = {("t", 0): (1, -1, "")}
    kw = {"generation": gen, "member_id": a}
    if case == "simple_to_missing_group_with_generation":
        kw = {"group": "missing", "generation": 3, "member_id": "x"}
    elif case == "simple_to_group_with_members":
        kw = {"generation": -1, "member_id": ""}
    elif case == "member_wrong_generation":
        kw["generation"] = gen - 1
    elif case == "unknown_member":
        kw["member_id"] = "ghost"
    elif case == "member_during_preparing":
        b.join(a)
    elif case == "member_during_completing":
        b.join(a)
        b.join(c)
        kw["generation"] = gen + 1
        assert b.state.classic.group_state("g") is GroupState.COMPLETING_REBALANCE
    elif case == "simple_to_empty_group":
        b.leave([(a, None), (c, None)])
        kw = {"generation": -1, "member_id": ""}
    elif case == "metadata_too_large":
        offsets = {("t", 0): (1, -1, "x" * 11)}
    assert b.commit(offsets, **kw) == {("t", 0): error}
    stored = b.state.offsets.fetch_offsets(kw.get("group", "g"), [("t", 0)]).partitions[("t", 0)]
    assert (stored.offset == 1) == (error == E.NONE)


def test_commit_resets_member_session() -> None:
    b = Broker()
    (a,), gen = b.stable_group(1)
    for _ in range(4):
        b.advance(SESSION - 1)
        assert b.commit({("t", 0): (1, -1, "")}, generation=gen, member_id=a) == {
            ("t", 0): E.NONE}
    assert b.state.classic.member_ids("g") == [a]


def test_fetch_unknown_group_and_all_partitions() -> None:
    b = Broker()
    r = b.state.offsets.fetch_offsets("nope", [("t", 0)])
    assert r.error == E.NONE and r.partitions[("t", 0)].offset == -1
    assert b.state.offsets.fetch_offsets("nope", None).partitions == {}
    assert b.state.offsets.fetch_offsets("nope", None, require_stable=True).partitions == {}


# --- OffsetDelete / retention -----------------------------------------------------------


def test_delete_offsets_of_empty_group() -> None:
    b = Broker()
    b.commit({("t", 0): (1, -1, ""), ("t", 1): (2, -1, "")}, group="s")
    out = b.state.offsets.delete_offsets(
        group_id="s", partitions=[("t", 0), ("u", 9)], now_ms=b.now
    )
    b.absorb(out)
    assert out.result.error == E.NONE
    assert out.result.partitions == {("t", 0): E.NONE, ("u", 9): E.NONE}
    assert [(rec.decode_key(r.key), r.value) for r in out.records] == [
        (rec.OffsetCommitKey("s", "t", 0), None)]
    assert b.state.offsets.fetch_offsets("s", [("t", 0)]).partitions[("t", 0)].offset == -1
    # deleting the last offset of a group with no metadata removes the group
    b.absorb(b.state.offsets.delete_offsets(group_id="s", partitions=[("t", 1)], now_ms=b.now))
    assert b.state.classic.list_groups() == []


def test_delete_offsets_of_active_consumer_group() -> None:
    b = Broker()
    (a,), gen = b.stable_group(1)  # subscribed to "t"
    b.commit({("t", 0): (1, -1, ""), ("old", 0): (2, -1, "")}, generation=gen, member_id=a)
    out = b.state.offsets.delete_offsets(
        group_id="g", partitions=[("t", 0), ("old", 0)], now_ms=b.now
    )
    assert out.result.error == E.NONE
    assert out.result.partitions == {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("old", 0): E.NONE}


@pytest.mark.parametrize(
    ("group", "error"), [("nope", E.GROUP_ID_NOT_FOUND), ("", E.INVALID_GROUP_ID),
                         ("connect", E.NON_EMPTY_GROUP)])
def test_delete_offsets_errors(group, error) -> None:
    b = Broker()
    ticket = b.join(group="connect", ptype="connect", protocols=[("default", b"")], v4=False)
    b.advance(DELAY)
    assert b.answer(ticket).error == E.NONE
    out = b.state.offsets.delete_offsets(group_id=group, partitions=[("t", 0)], now_ms=b.now)
    assert out.result.error == error and out.records == []


def test_simple_offsets_expire_after_retention_from_commit() -> None:
    b = Broker(offsets_retention_minutes=1)
    b.commit({("t", 0): (1, -1, "")}, group="s")
    b.advance(30_000)
    b.commit({("t", 1): (1, -1, "")}, group="s")
    b.advance(29_999)
    assert b.absorb(b.state.expire_offsets(b.now)) == 0
    b.advance(1)
    assert b.absorb(b.state.expire_offsets(b.now)) == 1
    assert set(b.state.offsets.fetch_offsets("s", None).partitions) == {("t", 1)}
    assert b.log[-1] == (rec.encode_offset_commit_key("s", "t", 0), None)
    b.advance(30_000)
    assert b.absorb(b.state.expire_offsets(b.now)) == 1
    # empty and offset-less: gone (no metadata tombstone)
    assert b.state.classic.list_groups() == []
    assert rec.decode_key(b.log[-1][0]) == rec.OffsetCommitKey("s", "t", 1)


def test_empty_consumer_group_offsets_expire_from_when_it_became_empty() -> None:
    b = Broker(offsets_retention_minutes=1)
    (a,), gen = b.stable_group(1)
    b.commit({("t", 0): (1, -1, ""), ("gone", 0): (1, -1, "")}, generation=gen, member_id=a)
    b.keep_alive(120_000, gen, a)
    # Stable consumer group: only the unsubscribed topic's offset expires
    assert b.absorb(b.state.expire_offsets(b.now)) == 1
    assert set(b.state.offsets.fetch_offsets("g", None).partitions) == {("t", 0)}
    b.leave([(a, None)])
    assert b.state.classic.group_state("g") is GroupState.EMPTY
    b.advance(59_999)
    assert b.absorb(b.state.expire_offsets(b.now)) == 0
    b.advance(1)
    assert b.absorb(b.state.expire_offsets(b.now)) == 1
    assert b.state.classic.list_groups() == []
    assert b.log[-1] == (rec.encode_group_metadata_key("g"), None)  # it had metadata


def test_explicit_expire_timestamp_wins() -> None:
    b = Broker()
    out = b.state.offsets.commit_offsets(group_id="s", generation_id=-1, member_id="",
                                 group_instance_id=None, offsets={("t", 0): (1, -1, "")},
                                 now_ms=b.now, expire_timestamp_ms=b.now + 500)
    b.absorb(out)
    assert rec.decode_offset_commit_value(out.records[0].value).expire_timestamp_ms == b.now + 500
    b.advance(500)
    assert b.absorb(b.state.expire_offsets(b.now)) == 1


# --- DescribeGroups / ListGroups / DeleteGroups -----------------------------------------


def test_describe_and_list() -> None:
    b = Broker()
    (a, c), _gen = b.stable_group(2)
    b.commit({("t", 0): (1, -1, "")}, group="simple")
    d = {x.group_id: x for x in b.state.classic.describe_groups(["g", "simple", "nope"])}
    assert (d["g"].state, d["g"].protocol_type, d["g"].protocol) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.client_id, m.client_host, m.assignment) for m in d["g"].members] == [
        (a, "c0", "/127.0.0.1", f"to-{a}".encode()), (c, "c1", "/127.0.0.1", f"to-{c}".encode())]
    assert d["g"].members[0].metadata == consumer_subscription("t")
    assert (d["simple"].state, d["simple"].protocol_type, d["simple"].members) == ("Empty", "", ())
    assert (d["nope"].error, d["nope"].state) == (E.NONE, "Dead")
    listed = {(x.group_id, x.protocol_type, x.state) for x in b.state.classic.list_groups()}
    assert listed == {("g", "consumer", "Stable"), ("simple", "", "Empty")}
    assert [x.group_id for x in b.state.classic.list_groups(["empty"])] == ["simple"]
    assert [x.group_id for x in b.state.classic.list_groups(["Stable", "Dead"])] == ["g"]
    assert b.state.classic.list_groups(types_filter=["consumer"]) == []
    assert len(b.state.classic.list_groups(types_filter=["Classic"])) == 2
    # mid-rebalance: no protocol and no member metadata shown
    b.join(a)
    d = b.state.classic.describe_groups(["g"])[0]
    assert (d.state, d.protocol) == ("PreparingRebalance", "")
    assert all(m.metadata == b"" and m.assignment == b"" for m in d.members)


def test_delete_groups() -> None:
    b = Broker()
    b.stable_group(1)
    b.commit({("t", 0): (1, -1, ""), ("t", 1): (1, -1, "")}, group="simple")
    (x,), _ = b.stable_group(1, group="left")
    b.leave([(x, None)], group="left")
    out = b.state.offsets.delete_groups(["g", "simple", "left", "nope"], b.now)
    b.absorb(out)
    assert out.result == {"g": E.NON_EMPTY_GROUP, "simple": E.NONE, "left": E.NONE,
                          "nope": E.GROUP_ID_NOT_FOUND}
    tombstones = [(rec.decode_key(r.key), r.value) for r in out.records]
    assert tombstones == [
        (rec.OffsetCommitKey("simple", "t", 0), None),
        (rec.OffsetCommitKey("simple", "t", 1), None),
        (rec.GroupMetadataKey("left"), None),  # only groups that had a generation
    ]
    assert {x.group_id for x in b.state.classic.list_groups()} == {"g"}


# --- durability: records -> load() -------------------------------------------------------


def reload(b: Broker, **config) -> Broker:
    fresh = Broker(**config)
    fresh.ids = itertools.count(1000)  # a restarted broker must not reissue old ids
    fresh.now = b.now + 5000
    fresh.state.load(list(b.log), fresh.now)
    return fresh


def test_load_restores_offsets_and_generation() -> None:
    b = Broker()
    (a, c), gen = b.stable_group(2)
    b.commit({("t", 0): (11, 2, "x"), ("t", 1): (12, -1, "")}, generation=gen, member_id=a)
    b.commit({("t", 0): (13, 2, "y")}, generation=gen, member_id=c)
    b.commit({("u", 0): (5, -1, "")}, group="simple")
    b.absorb(b.state.offsets.delete_offsets(group_id="simple", partitions=[("u", 0)], now_ms=b.now))
    r = reload(b)
    got = r.state.offsets.fetch_offsets("g", None).partitions
    assert {tp: (p.offset, p.leader_epoch, p.metadata) for tp, p in got.items()} == {
        ("t", 0): (13, 2, "y"), ("t", 1): (12, -1, "")}
    assert r.state.classic.list_groups(["empty"]) == []  # "simple" was deleted by its tombstone
    assert r.state.classic.generation("g") == gen
    assert r.state.classic.group_state("g") is GroupState.STABLE
    d = r.state.classic.describe_groups(["g"])[0]
    assert [(m.member_id, m.assignment) for m in d.members] == [
        (a, f"to-{a}".encode()), (c, f"to-{c}".encode())]
    # members that keep heartbeating carry on; commits check the restored generation
    assert r.heartbeat(a, gen) == E.NONE
    assert r.commit({("t", 0): (14, -1, "")}, generation=gen, member_id=a) == {("t", 0): E.NONE}
    assert r.commit({("t", 0): (14, -1, "")}, generation=gen - 1, member_id=a) == {
        ("t", 0): E.ILLEGAL_GENERATION}
    # a member that does not come back expires, and the group rebalances without it
    r.advance(SESSION - 1)
    assert r.heartbeat(a, gen) == E.NONE
    r.advance(1)
    assert r.state.classic.member_ids("g") == [a]
    assert r.heartbeat(a, gen) == E.REBALANCE_IN_PROGRESS


def test_load_restores_empty_group_generation_and_static_members() -> None:
    b = Broker()
    (s0, s1), gen = static_group(b, 2)
    r = reload(b)
    assert r.heartbeat(s1, gen, instance="inst-1") == E.NONE
    ans = r.answer(r.join(client="s0", instance="inst-0"))  # restarted static member
    assert ans.error == E.NONE and ans.generation_id == gen
    assert r.heartbeat(s0, gen, instance="inst-0") == E.FENCED_INSTANCE_ID

    b2 = Broker()
    (x,), gen2 = b2.stable_group(1)
    b2.commit({("t", 0): (1, -1, "")}, generation=gen2, member_id=x)
    b2.leave([(x, None)])
    r2 = reload(b2)
    assert r2.state.classic.group_state("g") is GroupState.EMPTY
    assert r2.state.classic.generation("g") == gen2 + 1
    assert len(r2.state.classic.list_groups()) == 1
    assert r2.state.classic.list_groups()[0].protocol_type == "consumer"
    # a new member starts generation gen2 + 2
    _, t = r2.new_member()
    r2.advance(FORM)
    assert r2.answer(t).generation_id == gen2 + 2


def test_load_then_group_tombstone_keeps_offsets() -> None:
    b = Broker()
    key = rec.encode_group_metadata_key("g")
    value = rec.encode_group_metadata_value(rec.GroupMetadataValue("consumer", 4, None, None,
                                                                   10, ()))
    okey = rec.encode_offset_commit_key("g", "t", 0)
    oval = rec.encode_offset_commit_value(rec.OffsetCommitValue(7, -1, "", 10))
    b.state.load([(key, value), (okey, oval), (key, None),
                  (b"\x00\x03unknown-new-record-type", b"\x00\x00")], b.now)
    assert b.state.classic.generation("g") == 0
    assert b.state.offsets.fetch_offsets("g", None).partitions[("t", 0)].offset == 7


def test_load_skips_unknown_record_versions_only() -> None:
    b = Broker()
    with pytest.raises(ValueError):
        b.state.load([(rec.encode_offset_commit_key("g", "t", 0), b"\x00\x03\x00")], b.now)


def test_records_go_to_the_groups_partition() -> None:
    b = Broker(offsets_topic_num_partitions=7)
    out = b.state.offsets.commit_offsets(group_id="my-group", generation_id=-1, member_id="",
                                 group_instance_id=None, offsets={("t", 0): (1, -1, "")},
                                 now_ms=b.now)
    # Kafka: Utils.abs("my-group".hashCode()) % 7, hashCode = -1906497762
    assert out.records[0].partition == 1906497762 % 7


def test_next_deadline_is_none_when_idle() -> None:
    b = Broker()
    assert b.state.next_deadline_ms() is None
    b.commit({("t", 0): (1, -1, "")}, group="s")
    assert b.state.next_deadline_ms() is None
    (_a,), _gen = b.stable_group(1)
    assert b.state.next_deadline_ms() == b.now + SESSION


# --- less common transitions -------------------------------------------------------------


def test_leader_that_does_not_rejoin_is_replaced() -> None:
    b = Broker()
    (_a, c), gen = b.stable_group(2)
    t = b.join(c, protocols=[("range", consumer_subscription("t", "u"))])  # follower changes
    b.keep_alive(REBALANCE, gen, c)  # a stays silent past its session; c keeps heartbeating
    ans = b.answer(t)
    assert ans.generation_id == gen + 1 and ans.leader == c
    assert [m.member_id for m in ans.members] == [c]


def test_rebalance_waits_for_static_members_that_have_not_rejoined() -> None:
    b = Broker()
    (s0,), gen = static_group(b, 1)
    d, td = b.new_member("dyn")  # a newcomer starts a rebalance...
    assert b.leave([(d, None)]).members[0].error == E.NONE  # ...and leaves again
    assert b.answer(td).error == E.UNKNOWN_MEMBER_ID
    b.keep_alive(REBALANCE + SESSION, gen, (s0, "inst-0"))
    # no member rejoined: the group keeps waiting rather than dropping the static member
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    assert b.state.classic.member_ids("g") == [s0]
    t = b.join(s0, instance="inst-0")
    assert b.answer(t).generation_id == gen + 1


def test_pending_member_delays_rebalance_until_it_expires() -> None:
    b = Broker()
    (a,), gen = b.stable_group(1)
    pending = b.answer(b.join(client="p", session=8000))
    assert pending.error == E.MEMBER_ID_REQUIRED
    assert b.state.classic.group_state("g") is GroupState.STABLE  # a pending member is not a member
    t = b.join(a)  # the leader's rejoin would complete at once, but a member id is out
    assert b.answer(t) is None
    b.advance(7999)
    assert b.answer(t) is None
    b.advance(1)
    assert b.answer(t).generation_id == gen + 1


def test_static_member_restart_during_completing_rebalance() -> None:
    b = Broker()
    t0 = b.join(client="s0", instance="inst-0")
    t1 = b.join(client="s1", instance="inst-1")
    b.advance(FORM)
    leader, follower = b.answer(t0).member_id, b.answer(t1).member_id
    s_old = b.sync(follower, 1, instance="inst-1")
    t_new = b.join(client="s1", instance="inst-1")  # restarted before the leader synced
    assert b.answer(s_old) == SyncResponse(E.FENCED_INSTANCE_ID)
    assert b.state.classic.group_state("g") is GroupState.PREPARING_REBALANCE
    t_lead = b.join(leader, instance="inst-0")
    assert b.answer(t_lead).generation_id == b.answer(t_new).generation_id == 2
    assert b.answer(t_new).member_id != follower


def test_leave_while_awaiting_sync_answers_the_sync() -> None:
    b = Broker()
    (m1, _), (m2, _) = b.new_member("a"), b.new_member("b")
    b.advance(FORM)
    s2 = b.sync(m2, 1)
    b.leave([(m2, None)])
    assert b.answer(s2) == SyncResponse(E.UNKNOWN_MEMBER_ID)
    t = b.join(m1)
    assert b.answer(t).generation_id == 2


def test_old_member_cannot_rejoin_an_empty_group_by_id() -> None:
    b = Broker()
    (a,), gen = b.stable_group(1)
    b.leave([(a, None)])
    assert b.state.classic.group_state("g") is GroupState.EMPTY
    assert b.answer(b.join(a)).error == E.UNKNOWN_MEMBER_ID
    assert b.heartbeat(a, gen + 1) == E.UNKNOWN_MEMBER_ID


# --- random interleavings ----------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CLIENTS = 4  # clients 0 and 1 are static members


def check_invariants(b: Broker) -> None:
    for group in b.state.classic.groups.values():
        members = group.members
        assert (group.leader_id is None) == (not members)
        assert group.leader_id is None or group.leader_id in members
        assert not set(group.pending_members) & set(members)
        assert group.pending_sync <= set(members)
        for iid, mid in group.static_members.items():
            assert members[mid].group_instance_id == iid
        if group.state is GroupState.EMPTY:
            assert not members
        for m in members.values():
            if m.join_ticket is not None:
                assert group.state is GroupState.PREPARING_REBALANCE
            if m.sync_ticket is not None:
                assert group.state is GroupState.COMPLETING_REBALANCE


class Client:
    """A consumer that reacts to answers the way Kafka clients do."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.instance = f"inst-{index}" if index < 2 else None
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members: list[str] = []
        self.must_join = True
        self.synced = False

    def learn(self, answer) -> None:
        if isinstance(answer, JoinResponse):
            if answer.error in (E.NONE, E.MEMBER_ID_REQUIRED):
                self.member_id = answer.member_id
            if answer.error == E.NONE:
                self.generation = answer.generation_id
                self.leader = answer.leader == answer.member_id
                self.members = [m.member_id for m in answer.members]
                self.must_join, self.synced = False, False
        elif answer.error == E.NONE:
            self.synced = True
        else:
            self.must_join = True
        if answer.error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            self.member_id, self.generation, self.must_join = "", -1, True
        elif answer.error in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            self.must_join = True

    def heard(self, error: int) -> None:
        if error != E.NONE:
            self.learn(SyncResponse(error))


OPS = st.lists(
    st.tuples(
        st.sampled_from(["step"] * 12 + ["advance"] * 4 + ["leave", "commit", "restart",
                                                            "join_new_protocol", "join"]),
        st.integers(0, CLIENTS - 1),
        # mostly within a session timeout, sometimes far beyond it
        st.one_of(st.integers(0, 2500), st.integers(0, 2500), st.integers(0, 40_000)),
    ),
    max_size=120,
)


@settings(max_examples=150, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(OPS)
def test_random_interleavings_keep_invariants_and_answer_every_ticket(ops) -> None:
    b = Broker()
    clients = [Client(i) for i in range(CLIENTS)]
    issued: dict[int, Client] = {}
    seen: set[int] = set()
    waiting: dict[int, int] = {}  # client index -> its outstanding ticket

    def settle() -> None:
        for ticket, answer in b.answers.items():
            if ticket not in seen:
                seen.add(ticket)
                issued[ticket].learn(answer)
                if waiting.get(issued[ticket].index) == ticket:
                    del waiting[issued[ticket].index]

    def send_join(c: Client, protocols=None) -> None:
        t = b.join(c.member_id, instance=c.instance, client=f"c{c.index}",
                   protocols=protocols or [("range", consumer_subscription("t"))])
        issued[t] = c
        waiting[c.index] = t

    # start from a formed group: everyone joins (twice: MEMBER_ID_REQUIRED), then syncs
    warmup = [("step", i, 0) for i in range(CLIENTS)] * 2 + [("advance", 0, FORM)]
    warmup += [("step", i, 0) for i in range(CLIENTS)]
    for n, (op, i, ms) in enumerate([*warmup, *ops]):
        if n == len(warmup):
            assert b.state.classic.group_state("g") is GroupState.STABLE
        c = clients[i]
        if op == "step":
            if c.index in waiting:
                pass  # clients do not heartbeat while their JoinGroup/SyncGroup is out
            elif c.must_join:
                send_join(c)
            elif not c.synced:
                assignments = {m: m.encode() for m in c.members} if c.leader else {}
                t = b.sync(c.member_id, c.generation, instance=c.instance,
                           assignments=assignments)
                issued[t] = c
                waiting[c.index] = t
            else:
                c.heard(b.heartbeat(c.member_id, c.generation, instance=c.instance))
        elif op == "join":
            send_join(c)
        elif op == "join_new_protocol":
            send_join(c, [("roundrobin", b""), ("range", consumer_subscription("t"))])
        elif op == "leave":
            b.leave([(c.member_id, c.instance)])
            c.member_id, c.generation, c.must_join = "", -1, True
        elif op == "commit":
            for error in b.commit({("t", 0): (ms, -1, "")}, generation=c.generation,
                                  member_id=c.member_id, instance=c.instance).values():
                c.heard(error)
        elif op == "advance":
            b.advance(ms)
        elif op == "restart":
            c.member_id, c.generation, c.must_join = "", -1, True
        settle()
        check_invariants(b)
        b.state.classic.describe_groups(["g"])
        b.state.classic.list_groups()
    # everyone goes silent: every member expires and every waiting request is answered
    b.advance(10 * 60_000)
    settle()
    check_invariants(b)
    assert set(issued) == set(b.answers)
    assert b.state.classic.member_ids("g") == []


# --- contracts ---------------------------------------------------------------------------


def test_state_machine_package_imports_no_io_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kafkette.broker.groups\n"
        "bad = [m for m in ('trio', 'socket', 'asyncio') if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_config_from_kafka_property_names() -> None:
    cfg = GroupConfig.from_properties({
        "group.min.session.timeout.ms": "1000",
        "group.max.session.timeout.ms": 2000,
        "group.initial.rebalance.delay.ms": "0",
        "group.max.size": "7",
        "offsets.retention.minutes": "2",
        "offsets.topic.num.partitions": "3",
        "offset.metadata.max.bytes": "9",
        "log.dirs": "/ignored",
    })
    assert (cfg.group_min_session_timeout_ms, cfg.group_max_session_timeout_ms,
            cfg.group_initial_rebalance_delay_ms, cfg.group_max_size,
            cfg.offsets_retention_ms, cfg.offsets_topic_num_partitions,
            cfg.offset_metadata_max_bytes) == (1000, 2000, 0, 7, 120_000, 3, 9)
    assert GroupConfig() == GroupConfig.from_properties({})
    assert GroupConfig().group_max_size == 2**31 - 1
    assert GroupConfig().offsets_retention_ms == 10080 * 60_000
