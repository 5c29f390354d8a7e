"""Transactional offsets in the group state machine: pending, markers, reload, deletes.

``Coordinator`` plays the broker: it keeps the records of every outcome in an
in-memory ``__consumer_offsets`` (transactional ones as such, markers where the
transaction coordinator would write them), so a reload replays exactly what a
restart would read.
"""

from __future__ import annotations

import itertools

from kafkette.broker.groups import (
    GroupConfig,
    GroupCoordinatorState,
    GroupState,
    TransactionalRecord,
    TxnMarker,
)
from kafkette.broker.groups import offsets_records as rec
from kafkette.wire.errors import ErrorCode as E

T0, T1 = ("t", 0), ("t", 1)
SESSION = 10_000


class Coordinator:
    def __init__(self, **config) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 0)
        self.config = GroupConfig(**config)
        ids = itertools.count(1)
        self.state = GroupCoordinatorState(self.config, new_member_id=lambda c: f"{c}-{next(ids)}")
        self.now = 1_000_000
        self.log: list = []
        self.replies: dict = {}

    def absorb(self, outcome):
        for r in outcome.records:
            assert r.partition == self.state.partition_for(rec.decode_key(r.key).group_id)
            if r.producer_id >= 0:
                self.log.append(TransactionalRecord(r.producer_id, r.key, r.value))
            else:
                self.log.append((r.key, r.value))
        for reply in outcome.replies:
            self.replies[reply.ticket] = reply.response
        return outcome.result

    def txn_commit(self, offsets, *, pid=7, group="g", generation=-1, member="", instance=None):
        offsets = {tp: (o, -1, "m") if isinstance(o, int) else o for tp, o in offsets.items()}
        return self.absorb(self.state.offsets.commit_txn_offsets(
            group_id=group, producer_id=pid, producer_epoch=0, generation_id=generation,
            member_id=member, group_instance_id=instance, offsets=offsets, now_ms=self.now))

    def commit(self, offsets, *, group="g", generation=-1, member=""):
        offsets = {tp: (o, -1, "") for tp, o in offsets.items()}
        return self.absorb(self.state.offsets.commit_offsets(
            group_id=group, generation_id=generation, member_id=member,
            group_instance_id=None, offsets=offsets, now_ms=self.now))

    def marker(self, committed: bool, *, pid=7, group="g") -> int:
        partition = self.state.partition_for(group)
        self.log.append(TxnMarker(partition, pid, committed))
        return self.absorb(self.state.offsets.complete_transaction(
            partition=partition, producer_id=pid, committed=committed))

    def fetch(self, group="g", partitions=None, stable=False) -> dict:
        result = self.state.offsets.fetch_offsets(group, partitions, stable)
        return {tp: (p.offset, p.error) for tp, p in result.partitions.items()}

    def reload(self) -> Coordinator:
        fresh = Coordinator(**{k: getattr(self.config, k) for k in (
            "offsets_topic_num_partitions", "group_initial_rebalance_delay_ms")})
        fresh.now = self.now + 1000
        fresh.log = list(self.log)
        fresh.state.load(fresh.log, fresh.now)
        return fresh

    def stable_member(self, group="g", instance=None) -> tuple[str, int]:
        """One member joined and synced: (member id, generation)."""
        self.absorb(self.state.join_group(
            "join", group_id=group, member_id="", group_instance_id=instance,
            protocol_type="consumer", protocols=[("range", b"")], session_timeout_ms=SESSION,
            rebalance_timeout_ms=SESSION, now_ms=self.now, client_id="c",
            require_known_member_id=False))
        self.absorb(self.state.tick(self.now))
        joined = self.replies.pop("join")
        member, generation = joined.member_id, joined.generation_id
        self.absorb(self.state.sync_group(
            "sync", group_id=group, generation_id=generation, member_id=member,
            group_instance_id=instance, protocol_type=None, protocol_name=None,
            assignments={member: b""}, now_ms=self.now))
        assert self.state.classic.group_state(group) is GroupState.STABLE
        return member, generation


def test_pending_offsets_are_invisible_until_commit() -> None:
    c = Coordinator()
    c.commit({T0: 5})
    assert c.txn_commit({T0: 10, T1: 11}) == {T0: E.NONE, T1: E.NONE}
    assert c.fetch() == {T0: (5, E.NONE)}  # fetch-all: committed partitions only
    assert c.fetch(partitions=[T0, T1]) == {T0: (5, E.NONE), T1: (-1, E.NONE)}
    assert c.fetch(partitions=[T0, T1], stable=True) == {
        T0: (-1, E.UNSTABLE_OFFSET_COMMIT), T1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert c.fetch(stable=True) == {T0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert c.state.offsets.has_pending_offsets("g", T0)
    assert c.state.offsets.pending_producers("g") == [7]
    assert c.marker(True) == 2
    assert c.fetch(stable=True) == {T0: (10, E.NONE), T1: (11, E.NONE)}
    assert not c.state.offsets.has_pending_offsets("g")
    assert c.marker(True) == 0  # a repeated marker finds nothing


def test_abort_drops_only_that_producers_offsets() -> None:
    c = Coordinator()
    c.commit({T0: 5})
    c.txn_commit({T0: 10}, pid=7)
    c.txn_commit({T1: 20}, pid=8)
    assert c.marker(False, pid=7) == 0
    assert c.fetch(partitions=[T0, T1], stable=True) == {
        T0: (5, E.NONE), T1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert c.marker(True, pid=8) == 1
    assert c.fetch(stable=True) == {T0: (5, E.NONE), T1: (20, E.NONE)}


def test_the_later_record_wins_at_commit() -> None:
    """Kafka compares record offsets: a plain commit written after the transaction's
    offset (before its marker) stays; one written before is replaced."""
    c = Coordinator()
    c.commit({T1: 1})
    c.txn_commit({T0: 100, T1: 100})
    c.commit({T0: 7})
    assert c.marker(True) == 1
    assert c.fetch(stable=True) == {T0: (7, E.NONE), T1: (100, E.NONE)}
    assert c.reload().fetch(stable=True) == {T0: (7, E.NONE), T1: (100, E.NONE)}
    # Two transactions on one partition: the later record wins whichever commits first.
    c.txn_commit({T0: 200}, pid=1)
    c.txn_commit({T0: 300}, pid=2)
    c.marker(True, pid=2)
    c.marker(True, pid=1)
    assert c.fetch(stable=True) == {T0: (300, E.NONE), T1: (100, E.NONE)}
    assert c.reload().fetch(stable=True) == c.fetch(stable=True)


def test_a_marker_only_ends_the_transaction_on_its_partition() -> None:
    c = Coordinator(offsets_topic_num_partitions=50)
    groups = ["a", "b"]
    assert c.state.partition_for("a") != c.state.partition_for("b")
    for g in groups:
        c.txn_commit({T0: 1}, group=g)
    c.marker(True, group="a")
    assert c.fetch("a", stable=True) == {T0: (1, E.NONE)}
    assert c.fetch("b", [T0], stable=True) == {T0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    # Reloaded partition by partition, the same holds.
    r = c.reload()
    assert r.fetch("b", [T0], stable=True) == {T0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert r.fetch("a", stable=True) == {T0: (1, E.NONE)}


def test_reload_keeps_committed_drops_aborted_and_pending_stays_pending() -> None:
    c = Coordinator()
    for group, pid in (("committed", 1), ("aborted", 2), ("pending", 3), ("only-aborted", 4)):
        if group != "only-aborted":
            c.commit({T0: 1}, group=group)
        c.txn_commit({T0: 50}, pid=pid, group=group)
    c.marker(True, pid=1, group="committed")
    c.marker(False, pid=2, group="aborted")
    c.marker(False, pid=4, group="only-aborted")
    r = c.reload()
    assert r.fetch("committed", stable=True) == {T0: (50, E.NONE)}
    assert r.fetch("aborted", stable=True) == {T0: (1, E.NONE)}
    assert r.fetch("pending") == {T0: (1, E.NONE)}
    assert r.fetch("pending", stable=True) == {T0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    listed = {g.group_id for g in r.state.classic.list_groups()}
    assert listed == {"committed", "aborted", "pending"}
    assert r.marker(True, pid=3, group="pending") == 1
    assert r.fetch("pending", stable=True) == {T0: (50, E.NONE)}
    # A group with members: its metadata records, replayed after the pending offset,
    # keep the offset pending.
    member, gen = r.stable_member(group="members")
    assert r.txn_commit({T0: 7}, pid=6, group="members", generation=gen, member=member) == {
        T0: E.NONE}
    r.absorb(r.state.leave_group(group_id="members", members=[(member, None)], now_ms=r.now))
    assert r.state.classic.group_state("members") is GroupState.EMPTY  # metadata written again
    rr = r.reload()
    assert rr.fetch("members", [T0], stable=True) == {T0: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert rr.state.classic.generation("members") == gen + 1
    assert rr.marker(True, pid=6, group="members") == 1
    # A group made only by a TxnOffsetCommit exists while its transaction is open.
    r.txn_commit({T1: 9}, pid=5, group="fresh")
    assert "fresh" in {g.group_id for g in r.state.classic.list_groups()}
    assert r.reload().fetch("fresh", [T1], stable=True) == {T1: (-1, E.UNSTABLE_OFFSET_COMMIT)}


def test_group_checks_as_kafka_for_transactional_commits() -> None:
    c = Coordinator()
    assert c.txn_commit({T0: 1}, group="new", generation=1, member="m") == {
        T0: E.ILLEGAL_GENERATION}
    assert c.state.classic.list_groups() == []  # no phantom group
    member, gen = c.stable_member(instance="i1")
    assert c.txn_commit({T0: 1}, generation=gen, member=member, instance="i1") == {T0: E.NONE}
    assert c.txn_commit({T0: 1}, generation=gen + 1, member=member) == {
        T0: E.ILLEGAL_GENERATION}
    assert c.txn_commit({T0: 1}, generation=gen, member="other") == {T0: E.UNKNOWN_MEMBER_ID}
    assert c.txn_commit({T0: 1}, generation=gen, member="other", instance="i1") == {
        T0: E.FENCED_INSTANCE_ID}
    assert c.txn_commit({T0: 1}, generation=gen, member=member, instance="i2") == {
        T0: E.UNKNOWN_MEMBER_ID}
    # Without group metadata (TxnOffsetCommit v0-v2) any state is accepted, unlike OffsetCommit.
    assert c.txn_commit({T0: 2}) == {T0: E.NONE}
    assert c.commit({T0: 2}) == {T0: E.UNKNOWN_MEMBER_ID}
    big = "x" * (c.config.offset_metadata_max_bytes + 1)
    assert c.txn_commit({T0: (3, -1, big), T1: 3}) == {
        T0: E.OFFSET_METADATA_TOO_LARGE, T1: E.NONE}
    # Records: one per accepted partition, carrying the producer.
    out = c.state.offsets.commit_txn_offsets(
        group_id="g", producer_id=9, producer_epoch=4, generation_id=-1, member_id="",
        group_instance_id=None, offsets={T0: (5, 2, None)}, now_ms=c.now)
    assert [(r.producer_id, r.producer_epoch) for r in out.records] == [(9, 4)]
    assert rec.decode_offset_commit_value(out.records[0].value).leader_epoch == 2


def test_transactional_commits_allowed_during_completing_rebalance() -> None:
    c = Coordinator()
    member, _ = c.stable_member()
    # A second member joins: the group rebalances; after the join phase it is Completing.
    c.absorb(c.state.join_group(
        "j2", group_id="g", member_id="", group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=SESSION, rebalance_timeout_ms=SESSION,
        now_ms=c.now, client_id="c2", require_known_member_id=False))
    c.absorb(c.state.join_group(
        "j1", group_id="g", member_id=member, group_instance_id=None, protocol_type="consumer",
        protocols=[("range", b"")], session_timeout_ms=SESSION, rebalance_timeout_ms=SESSION,
        now_ms=c.now, client_id="c"))
    assert c.state.classic.group_state("g") is GroupState.COMPLETING_REBALANCE
    new_gen = c.replies["j1"].generation_id
    assert c.commit({T0: 1}, generation=new_gen, member=member) == {T0: E.REBALANCE_IN_PROGRESS}
    assert c.txn_commit({T0: 1}, generation=new_gen, member=member) == {T0: E.NONE}


def test_offset_delete_and_delete_groups_remove_pending_offsets() -> None:
    c = Coordinator()
    c.commit({T0: 1})
    c.txn_commit({T0: 2, T1: 3})
    out = c.state.offsets.delete_offsets(group_id="g", partitions=[T1], now_ms=c.now)
    c.absorb(out)
    assert out.result.partitions == {T1: E.NONE}
    assert [(rec.decode_key(r.key).partition, r.value) for r in out.records] == [(1, None)]
    assert c.fetch(partitions=[T1], stable=True) == {T1: (-1, E.NONE)}
    assert c.marker(True) == 1  # only T0 was still pending
    assert c.fetch(stable=True) == {T0: (2, E.NONE)}

    c.txn_commit({T0: 4, T1: 5}, group="doomed")
    out = c.state.offsets.delete_groups(["doomed"], c.now)
    c.absorb(out)
    assert out.result == {"doomed": E.NONE}
    assert sorted(rec.decode_key(r.key).partition for r in out.records) == [0, 1]
    assert c.marker(True, group="doomed") == 0  # the transaction commits nothing
    assert c.fetch("doomed", [T0, T1], stable=True) == {T0: (-1, E.NONE), T1: (-1, E.NONE)}
    assert "doomed" not in {g.group_id for g in c.reload().state.classic.list_groups()}


def test_expiry_keeps_offsets_with_a_pending_transaction() -> None:
    c = Coordinator()
    c.commit({T0: 1, T1: 1})
    c.txn_commit({T0: 2})
    retention = c.config.offsets_retention_ms
    c.now += retention + 1
    removed = c.absorb(c.state.expire_offsets(c.now))
    assert removed == 1  # T1 only
    assert c.fetch() == {T0: (1, E.NONE)}
    c.marker(False)
    c.commit({T1: 3}, group="txn-only")
    c.txn_commit({T1: 4}, group="txn-only")
    c.absorb(c.state.offsets.delete_offsets(group_id="txn-only", partitions=[], now_ms=c.now))
    c.now += retention + 1
    assert c.absorb(c.state.expire_offsets(c.now)) == 1  # g's T0; txn-only's T1 waits
    groups = {g.group_id for g in c.state.classic.list_groups()}
    assert groups == {"txn-only"}  # a group with an open transaction is not removed
    c.marker(True, group="txn-only")
    assert c.fetch("txn-only", stable=True) == {T1: (4, E.NONE)}


def test_reload_groups_after_a_failed_write_rebuilds_pending_offsets() -> None:
    c = Coordinator()
    c.commit({T0: 1})
    c.txn_commit({T0: 2}, pid=1)
    c.txn_commit({T1: 3}, pid=2)
    c.marker(True, pid=1)
    # A write the broker could not persist: memory is ahead of the log.
    c.state.offsets.commit_txn_offsets(
        group_id="g", producer_id=3, producer_epoch=0, generation_id=-1, member_id="",
        group_instance_id=None, offsets={T0: (99, -1, "")}, now_ms=c.now)
    c.state.reload_groups(["g"], c.log, c.now, E.NOT_COORDINATOR)
    assert c.state.offsets.pending_producers("g") == [2]
    assert c.fetch(partitions=[T0, T1], stable=True) == {
        T0: (2, E.NONE), T1: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    assert c.marker(True, pid=2) == 1
    assert c.fetch(stable=True) == {T0: (2, E.NONE), T1: (3, E.NONE)}
