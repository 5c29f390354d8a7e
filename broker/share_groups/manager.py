"""The share partitions this broker leads: sessions, delivery state, locks, long polls.

Kafka keeps a share partition's delivery state where the partition's leader is (its
``SharePartitionManager``), not at the group coordinator: ShareFetch and
ShareAcknowledge go to the leader, as Fetch does. This is that manager, on the event
loop. The delivery states are pure (``delivery_state.py``); around them:

- one ``trio.Lock`` orders every change of the states and sessions; log reads run in
  a worker thread, outside it;
- a per-share-partition write lock orders its state writes to ``__share_group_state``
  (``persister.py``): an acknowledgement is answered only once the share partition's
  new snapshot is written (committed, in a cluster), as Kafka's share coordinator
  answers after its write;
- a timer task releases records whose acquisition lock expired; a closed share session
  or connection releases what its member held (Kafka 4.2+: the delivery count stays).

A share partition starts on its first fetch: from its persisted state if
``__share_group_state`` has one (read once, when the first share partition is needed
after a start), else at the offset the group's ``share.auto.offset.reset`` names.

In a cluster the persisted state is the share coordinator's (``coordinator.py``), read
when the share partition starts here. A share partition belongs to the leader epoch of
its data partition it was started in: once the epoch moved (leadership went away, and
maybe came back) it is dropped, acknowledgements of what it handed out fail, and the
next fetch starts it again from the coordinator's state; its writes carry that epoch,
so the coordinator fences a deposed leader's late writes.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.share_groups import state_records as rec
from kafkette.broker.share_groups.batches import fetched_batches
from kafkette.broker.share_groups.delivery_state import (
    AckBatch,
    DeliveryConfig,
    RecordState,
    SharePartitionDelivery,
    StateBatch,
)
from kafkette.broker.share_groups.group_configs import ShareGroupSettings
from kafkette.broker.share_groups.persister import PersistError, SharePersister
from kafkette.broker.share_groups.sessions import SessionKey, ShareSessions
from kafkette.log.errors import OffsetOutOfRange
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.share")

ShareKey = tuple[str, uuid.UUID, int]  # (group id, topic id, partition)
# How much of the log one acquisition reads at most (see ``acquire``).
READ_BYTES_PER_ACQUIRE = 1 << 20
RELEASE = 2  # AcknowledgeType.RELEASE: the one acknowledgement that frees records
# A write refused because the state moved on without this copy (a newer leader of the
# data partition, or AlterShareGroupOffsets' new state epoch): it is dropped and reloaded.
_DEPOSED = frozenset({ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                      ErrorCode.FENCED_STATE_EPOCH})
Acks = Sequence[tuple[int, int, Sequence[int]]]  # (first offset, last offset, types)


@dataclass(slots=True)
class Acquired:
    """One partition's share fetch answer: the stored batches and what was acquired."""

    records: bytes | None = None
    acquired: list[tuple[int, int, int]] = field(default_factory=list)


@dataclass(slots=True)
class _SharePartition:
    delivery: SharePartitionDelivery
    write_lock: trio.Lock = field(default_factory=trio.Lock)
    created_ms: int = 0
    snapshot_epoch: int = 0
    # The data partition and its leader epoch when this state was loaded (cluster mode:
    # the state is stale once the epoch moved). -1 / None: not tied to a leadership.
    leader_epoch: int = -1
    partition: Partition | None = None


class SharePartitionManager:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.config = broker.config.groups
        self.sessions = ShareSessions(self.config.group_share_max_share_sessions)
        self.persister = SharePersister(broker)
        self._partitions: dict[ShareKey, _SharePartition] = {}
        self._persisted: dict[ShareKey, rec.ShareState] | None = None
        self._lock = trio.Lock()
        self._rearm = trio.Event()
        self._timer_started = False
        self._waiters: set[trio.Event] = set()
        self._watched: set[int] = set()  # id() of the connections with a close listener
        # Counters of share partitions forgotten (deleted groups and offsets), so the
        # totals the metrics read never go down.
        self._retired: dict[str, int] = {}
        self._clustered = broker.cluster is not None

    # Settings ----------------------------------------------------------------------

    def settings(self, group_id: str) -> ShareGroupSettings:
        return ShareGroupSettings.of(self.broker, group_id)

    def lock_duration_ms(self, group_id: str) -> int:
        return self.settings(group_id).record_lock_duration_ms

    @staticmethod
    def _delivery_config(settings: ShareGroupSettings) -> DeliveryConfig:
        return DeliveryConfig(
            record_lock_duration_ms=settings.record_lock_duration_ms,
            delivery_count_limit=settings.delivery_count_limit,
            partition_max_record_locks=settings.partition_max_record_locks,
            renew_acknowledge_enabled=settings.renew_acknowledge_enabled,
        )

    # State --------------------------------------------------------------------------

    def _ensure_timer(self) -> None:
        if not self._timer_started and self.broker.background_nursery is not None:
            self._timer_started = True
            self.broker.background_nursery.start_soon(self._timer)

    async def _persisted_states(self) -> dict[ShareKey, rec.ShareState]:
        if self._persisted is None:
            loaded = await self.persister.load()
            if self._persisted is None:
                self._persisted = loaded
        return self._persisted

    def _stale(self, share: _SharePartition) -> bool:
        """Cluster mode: the share partition's data partition is no longer led in the
        leader epoch its state was loaded in."""
        partition = share.partition
        if not self._clustered or partition is None:
            return False
        return (partition.leader_epoch != share.leader_epoch
                or partition.leader_tenure() is None)

    def _drop_if_stale(self, key: ShareKey, partition: Partition | None = None) -> None:
        share = self._partitions.get(key)
        if share is None or not self._clustered:
            return
        if self._stale(share) or (partition is not None and (
                share.partition is not partition
                or share.leader_epoch != partition.leader_epoch)):
            log.info("share partition %s: leadership moved, its state is reloaded", key)
            self._retire(key)

    async def _share_partition(self, key: ShareKey, partition: Partition) -> _SharePartition:
        self._drop_if_stale(key, partition)
        share = self._partitions.get(key)
        settings = self.settings(key[0])
        if share is None:
            epoch = partition.leader_epoch
            if self._clustered:
                persisted = await self.persister.read(key, epoch)  # raises PersistError
            else:
                persisted = (await self._persisted_states()).get(key)
            start = None
            if persisted is None:
                if (partition.high_watermark_behind_epoch_start
                        and settings.auto_offset_reset.lower() != "earliest"):
                    # The HW this new leader inherited may be short of the committed one:
                    # "latest" (or a time) would start the share partition too early.
                    raise PersistError(ErrorCode.OFFSET_NOT_AVAILABLE,
                                       f"{key}: the high watermark is not known yet")
                start = await trio.to_thread.run_sync(settings.start_offset, partition)
            if self._clustered and partition.leader_epoch != epoch:
                raise PersistError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                   f"the leadership of {key} moved while loading")
            share = self._partitions.get(key)  # another task may have made it meanwhile
            if share is None:
                config = self._delivery_config(settings)
                if persisted is not None:
                    delivery = SharePartitionDelivery.restore(
                        persisted.start_offset,
                        [StateBatch(*b) for b in persisted.batches],
                        config,
                        state_epoch=persisted.state_epoch,
                    )
                    share = _SharePartition(delivery, created_ms=persisted.create_ms,
                                            snapshot_epoch=persisted.snapshot_epoch)
                else:
                    assert start is not None
                    share = _SharePartition(SharePartitionDelivery(start, config),
                                            created_ms=int(time.time() * 1000))
                share.leader_epoch, share.partition = epoch, partition
                self._partitions[key] = share
                if self._clustered:
                    log.info(
                        "share partition %s starts in leader epoch %d at offset %d (%s)",
                        key, epoch, share.delivery.start_offset,
                        "its coordinator's state" if persisted is not None else
                        f"share.auto.offset.reset={settings.auto_offset_reset}, high "
                        f"watermark {partition.high_watermark}")
        else:
            share.delivery.config = self._delivery_config(settings)
        share.delivery.log_start_moved(partition.log_start_offset)
        return share

    def deliveries_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], SharePartitionDelivery]:
        return {(k[1], k[2]): s.delivery for k, s in self._partitions.items() if k[0] == group_id}

    def stored_states_of(self, group_id: str) -> dict[tuple[uuid.UUID, int], rec.ShareState]:
        """The group's share-partition states as read from ``__share_group_state`` (empty
        before that read): for a share partition no fetch has opened since, what it holds.
        Reads only, never loads (the console's view)."""
        return {(k[1], k[2]): s for k, s in (self._persisted or {}).items() if k[0] == group_id}

    async def _persist(self, key: ShareKey, share: _SharePartition) -> None:
        """Write the share partition's snapshot; the caller holds its write lock."""
        delivery = share.delivery
        if self._stale(share):
            self._retire(key)
            raise PersistError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                               f"{key}: no longer led in the leader epoch its state is of")
        share.snapshot_epoch += 1
        state = rec.ShareState(
            rec.SNAPSHOT, share.snapshot_epoch, delivery.state_epoch,
            share.leader_epoch if self._clustered else 0,
            delivery.start_offset,
            tuple((b.first_offset, b.last_offset, int(b.delivery_state), b.delivery_count)
                  for b in delivery.state_batches()),
            share.created_ms, int(time.time() * 1000), delivery.delivery_complete_count,
        )
        await self.persister.write(key, state)

    # Requests -----------------------------------------------------------------------

    async def acknowledge(
        self, group_id: str, member_id: str, tid: uuid.UUID, index: int, acks: Acks,
        partition: Partition | None = None,
    ) -> tuple[int, str | None]:
        """Apply one partition's acknowledgement batches, persisted before the answer:
        Kafka's (error code, message). ``partition``: the data partition as served now
        (cluster mode: a state loaded in another leader epoch is dropped first)."""
        key = (group_id, tid, index)
        self._drop_if_stale(key, partition)
        share = self._partitions.get(key)
        if share is None:
            return ErrorCode.INVALID_RECORD_STATE, "No records were acquired from this partition."
        async with share.write_lock:
            async with self._lock:
                result = share.delivery.acknowledge(
                    member_id, [AckBatch(f, last, types) for f, last, types in acks], now_ms()
                )
            if any(RELEASE in types for _f, _l, types in acks):
                self._released()  # only freed records are worth a waiting fetch's wakeup
            if result.error != ErrorCode.NONE:
                return result.error, result.message
            try:
                await self._persist(key, share)
            except PersistError as exc:
                log.warning("share state of %s not written: %s", key, exc)
                if exc.code in _DEPOSED:
                    self._retire(key)  # a newer leader's state is the one
                return exc.code, str(exc)
        return ErrorCode.NONE, None

    async def acquire(
        self,
        group_id: str,
        member_id: str,
        tid: uuid.UUID,
        partition: Partition,
        max_bytes: int,
        max_records: int,
        batch_size: int | None = None,
    ) -> Acquired:
        """Read from the partition's next fetch offset and acquire what can be."""
        self._ensure_timer()
        key = (group_id, tid, partition.index)
        try:
            share = await self._share_partition(key, partition)
        except PersistError as exc:
            quiet = exc.code == ErrorCode.OFFSET_NOT_AVAILABLE  # passes once followers fetch
            log.log(logging.DEBUG if quiet else logging.WARNING,
                    "share state of %s not read: %s", key, exc)
            return Acquired()
        delivery = share.delivery
        if not delivery.can_acquire():
            return Acquired()
        read_committed = self.settings(group_id).read_committed
        async with self._lock:
            offset = delivery.next_fetch_offset()
        if offset >= partition.high_watermark:
            return Acquired()
        # A fetch takes at most MaxRecords records: reading the request's MaxBytes (50 MB
        # from librdkafka) would copy the whole backlog on every fetch to keep a few
        # hundred records. The first batch still comes whole, whatever its size.
        read_bytes = min(max_bytes, READ_BYTES_PER_ACQUIRE)
        try:
            data, aborted = await trio.to_thread.run_sync(
                _read, partition, offset, read_bytes, read_committed
            )
        except OffsetOutOfRange:
            async with self._lock:
                delivery.log_start_moved(partition.log_start_offset)
            return Acquired()
        located = fetched_batches(data) if data else []
        if not located:
            return Acquired()
        async with self._lock:
            if delivery.next_fetch_offset() != offset:
                return Acquired()  # another fetch acquired from there meanwhile
            result = delivery.acquire(
                member_id,
                [b for b, _s, _e in located],
                max_records,
                now_ms(),
                fetch_offset=offset,
                batch_size=batch_size,
                aborted_transactions=aborted if read_committed else None,
            )
        if not result.records:
            return Acquired()
        self._rearm.set()
        first, last = result.records[0].first_offset, result.records[-1].last_offset
        used = [(s, e) for b, s, e in located if b.last_offset >= first and b.base_offset <= last]
        start, end = used[0][0], used[-1][1]
        # The read already is a copy: hand it on whole when every batch in it is used.
        records = data if (start, end) == (0, len(data)) else data[start:end]
        return Acquired(
            records,
            [(r.first_offset, r.last_offset, r.delivery_count) for r in result.records],
        )

    async def release_member(self, group_id: str, member_id: str,
                             partitions: Iterable[tuple[uuid.UUID, int]] | None = None) -> None:
        """A member's session closed: what it holds goes back (or is archived)."""
        wanted = None if partitions is None else set(partitions)
        for key, share in list(self._partitions.items()):
            if key[0] != group_id or (wanted is not None and (key[1], key[2]) not in wanted):
                continue
            async with share.write_lock:
                async with self._lock:
                    changed = share.delivery.release_member(member_id)
                if changed:
                    await self._persist_quietly(key, share)
        self._released()
        if self._clustered and not self.sessions.has_group(group_id):
            await self._forget_idle_group(group_id)

    async def _forget_idle_group(self, group_id: str) -> None:
        """Cluster mode: no member of the group has a session here any more, so its share
        partitions here hold nothing acquired and everything else is at the coordinator:
        they are dropped, as Kafka's share partition manager drops an empty group's, and
        the next fetch reads the coordinator's state again (which AlterShareGroupOffsets
        or DeleteShareGroupOffsets may have changed meanwhile)."""
        for key in [k for k in self._partitions if k[0] == group_id]:
            share = self._partitions[key]
            async with share.write_lock:
                if (self._partitions.get(key) is share and not self.sessions.has_group(group_id)
                        and share.delivery.count(RecordState.ACQUIRED) == 0):
                    self._retire(key)

    async def _persist_quietly(self, key: ShareKey, share: _SharePartition) -> None:
        """A write nobody waits for (a release, an expiry): a failure is logged; the next
        write carries the state."""
        try:
            await self._persist(key, share)
        except PersistError as exc:
            log.warning("share state of %s not written: %s", key, exc)
            if exc.code in _DEPOSED:
                self._retire(key)

    async def close_session(self, key: SessionKey) -> None:
        session = self.sessions.close(key)
        if session is not None:
            await self.release_member(key[0], key[1], set(session.partitions))

    def watch_connection(self, connection) -> None:
        """Kafka ends a share session with its connection: once per connection (a
        security Session), a close listener that releases its sessions' records."""
        if id(connection) in self._watched:
            return
        self._watched.add(id(connection))

        def closed() -> None:
            self._watched.discard(id(connection))
            nursery = self.broker.background_nursery
            for session in self.sessions.closed_connection(connection):
                if nursery is None or nursery.cancel_scope.cancel_called:
                    return  # the broker is stopping: no lock outlives it anyway
                nursery.start_soon(self.release_member, session.key[0], session.key[1],
                                   set(session.partitions))

        connection.on_close.append(closed)

    async def forget_groups(self, group_ids: Iterable[str]) -> None:
        """DeleteGroups: the groups' share partitions go with them, tombstoned."""
        keys: set[ShareKey] = set()
        for group_id in set(group_ids):
            try:
                keys |= await self._stored_keys(group_id)
            except PersistError as exc:
                log.warning("share state of group %s not deleted: %s", group_id, exc)
        for key in keys:
            self._retire(key)
            if self._persisted is not None:
                self._persisted.pop(key, None)
            try:
                await self.persister.write(key, None)
            except PersistError as exc:
                log.warning("share state of %s not deleted: %s", key, exc)

    # Metrics ------------------------------------------------------------------------

    def counter_totals(self) -> dict[str, int]:
        """Every share partition's delivery counters summed, since the start: records
        acquired, redelivered, acknowledged by type (``ack_accept``, ...), locks
        expired, released by a closed session, archived at the delivery limit."""
        totals = dict(self._retired)
        for share in self._partitions.values():
            for name, value in _counter_items(share.delivery):
                totals[name] = totals.get(name, 0) + value
        return totals

    def _retire(self, key: ShareKey) -> None:
        share = self._partitions.pop(key, None)
        if share is not None:
            for name, value in _counter_items(share.delivery):
                self._retired[name] = self._retired.get(name, 0) + value

    # Administration (Describe/Alter/DeleteShareGroupOffsets) ------------------------

    async def load(self) -> set[str]:
        """Read ``__share_group_state`` (if it exists): the groups with share partitions,
        which exist after a restart as Kafka's do, members or not."""
        return {key[0] for key in await self._persisted_states()} | {
            key[0] for key in self._partitions
        }

    async def start_offsets(
        self, group_id: str, wanted: Iterable[tuple[uuid.UUID, int]] | None = None
    ) -> dict[tuple[uuid.UUID, int], tuple[int, int]]:
        """(topic id, partition) -> (start offset, delivery complete count or -1) of the
        group's share partitions that have a state, live or persisted: those of
        ``wanted``, or every one the group has. In a cluster the states live at their
        share coordinators, spread over the brokers: each is asked for its summary."""
        if self._clustered:
            return await self._coordinator_start_offsets(group_id, wanted)
        out = {}
        for key, state in (await self._persisted_states()).items():
            if key[0] == group_id:
                out[(key[1], key[2])] = (state.start_offset, state.delivery_complete_count)
        for key, share in self._partitions.items():
            if key[0] == group_id:
                delivery = share.delivery
                out[(key[1], key[2])] = (delivery.start_offset, delivery.delivery_complete_count)
        if wanted is not None:
            keep = set(wanted)
            out = {k: v for k, v in out.items() if k in keep}
        return out

    async def _coordinator_start_offsets(
        self, group_id: str, wanted: Iterable[tuple[uuid.UUID, int]] | None
    ) -> dict[tuple[uuid.UUID, int], tuple[int, int]]:
        """Cluster mode: without ``wanted``, every partition of every topic a share group
        may read (internal topics excepted) is a candidate; Kafka's group coordinator
        remembers the initialized ones instead. Raises PersistError."""
        if wanted is None:
            topology = self.broker.topology
            wanted = [
                (tid, index)
                for name, index in topology.all_partitions() if not name.startswith("__")
                if (tid := topology.topic_id(name)) is not None
            ]
        out: dict[tuple[uuid.UUID, int], tuple[int, int]] = {}
        failures: list[PersistError] = []
        limiter = trio.CapacityLimiter(16)

        async def ask(tid: uuid.UUID, index: int) -> None:
            async with limiter:
                try:
                    state = await self.persister.summary((group_id, tid, index))
                except PersistError as exc:
                    failures.append(exc)
                    return
            if state is not None:
                out[(tid, index)] = (state.start_offset, state.delivery_complete_count)

        async with trio.open_nursery() as nursery:
            for tid, index in wanted:
                nursery.start_soon(ask, tid, index)
        if failures:
            raise failures[0]
        for key, share in self._partitions.items():
            if key[0] == group_id and (key[1], key[2]) in out and not self._stale(share):
                delivery = share.delivery  # led here: as fresh as its coordinator's, or more
                out[(key[1], key[2])] = (delivery.start_offset, delivery.delivery_complete_count)
        return out

    async def has_stored_state(self, group_id: str) -> bool:
        """Whether the group has a share partition's state, here or (in a cluster) at
        its coordinators; False if they cannot be asked now."""
        if any(key[0] == group_id for key in self._partitions):
            return True
        try:
            return bool(await self.start_offsets(group_id))
        except PersistError as exc:
            log.info("share state of group %s not read: %s", group_id, exc)
            return False

    async def _stored_keys(self, group_id: str) -> set[ShareKey]:
        """The group's share partitions with a state here or at their coordinators."""
        live = {k for k in self._partitions if k[0] == group_id}
        return live | {(group_id, tid, index) for tid, index in await self.start_offsets(group_id)}

    async def alter_start_offset(self, group_id: str, tid: uuid.UUID, index: int,
                                 offset: int) -> None:
        """AlterShareGroupOffsets (the group has no members): start over at ``offset``
        with nothing in flight, under a new state epoch; persisted. Raises PersistError."""
        key = (group_id, tid, index)
        if self._clustered:
            # At the coordinator, as InitializeShareGroupState: the new state epoch fences
            # the data leader's copy, which is dropped and reloaded at its next write.
            current = await self.persister.summary(key)
            self._retire(key)
            await self.persister.write(key, rec.ShareState(
                rec.SNAPSHOT, 0, current.state_epoch + 1 if current is not None else 0, -1,
                offset, (), delivery_complete_count=0))
            return
        persisted = (await self._persisted_states()).get(key)
        share = self._partitions.get(key)
        if share is None:
            settings = self.settings(group_id)
            epoch = persisted.state_epoch if persisted is not None else 0
            share = _SharePartition(
                SharePartitionDelivery(offset, self._delivery_config(settings),
                                       state_epoch=epoch),
                created_ms=int(time.time() * 1000),
            )
            self._partitions[key] = share
        async with share.write_lock:
            async with self._lock:
                share.delivery.alter_start_offset(offset)
            await self._persist(key, share)

    async def forget_partitions(self, group_id: str, topic_ids: set[uuid.UUID]) -> None:
        """DeleteShareGroupOffsets: the group's share partitions of those topics go
        (tombstoned); a later fetch starts them again from share.auto.offset.reset."""
        keys = {k for k in await self._stored_keys(group_id) if k[1] in topic_ids}
        for key in keys:
            self._retire(key)
            if self._persisted is not None:
                self._persisted.pop(key, None)
            await self.persister.write(key, None)

    # Waiting ------------------------------------------------------------------------

    async def wait_for_records(self, partitions: list[Partition], deadline: float) -> None:
        """A share fetch that acquired nothing: until new records are appended to one
        of ``partitions``, records are released here, or ``deadline`` (trio time)."""
        event = trio.Event()
        for partition in partitions:
            partition.add_waiter(event)
        self._waiters.add(event)
        try:
            with trio.move_on_at(deadline):
                await event.wait()
        finally:
            for partition in partitions:
                partition.remove_waiter(event)
            self._waiters.discard(event)

    def _released(self) -> None:
        for event in self._waiters:
            event.set()
        self._waiters.clear()
        self._rearm.set()

    # Timer --------------------------------------------------------------------------

    async def _timer(self) -> None:
        while True:
            deadlines = [d for s in self._partitions.values()
                         if (d := s.delivery.next_deadline_ms()) is not None]
            deadline = min(deadlines) if deadlines else None
            self._rearm = trio.Event()
            delay = math.inf if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            with trio.move_on_after(delay):
                await self._rearm.wait()
                continue
            now = now_ms()
            for key, share in list(self._partitions.items()):
                due = share.delivery.next_deadline_ms()
                if due is None or due > now:
                    continue
                async with share.write_lock:
                    async with self._lock:
                        changed = share.delivery.expire_locks(now_ms())
                    if changed:
                        log.debug("acquisition locks expired on %s", key)
                        await self._persist_quietly(key, share)
            self._released()


def _counter_items(delivery: SharePartitionDelivery) -> list[tuple[str, int]]:
    c = delivery.counters
    items = [
        ("acquired", c.acquired),
        ("redelivered", c.redelivered),
        ("locks_expired", c.locks_expired),
        ("released_on_close", c.released_on_close),
        ("archived_at_limit", c.archived_at_limit),
    ]
    items += [(f"ack_{kind.name.lower()}", count) for kind, count in c.acknowledged.items()]
    return items


def _read(partition: Partition, offset: int, max_bytes: int, read_committed: bool):
    """Worker thread: the stored batches from ``offset`` and, for read_committed, the
    aborted transactions they overlap."""
    _stable, _hw, _start, info = partition.read_for_fetch(
        offset, max_bytes, max_bytes, read_committed, False
    )
    if info is None or not info.regions:
        return b"", []
    data = info.to_bytes()
    aborted: list[tuple[int, int]] = []
    if read_committed:
        upper = info.next_offset if info.next_offset >= 0 else partition.last_stable_offset
        aborted = partition.aborted_transactions(offset, upper)
    return data, aborted
