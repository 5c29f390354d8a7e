"""What one share group has in flight on one partition (KIP-932's share-partition), as pure state.

A share group lets many members read one partition at once, so the partition's leader keeps,
per group, how far each record's delivery has come. Records below the *share-partition start
offset* (SPSO) are done with; records from there to the *end offset* (SPEO, the last record
ever acquired) are *in flight*; records past it have not been read yet. An in-flight record is

* AVAILABLE: waiting for a (re)delivery;
* ACQUIRED: delivered to one member, which holds it under a lock until a deadline;
* ACKNOWLEDGED (accepted) or ARCHIVED (rejected, a gap, out of delivery attempts, aborted,
  gone from the log): finished. The SPSO moves past the leading run of finished records, so
  the in-flight window, and this object's memory, stay bounded by
  ``share.partition.max.record.locks``.

Each record has a *delivery count*: how many times it was acquired. A record released (by its
member, by its lock expiring, or by its member's share session closing) goes back to AVAILABLE,
unless its count has reached ``share.delivery.count.limit``: then it is ARCHIVED and never
delivered again.

State is kept as ranges of offsets that share everything (state, delivery count, holder, lock
deadline), never per record: a log batch is acquired as one range and accepted as one range,
whatever its record count, and a range is cut only where a request names part of it (a partial
or per-offset acknowledgement, a renewal of some offsets, a capped acquisition). Kafka's
``SharePartition`` keeps one state per fetched batch and switches that batch to per-offset
states on a partial acknowledgement; ranges give the same behaviour with less memory.

The rules are Kafka 4.3's (``SharePartition``, ``InFlightState``, ``RecordState``; ShareFetch
v2 with KIP-1206's record-limit mode and KIP-1222's RENEW; KAFKA-17541's throttled redelivery;
KAFKA-19972's delivery count on session close). docs/share-groups.md says where we differ.

Pure state: no I/O, no clock, no trio. Calls that need the time take ``now_ms``;
``next_deadline_ms`` and ``expire_locks`` fire lock timeouts; one task calls it at a time.
Calls that change what Kafka persists return the changed ranges as ``StateBatch``es (what a
ShareUpdate record in ``__share_group_state`` carries); ``state_batches`` is the whole
persistent view (a ShareSnapshot's), and ``restore`` rebuilds the state from it.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from operator import attrgetter

from kafkette.wire.errors import ErrorCode

__all__ = [
    "DEFAULT_DELIVERY_CONFIG",
    "AckBatch",
    "AckResult",
    "AckType",
    "AcquireResult",
    "AcquiredRecords",
    "DeliveryConfig",
    "DeliveryCounters",
    "FetchedBatch",
    "InFlightRange",
    "RecordState",
    "SharePartitionDelivery",
    "StateBatch",
    "aborted_batch_ranges",
    "validate_acknowledgement_batches",
]


class RecordState(IntEnum):
    """A record's delivery state. The numbers are Kafka's, as persisted in state batches
    (Kafka's 3, ARCHIVING, is KIP-1191's and unused by 4.3's share partition)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


_FINISHED = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


class AckType(IntEnum):
    """ShareFetch / ShareAcknowledge ``AcknowledgeTypes``. GAP marks an offset with no record
    (compacted away, a control record): the client reports it so the offset can be finished."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


# Where each acknowledgement sends a record (RELEASE is ARCHIVED instead at the delivery limit;
# RENEW keeps the record ACQUIRED and moves its lock deadline).
_ACK_STATE = {
    AckType.GAP: RecordState.ARCHIVED,
    AckType.ACCEPT: RecordState.ACKNOWLEDGED,
    AckType.RELEASE: RecordState.AVAILABLE,
    AckType.REJECT: RecordState.ARCHIVED,
}


@dataclass(frozen=True, slots=True)
class DeliveryConfig:
    """The group's delivery settings, with Kafka 4.3's defaults.

    Kafka's group configs ``share.record.lock.duration.ms``, ``share.delivery.count.limit``,
    ``share.partition.max.record.locks`` and ``share.renew.acknowledge.enable`` override the
    broker's ``group.share.*`` ones; the config parser applies Kafka's validators. Kafka reads
    them on every call, so assign a new one to ``SharePartitionDelivery.config`` when the
    group's config changes: it applies from the next call on (locks already taken keep their
    deadline).
    """

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    partition_max_record_locks: int = 2_000
    renew_acknowledge_enabled: bool = True


DEFAULT_DELIVERY_CONFIG = DeliveryConfig()


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """The header of one log batch the fetch before an ``acquire`` read: its offsets, and for
    read_committed what tells aborted data apart (the producer, whether the batch is
    transactional, whether it is a control batch and, if so, whether it is an ABORT marker)."""

    base_offset: int
    last_offset: int
    producer_id: int = -1
    is_transactional: bool = False
    is_control: bool = False
    is_abort_marker: bool = False


@dataclass(frozen=True, slots=True)
class AckBatch:
    """One AcknowledgementBatch: one type for the whole range, or one per offset."""

    first_offset: int
    last_offset: int
    ack_types: Sequence[int]


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """ShareFetch's AcquiredRecords: a range delivered to the member, and which delivery of
    these records this is (1 for the first)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcquireResult:
    records: tuple[AcquiredRecords, ...] = ()

    @property
    def count(self) -> int:
        """Records acquired: what ShareFetch takes off MaxRecords for the next partitions."""
        return sum(r.last_offset - r.first_offset + 1 for r in self.records)


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted state batch (ShareSnapshot / ShareUpdate / WriteShareGroupState):
    delivery state 0 AVAILABLE, 2 ACKNOWLEDGED or 4 ARCHIVED, and the delivery count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AckResult:
    """The partition's answer to an acknowledgement; ``state_changes`` are what to persist
    (empty on an error: nothing changed)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state_changes: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class InFlightRange:
    """One range of the in-flight window, for describe tools and tests."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str | None = None  # the holder, while ACQUIRED
    deadline_ms: int | None = None  # the lock deadline, while ACQUIRED


@dataclass(slots=True)
class DeliveryCounters:
    """Running totals for metrics, in records (Kafka's share-group metrics count records)."""

    acquired: int = 0
    redelivered: int = 0  # acquired with a delivery count above 1
    acknowledged: dict[AckType, int] = field(default_factory=lambda: dict.fromkeys(AckType, 0))
    locks_expired: int = 0
    released_on_close: int = 0  # released by ``release_member``
    archived_at_limit: int = 0  # released at the delivery count limit, hence archived


@dataclass(slots=True)
class _Span:
    """Offsets ``first..last`` sharing one state. ``batch_records`` is the size of the in-flight
    batch the span was cut from (its first acquisition's, or its persisted batch's): throttled
    redelivery takes a fraction of it, as Kafka takes a fraction of its cached batch."""

    first: int
    last: int
    state: RecordState
    delivery_count: int
    batch_records: int
    member_id: str = ""
    deadline_ms: int = 0

    def tail(self, offset: int) -> _Span:
        return _Span(
            offset,
            self.last,
            self.state,
            self.delivery_count,
            self.batch_records,
            self.member_id,
            self.deadline_ms,
        )


_FIRST = attrgetter("first")
_BASE = attrgetter("base_offset")
_NOTHING = AcquireResult()
_UNKNOWN = object()


class SharePartitionDelivery:
    """The delivery state of one share group on one partition (Kafka's ``SharePartition``).

    ``start_offset`` is where delivery starts: what the share coordinator persisted, or for a
    group new to the partition what the caller resolved ``share.auto.offset.reset`` (latest,
    earliest, by_duration) to against the log.
    """

    def __init__(
        self,
        start_offset: int,
        config: DeliveryConfig = DEFAULT_DELIVERY_CONFIG,
        *,
        state_epoch: int = 0,
    ) -> None:
        self.config = config
        self.state_epoch = state_epoch
        self.counters = DeliveryCounters()
        self._start = start_offset
        self._end = start_offset - 1  # the last in-flight offset; start - 1 when none
        # Contiguous, sorted, covering exactly start..end when not empty.
        self._spans: list[_Span] = []
        self._dirty_lo: int | None = None  # offsets changed since the last _tidy
        self._dirty_hi = 0
        self._next_fetch: object = _UNKNOWN
        self._next_deadline: object = _UNKNOWN

    # --- what the window holds ---------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        """The SPSO: every record below it is finished."""
        return self._start

    @property
    def end_offset(self) -> int:
        """The SPEO: the last in-flight offset (``start_offset - 1`` when nothing is in flight;
        Kafka reports ``start_offset`` then)."""
        return self._end

    @property
    def in_flight_count(self) -> int:
        """Offsets from SPSO to SPEO, whatever their state: what
        ``share.partition.max.record.locks`` bounds (Kafka's in-flight message count)."""
        return self._end - self._start + 1

    @property
    def range_count(self) -> int:
        """How many ranges the window is kept as (memory; Kafka's in-flight batch count)."""
        return len(self._spans)

    def count(self, state: RecordState) -> int:
        """In-flight records in ``state``."""
        return sum(s.last - s.first + 1 for s in self._spans if s.state is state)

    @property
    def delivery_complete_count(self) -> int:
        """Finished records at or above the SPSO (KIP-1226's DeliveryCompleteCount, persisted
        with the state since Kafka 4.2 for the share-partition lag)."""
        return sum(s.last - s.first + 1 for s in self._spans if s.state in _FINISHED)

    def ranges(self) -> tuple[InFlightRange, ...]:
        out = []
        for s in self._spans:
            held = s.state is RecordState.ACQUIRED
            out.append(
                InFlightRange(
                    s.first,
                    s.last,
                    s.state,
                    s.delivery_count,
                    s.member_id if held else None,
                    s.deadline_ms if held else None,
                )
            )
        return tuple(out)

    def next_fetch_offset(self) -> int:
        """Where the next log read for this group should start: the first AVAILABLE in-flight
        offset (a redelivery), else the offset after the window."""
        if self._next_fetch is _UNKNOWN:
            self._next_fetch = next(
                (s.first for s in self._spans if s.state is RecordState.AVAILABLE), self._end + 1
            )
        return self._next_fetch  # type: ignore[return-value]

    def can_acquire(self) -> bool:
        """Whether a fetch for this group could acquire anything: a redelivery is waiting, or
        the window has room (Kafka's ``canAcquireRecords``, which keeps a full partition out
        of fetches)."""
        if self.next_fetch_offset() != self._end + 1:
            return True
        return self.in_flight_count < self.config.partition_max_record_locks

    def next_deadline_ms(self) -> int | None:
        """The earliest lock deadline, or None when nothing is acquired."""
        if self._next_deadline is _UNKNOWN:
            self._next_deadline = min(
                (s.deadline_ms for s in self._spans if s.state is RecordState.ACQUIRED),
                default=None,
            )
        return self._next_deadline  # type: ignore[return-value]

    # --- acquisition (ShareFetch) ------------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        batches: Sequence[FetchedBatch],
        max_records: int,
        now_ms: int,
        *,
        fetch_offset: int | None = None,
        batch_size: int | None = None,
        record_limit: bool = False,
        aborted_transactions: Iterable[tuple[int, int]] | None = None,
    ) -> AcquireResult:
        """Acquire for ``member_id`` what the log read from ``fetch_offset`` returned.

        ``batches`` are the batch headers read (sorted); ``fetch_offset`` defaults to
        ``next_fetch_offset()``, where the caller should have read from. AVAILABLE in-flight
        records are acquired first, then records past the window, until ``max_records``
        (ShareFetch's MaxRecords less what earlier partitions of the request took) and the
        window's room (``partition_max_record_locks``) are used up. The limit is soft, as
        Kafka's batch-optimized mode: a log batch is never cut, so the last one is taken
        whole. ``record_limit`` (ShareAcquireMode 1, KIP-1206) makes it exact: the rest of the
        last batch stays in flight as AVAILABLE. ``batch_size`` (ShareFetch's BatchSize) cuts
        newly acquired records into AcquiredRecords of about that many, at batch boundaries.

        ``aborted_transactions`` (read_committed only: the log's (producer id, first offset)
        list for the range read) archives the records of aborted transactions instead of
        delivering them. Control records are delivered inside the ranges, as Kafka does; the
        client skips them and acknowledges their offsets as GAP.
        """
        if max_records <= 0 or not batches:
            return _NOTHING
        if fetch_offset is None:
            fetch_offset = self.next_fetch_offset()
        hi = batches[-1].last_offset
        if hi < self._start:
            return _NOTHING
        config = self.config
        budget = min(max_records, config.partition_max_record_locks - self.in_flight_count)
        if budget <= 0:
            # The window is full: only redeliveries inside it, never records past it.
            if not self._spans or fetch_offset > self._end:
                return _NOTHING
            budget = min(max_records, self._end - fetch_offset + 1)
            hi = min(hi, self._end)

        base = batches[0].base_offset
        # Records the read skipped over are gone from the log (compaction): finish them.
        self._archive(fetch_offset, base - 1, RecordState.AVAILABLE)
        lo = max(base, self._start)
        deadline = now_ms + config.record_lock_duration_ms
        limit = config.delivery_count_limit
        throttle_from = max(2, -(-limit // 2))
        taken: list[tuple[int, int, int]] = []
        room = budget
        stop = False

        # Redeliveries: AVAILABLE ranges inside the window.
        pos, cached_hi = lo, min(hi, self._end)
        while pos <= cached_hi and room > 0:
            span = self._spans[self._index(pos)]
            if span.state is not RecordState.AVAILABLE:
                pos = span.last + 1
                continue
            last = min(span.last, cached_hi)
            count = span.delivery_count
            throttled = count >= throttle_from
            if throttled:
                # Records failing again and again may be what fails their consumer: deliver
                # them in ever smaller groups, on their own, and the last attempt one by one.
                if room < budget:
                    stop = True  # this range goes alone, in a later fetch
                    break
                if limit > 2 and count == limit - 1:
                    n = 1
                else:
                    n = max(1, span.batch_records >> (count - throttle_from + 1))
                if record_limit:
                    n = min(n, room)
                last = min(last, pos + n - 1)
            elif record_limit:
                last = min(last, pos + room - 1)
            elif last - pos + 1 > room:
                last = min(last, _batch_end(batches, pos + room - 1))
            self._take(pos, last, member_id, deadline)
            taken.append((pos, last, count + 1))
            room -= last - pos + 1
            pos = last + 1
            if throttled:
                stop = True
                break

        # New records, past the window.
        if not stop and room > 0 and hi > self._end:
            first = max(lo, self._end + 1)
            if not self._spans:
                # Nothing in flight: the window starts at the first record read.
                self._start, self._end = first, first - 1
            elif first > self._end + 1:
                # Offsets between the window and the first batch read are gone (compaction).
                gap = first - 1 - self._end
                self._append(_Span(self._end + 1, first - 1, RecordState.ARCHIVED, 0, gap))
            last = hi
            if room < last - first + 1:
                last = _batch_end(batches, first + room - 1)
            size = last - first + 1
            if record_limit and size > room:
                self._append(
                    _Span(
                        first, first + room - 1, RecordState.ACQUIRED, 1, size, member_id, deadline
                    )
                )
                self._append(_Span(first + room, last, RecordState.AVAILABLE, 0, size))
                taken.append((first, first + room - 1, 1))
            else:
                if record_limit or not batch_size or size <= batch_size:
                    chunks = [(first, last)]
                else:
                    chunks = _chunks(batches, first, last, batch_size)
                for a, z in chunks:
                    self._append(
                        _Span(a, z, RecordState.ACQUIRED, 1, z - a + 1, member_id, deadline)
                    )
                    taken.append((a, z, 1))

        if aborted_transactions is not None and taken:
            aborted = aborted_batch_ranges(batches, aborted_transactions)
            if aborted:
                for a, z in aborted:
                    self._archive(a, z, RecordState.ACQUIRED)
                taken = _without(taken, aborted)

        counters = self.counters
        for a, z, c in taken:
            counters.acquired += z - a + 1
            if c > 1:
                counters.redelivered += z - a + 1
        self._tidy()
        return AcquireResult(tuple(AcquiredRecords(a, z, c) for a, z, c in taken))

    # --- acknowledgement (ShareFetch / ShareAcknowledge) -------------------------------------

    def acknowledge(self, member_id: str, batches: Sequence[AckBatch], now_ms: int) -> AckResult:
        """Apply a member's acknowledgements for this partition, all or nothing.

        ACCEPT finishes a record (ACKNOWLEDGED); REJECT and GAP finish it as ARCHIVED;
        RELEASE makes it AVAILABLE again, or ARCHIVED once its delivery count reached the
        limit; RENEW keeps it acquired with a fresh lock. Every offset named at or above the
        SPSO must be ACQUIRED by ``member_id``, else INVALID_RECORD_STATE; offsets past the
        window are INVALID_REQUEST; batches wholly below the SPSO are ignored (their records
        were finished meanwhile, e.g. by retention). Kafka answers the same codes, but keeps
        the renewals a failed request made before its error.
        """
        error = validate_acknowledgement_batches(batches)
        if error:
            return AckResult(error, "malformed acknowledgement batches")
        plan: list[tuple[int, int, AckType]] = []
        for batch in batches:
            first, last, types = batch.first_offset, batch.last_offset, batch.ack_types
            if last < self._start:
                continue
            if not self._spans:
                return AckResult(ErrorCode.INVALID_RECORD_STATE, "no records are in flight")
            if first > self._end or last > self._end:
                return AckResult(ErrorCode.INVALID_REQUEST, "offsets past the acquired records")
            lo = max(first, self._start)
            if len(types) == 1:
                runs = [(lo, last, AckType(types[0]))]
            else:
                runs, offset = [], lo
                for ack_type, group in itertools.groupby(types[lo - first :]):
                    n = sum(1 for _ in group)
                    runs.append((offset, offset + n - 1, AckType(ack_type)))
                    offset += n
            for a, z, ack_type in runs:
                refusal = self._refuse(member_id, a, z)
                if refusal is not None:
                    return AckResult(ErrorCode.INVALID_RECORD_STATE, refusal)
                if ack_type is AckType.RENEW and not self.config.renew_acknowledge_enabled:
                    return AckResult(
                        ErrorCode.INVALID_RECORD_STATE, "renewing locks is disabled for the group"
                    )
            plan.extend(runs)

        changes: list[StateBatch] = []
        renewed_deadline = now_ms + self.config.record_lock_duration_ms
        for a, z, ack_type in plan:
            i, j = self._isolate(a, z)
            self.counters.acknowledged[ack_type] += z - a + 1
            for span in self._spans[i:j]:
                if ack_type is AckType.RENEW:
                    span.deadline_ms = renewed_deadline
                    continue
                state = _ACK_STATE[ack_type]
                if state is RecordState.AVAILABLE:
                    state = self._released_state(span)
                span.state, span.member_id, span.deadline_ms = state, "", 0
                changes.append(_state_batch(span))
        self._tidy()
        return AckResult(state_changes=_merged(changes))

    # --- releases: lock expiry, session close ------------------------------------------------

    def expire_locks(self, now_ms: int) -> tuple[StateBatch, ...]:
        """Release every record whose lock deadline has passed (AVAILABLE again, or ARCHIVED at
        the delivery limit; the count is not changed); returns what to persist."""
        changes = []
        for span in self._spans:
            if span.state is RecordState.ACQUIRED and span.deadline_ms <= now_ms:
                self.counters.locks_expired += span.last - span.first + 1
                self._touch(span.first, span.last)
                span.state = self._released_state(span)
                span.member_id, span.deadline_ms = "", 0
                changes.append(_state_batch(span))
        self._tidy()
        return _merged(changes)

    def release_member(self, member_id: str) -> tuple[StateBatch, ...]:
        """Release everything ``member_id`` holds: it left the group, or its share session
        closed. Since Kafka 4.2 (KAFKA-19972) the delivery count is not given back, so a
        member that crashes on a record still spends that record's attempts; returns what to
        persist."""
        changes = []
        for span in self._spans:
            if span.state is RecordState.ACQUIRED and span.member_id == member_id:
                self.counters.released_on_close += span.last - span.first + 1
                self._touch(span.first, span.last)
                span.state = self._released_state(span)
                span.member_id, span.deadline_ms = "", 0
                changes.append(_state_batch(span))
        self._tidy()
        return _merged(changes)

    # --- the start offset moved from outside -------------------------------------------------

    def log_start_moved(self, log_start_offset: int) -> None:
        """The log's start moved to ``log_start_offset`` (retention, DeleteRecords, or a fetch
        answered OFFSET_OUT_OF_RANGE): records below it are gone, whatever their state, and
        the SPSO follows. Kafka persists the new SPSO with the next state write."""
        if log_start_offset <= self._start:
            return
        if log_start_offset > self._end:
            self._spans.clear()
            self._end = log_start_offset - 1
        else:
            del self._spans[: self._cut(log_start_offset)]
        self._start = log_start_offset
        self._tidy()

    def alter_start_offset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: start over from ``start_offset`` with nothing in flight, under
        a new state epoch (Kafka initializes the share-partition state again). The caller
        checks the group has no members."""
        self._spans.clear()
        self._start, self._end = start_offset, start_offset - 1
        self.state_epoch += 1
        self._tidy()

    # --- durability --------------------------------------------------------------------------

    def state_batches(self) -> tuple[StateBatch, ...]:
        """The persistent view of the window, for a ShareSnapshot: every in-flight range with
        its state and delivery count. An ACQUIRED record is written as Kafka's persisted state
        has it: AVAILABLE with the count it was acquired at (Kafka never writes acquisitions,
        so after a restart the record is delivered again as that delivery)."""
        out = []
        for span in self._spans:
            if span.state is RecordState.ACQUIRED:
                out.append(
                    StateBatch(
                        span.first, span.last, RecordState.AVAILABLE, span.delivery_count - 1
                    )
                )
            else:
                out.append(_state_batch(span))
        return _merged(out)

    @classmethod
    def restore(
        cls,
        start_offset: int,
        batches: Iterable[StateBatch],
        config: DeliveryConfig = DEFAULT_DELIVERY_CONFIG,
        *,
        state_epoch: int = 0,
    ) -> SharePartitionDelivery:
        """Rebuild from persisted state (ReadShareGroupState's answer). Nothing is ACQUIRED
        after a restore: no lock survives the broker that granted it. Offsets between the
        batches have no persisted state (they were in flight, never released): they are
        AVAILABLE with delivery count 0, fetched before anything past the last batch, as
        Kafka's read-gap window does. Raises ValueError for batches that are not sorted,
        disjoint and at or above ``start_offset`` (Kafka fails the partition's load)."""
        state = cls(start_offset, config, state_epoch=state_epoch)
        prev = start_offset - 1
        for batch in batches:
            first, last = batch.first_offset, batch.last_offset
            if first <= prev or last < first:
                raise ValueError(f"state batch {first}-{last} is not after offset {prev}")
            if first > prev + 1:
                gap = _Span(prev + 1, first - 1, RecordState.AVAILABLE, 0, first - 1 - prev)
                state._append(gap)
            recorded = RecordState(batch.delivery_state)
            if recorded is RecordState.ACQUIRED:
                recorded = RecordState.AVAILABLE
            state._append(_Span(first, last, recorded, batch.delivery_count, last - first + 1))
            prev = last
        state._end = prev
        state._tidy()
        return state

    # --- internals ---------------------------------------------------------------------------

    def _released_state(self, span: _Span) -> RecordState:
        if span.delivery_count >= self.config.delivery_count_limit:
            self.counters.archived_at_limit += span.last - span.first + 1
            return RecordState.ARCHIVED
        return RecordState.AVAILABLE

    def _refuse(self, member_id: str, first: int, last: int) -> str | None:
        """Why ``member_id`` may not acknowledge ``first..last`` (None: it may)."""
        i = self._index(first)
        spans = self._spans
        while i < len(spans) and spans[i].first <= last:
            span = spans[i]
            if span.state is not RecordState.ACQUIRED:
                return f"offset {max(first, span.first)} is not acquired"
            if span.member_id != member_id:
                return f"offset {max(first, span.first)} is acquired by another member"
            i += 1
        return None

    def _take(self, first: int, last: int, member_id: str, deadline_ms: int) -> None:
        """Acquire ``first..last``, which lies inside one AVAILABLE span."""
        i, _ = self._isolate(first, last)
        span = self._spans[i]
        span.state = RecordState.ACQUIRED
        span.delivery_count += 1
        span.member_id, span.deadline_ms = member_id, deadline_ms

    def _archive(self, first: int, last: int, only: RecordState) -> None:
        """Archive the records of ``first..last`` that are in state ``only``."""
        first, last = max(first, self._start), min(last, self._end)
        pos = first
        while pos <= last:
            span = self._spans[self._index(pos)]
            end = min(span.last, last)
            if span.state is only:
                i, _ = self._isolate(pos, end)
                piece = self._spans[i]
                piece.state, piece.member_id, piece.deadline_ms = RecordState.ARCHIVED, "", 0
            pos = end + 1

    def _index(self, offset: int) -> int:
        """The index of the span holding ``offset`` (start <= offset <= end)."""
        return bisect_right(self._spans, offset, key=_FIRST) - 1

    def _cut(self, offset: int) -> int:
        """Make a span begin at ``offset`` (start <= offset <= end + 1); return its index."""
        if offset > self._end:
            return len(self._spans)
        i = self._index(offset)
        span = self._spans[i]
        if span.first == offset:
            return i
        self._spans.insert(i + 1, span.tail(offset))
        span.last = offset - 1
        return i + 1

    def _isolate(self, first: int, last: int) -> tuple[int, int]:
        """Cut spans so that ``spans[i:j]`` covers exactly ``first..last``; mark it changed."""
        i = self._cut(first)
        j = self._cut(last + 1)
        self._touch(first, last)
        return i, j

    def _append(self, span: _Span) -> None:
        self._spans.append(span)
        self._end = span.last
        self._touch(span.first, span.last)

    def _touch(self, first: int, last: int) -> None:
        if self._dirty_lo is None:
            self._dirty_lo, self._dirty_hi = first, last
        else:
            self._dirty_lo = min(self._dirty_lo, first)
            self._dirty_hi = max(self._dirty_hi, last)

    def _tidy(self) -> None:
        """After a change: merge equal neighbours around what changed, move the SPSO past the
        leading finished records (dropping them), forget cached answers."""
        spans = self._spans
        if self._dirty_lo is not None:
            lo, hi = max(self._dirty_lo, self._start), min(self._dirty_hi, self._end)
            self._dirty_lo = None
            if spans and lo <= hi:
                k = max(self._index(lo) - 1, 0)
                stop = min(self._index(hi) + 1, len(spans) - 1)
                while k < stop:
                    left, right = spans[k], spans[k + 1]
                    if _mergeable(left, right):
                        left.last = right.last
                        del spans[k + 1]
                        stop -= 1
                    else:
                        k += 1
        k = 0
        while k < len(spans) and spans[k].state in _FINISHED:
            k += 1
        if k == len(spans):
            self._start = self._end + 1
            spans.clear()
        elif k:
            self._start = spans[k].first
            del spans[:k]
        self._next_fetch = self._next_deadline = _UNKNOWN


def validate_acknowledgement_batches(
    batches: Sequence[AckBatch], *, max_ack_type: int = AckType.RENEW, renew_ack: bool = True
) -> ErrorCode:
    """Kafka's checks of one partition's acknowledgement batches before any state is touched
    (``KafkaApis.validateAcknowledgementBatches``): INVALID_REQUEST for a range backwards, a
    batch starting before the previous one ends, no types, a per-offset type list of the wrong
    length, a type outside 0..``max_ack_type`` (3 for ShareAcknowledge/ShareFetch v1, 4 from
    v2), or RENEW in a request without IsRenewAck. Kafka lets a batch start at the previous
    one's last offset; so does this."""
    prev_last = -1
    for batch in batches:
        types = batch.ack_types
        if batch.first_offset > batch.last_offset or batch.first_offset < prev_last:
            return ErrorCode.INVALID_REQUEST
        if not types:
            return ErrorCode.INVALID_REQUEST
        if len(types) > 1 and batch.last_offset - batch.first_offset != len(types) - 1:
            return ErrorCode.INVALID_REQUEST
        if min(types) < 0 or max(types) > max_ack_type:
            return ErrorCode.INVALID_REQUEST
        if not renew_ack and AckType.RENEW in types:
            return ErrorCode.INVALID_REQUEST
        prev_last = batch.last_offset
    return ErrorCode.NONE


def aborted_batch_ranges(
    batches: Sequence[FetchedBatch], aborted_transactions: Iterable[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The offset ranges of the batches read that belong to aborted transactions, given the
    log's (producer id, first offset) list for the read: a producer's transactional batches
    are aborted from an aborted transaction's first offset until its ABORT marker (Kafka's
    walk in ``SharePartition``, which a read_committed consumer does on its own otherwise)."""
    pending = sorted(aborted_transactions, key=lambda txn: txn[1])
    k, open_pids, out = 0, set(), []
    for batch in batches:
        if batch.producer_id < 0:
            continue
        while k < len(pending) and pending[k][1] <= batch.last_offset:
            open_pids.add(pending[k][0])
            k += 1
        if batch.is_control and batch.is_abort_marker:
            open_pids.discard(batch.producer_id)
        elif batch.is_transactional and batch.producer_id in open_pids:
            out.append((batch.base_offset, batch.last_offset))
    return out


def _batch_end(batches: Sequence[FetchedBatch], offset: int) -> int:
    """The last offset of the batch read that holds ``offset``, or ``offset`` itself: a soft
    record limit is rounded up to a whole batch."""
    i = bisect_right(batches, offset, key=_BASE) - 1
    if i >= 0 and offset <= batches[i].last_offset:
        return batches[i].last_offset
    return offset


def _chunks(
    batches: Sequence[FetchedBatch], first: int, last: int, batch_size: int
) -> list[tuple[int, int]]:
    """``first..last`` cut at batch boundaries into pieces of at least ``batch_size`` records
    (the last one may be smaller), as Kafka cuts newly acquired records."""
    out, start = [], first
    for batch in batches:
        if batch.base_offset > last:
            break
        if batch.base_offset - start >= batch_size:
            out.append((start, batch.base_offset - 1))
            start = batch.base_offset
    out.append((start, last))
    return out


def _without(
    taken: list[tuple[int, int, int]], holes: list[tuple[int, int]]
) -> list[tuple[int, int, int]]:
    """``taken`` ranges minus ``holes`` (both sorted)."""
    out = []
    for first, last, count in taken:
        for hole_first, hole_last in holes:
            if hole_last < first or hole_first > last:
                continue
            if hole_first > first:
                out.append((first, hole_first - 1, count))
            first = hole_last + 1
            if first > last:
                break
        if first <= last:
            out.append((first, last, count))
    return out


def _mergeable(left: _Span, right: _Span) -> bool:
    return (
        left.state is right.state
        and left.delivery_count == right.delivery_count
        and left.member_id == right.member_id
        and left.deadline_ms == right.deadline_ms
        and (left.batch_records == right.batch_records or left.state in _FINISHED)
    )


def _state_batch(span: _Span) -> StateBatch:
    return StateBatch(span.first, span.last, span.state, span.delivery_count)


def _merged(batches: list[StateBatch]) -> tuple[StateBatch, ...]:
    """Adjacent batches with the same state and count as one."""
    out: list[StateBatch] = []
    for batch in batches:
        if out:
            prev = out[-1]
            if (
                prev.last_offset + 1 == batch.first_offset
                and prev.delivery_state == batch.delivery_state
                and prev.delivery_count == batch.delivery_count
            ):
                out[-1] = StateBatch(
                    prev.first_offset, batch.last_offset, prev.delivery_state, prev.delivery_count
                )
                continue
        out.append(batch)
    return tuple(out)
