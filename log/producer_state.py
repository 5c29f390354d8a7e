"""Idempotent and transactional producer bookkeeping of one partition log.

The Java client, kafka-python 3 and Spark's Kafka sink turn idempotence on by
default, so retried batches must not be written twice. As in Kafka, each
(producer id, partition) remembers its epoch and its last five batches: a
batch equal to one of them is a duplicate and is acknowledged with the offset
it got the first time; a batch that does not continue the last sequence is
refused with OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced.

The table is fed from batch *headers* only (producer id, epoch, base sequence,
last offset delta), both by appends and by the replay that rebuilds it after a
restart (see ``producer_state_manager``), so live state and rebuilt state are
the same function of the log. Pure and synchronous: no I/O, no locks; the
owning :class:`~kafkette.log.partition_log.PartitionLog` decides who may call
what when (see its docstring).

Transactions (KIP-98), as Kafka's ProducerAppendInfo: a transactional data
batch from a producer with no open transaction opens one at its base offset
(``current_txn_first_offset``); batches with base sequence -1 (the group
coordinator's TxnOffsetCommit writes) open or extend it without sequence
bookkeeping. A COMMIT/ABORT marker closes it and returns a
:class:`CompletedTxn`; its epoch becomes the producer's and its coordinator
epoch is remembered. A non-transactional batch while a transaction is open
is INVALID_TXN_STATE; an older epoch is INVALID_PRODUCER_EPOCH; a marker from
an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED. The first offset
of the earliest open transaction (:attr:`ProducerStateTable.first_unstable`)
bounds the last stable offset.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import CONTROL_MASK, TRANSACTIONAL_MASK, BatchHeader

BATCHES_REMEMBERED = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
SEQUENCE_SPACE = 1 << 31
NO_TIMESTAMP = -1
_TXN_OR_CONTROL = TRANSACTIONAL_MASK | CONTROL_MASK


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One remembered batch: its sequence range and where it was appended."""

    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    """What a partition knows of one producer id.

    ``last_append_ms`` drives ``producer.id.expiration.ms``.
    ``current_txn_first_offset`` is the first offset of its open transaction
    (-1: none); ``coordinator_epoch`` that of its last marker (-1: none).
    Both are snapshotted.
    """

    epoch: int
    last_append_ms: int = NO_TIMESTAMP
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_REMEMBERED))

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1


@dataclass(frozen=True, slots=True)
class SequenceVerdict:
    """What to do with a batch: append it, answer with an earlier result, or refuse."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: BatchMetadata | None = None

    @property
    def append(self) -> bool:
        return self.error == ErrorCode.NONE and self.duplicate_of is None


APPEND = SequenceVerdict()
_INVALID_EPOCH = SequenceVerdict(ErrorCode.INVALID_PRODUCER_EPOCH)
_INVALID_TXN_STATE = SequenceVerdict(ErrorCode.INVALID_TXN_STATE)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker just closed: Kafka's CompletedTxn."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class ProducerStateTable:
    """Sequence state of every idempotent producer that wrote to one partition."""

    __slots__ = ("_entries", "_open", "first_unstable")

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction
        self._open: dict[int, int] = {}
        # min(_open.values()) as published (see refresh_first_unstable); None: no
        # open transaction. One attribute, so readers in other threads see
        # either the old or the new value, never a dict mid-update.
        self.first_unstable: int | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def items(self) -> list[tuple[int, ProducerEntry]]:
        """(producer id, entry) in producer id order (snapshots are deterministic).

        From a copy of the dict (one C-level step under the GIL), so a reader on
        the event loop (DescribeProducers) is safe while a worker thread appends
        or expires producers.
        """
        return sorted(dict(self._entries).items())

    def put(self, producer_id: int, entry: ProducerEntry) -> None:
        """Install an entry as read from a snapshot."""
        self._entries[producer_id] = entry
        if entry.current_txn_first_offset >= 0:
            self._open[producer_id] = entry.current_txn_first_offset
        else:
            self._open.pop(producer_id, None)
        self.refresh_first_unstable()

    def open_transactions(self) -> list[tuple[int, int]]:
        """(producer id, first offset) of every open transaction, by first offset."""
        return sorted(dict(self._open).items(), key=lambda item: (item[1], item[0]))

    def refresh_first_unstable(self) -> None:
        """Publish the earliest open transaction's first offset.

        The partition log calls this after an append's abort-index entries
        are written, so a reader never sees the LSO pass aborted data before
        the entry that marks it aborted.
        """
        self.first_unstable = min(self._open.values()) if self._open else None

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """Kafka's lastStableOffset(completedTxn): the LSO once ``completed`` is closed."""
        others = [first for pid, first in self._open.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def check_epoch(self, producer_id: int, producer_epoch: int) -> ErrorCode:
        """INVALID_PRODUCER_EPOCH for an epoch older than the one this partition saw."""
        entry = self._entries.get(producer_id)
        if entry is not None and producer_epoch < entry.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        return ErrorCode.NONE

    def check_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> ErrorCode:
        """May a COMMIT/ABORT marker with these epochs be written? (Kafka's appendEndTxnMarker)."""
        error = self.check_epoch(producer_id, producer_epoch)
        if error != ErrorCode.NONE:
            return error
        entry = self._entries.get(producer_id)
        if entry is not None and coordinator_epoch < entry.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    def next_sequence(self, producer_id: int, epoch: int) -> int | None:
        """The sequence the producer's next batch must start with at ``epoch``; None when
        this partition holds no batch of it at that epoch (unknown, or a new epoch)."""
        entry = self._entries.get(producer_id)
        if entry is None or entry.epoch != epoch or not entry.batches:
            return None
        return (entry.batches[-1].last_sequence + 1) % SEQUENCE_SPACE

    def check(self, header: BatchHeader) -> SequenceVerdict:
        """Judge an incoming batch against what this partition remembers.

        Reads one entry and never mutates, so it may run while another thread
        only removes entries (expiration): a dict lookup is atomic. Markers
        (control batches) are judged on their epoch only; their coordinator
        epoch is in the record, see :meth:`check_marker`.
        """
        if header.producer_id < 0 or (
            header.base_sequence < 0 and not header.attributes & _TXN_OR_CONTROL
        ):
            return APPEND
        entry = self._entries.get(header.producer_id)
        if entry is None:
            # Unknown producer: new, expired, or its data deleted. As Kafka
            # since KIP-360, accept whatever sequence it starts with.
            return APPEND
        if header.producer_epoch < entry.epoch:
            return _INVALID_EPOCH
        attributes = header.attributes
        if header.base_sequence < 0 or attributes & CONTROL_MASK:
            # Markers, and the group coordinator's transactional offset writes.
            if not attributes & _TXN_OR_CONTROL and entry.current_txn_first_offset >= 0:
                return _INVALID_TXN_STATE
            return APPEND
        verdict = self._check_sequence(header, entry)
        if (
            entry.current_txn_first_offset >= 0
            and not attributes & TRANSACTIONAL_MASK
            and verdict is APPEND
        ):
            return _INVALID_TXN_STATE
        return verdict

    def _check_sequence(self, header: BatchHeader, entry: ProducerEntry) -> SequenceVerdict:
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return APPEND
        first_sequence, last_sequence = header.base_sequence, header.last_sequence
        for batch in entry.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return SequenceVerdict(duplicate_of=batch)
        # No batch at this epoch yet (a marker started it): the sequence starts at 0, as
        # Kafka's inSequence(NO_SEQUENCE, first) says.
        last = entry.batches[-1].last_sequence if entry.batches else -1
        if header.base_sequence != (last + 1) % SEQUENCE_SPACE:
            return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return APPEND

    def _entry_for(self, producer_id: int, epoch: int) -> ProducerEntry:
        """The producer's entry at ``epoch``: a new epoch forgets the batches
        (Kafka's maybeUpdateProducerEpoch) but keeps the transaction fields."""
        entry = self._entries.get(producer_id)
        if entry is None:
            entry = ProducerEntry(epoch)
            self._entries[producer_id] = entry
        elif epoch != entry.epoch:
            entry = ProducerEntry(
                epoch, entry.last_append_ms, entry.coordinator_epoch,
                entry.current_txn_first_offset,
            )
            self._entries[producer_id] = entry
        return entry

    def record(self, header: BatchHeader, base_offset: int, now_ms: int) -> None:
        """Remember a data batch appended at ``base_offset`` (header's own base offset ignored).

        Markers go through :meth:`record_marker` (they need their record).
        """
        if header.producer_id < 0 or header.is_control:
            return
        transactional = header.attributes & TRANSACTIONAL_MASK
        if header.base_sequence < 0 and not transactional:
            return
        entry = self._entries.get(header.producer_id)
        if entry is None or entry.epoch != header.producer_epoch:
            entry = self._entry_for(header.producer_id, header.producer_epoch)
        if header.base_sequence >= 0:
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    base_offset,
                    base_offset + header.last_offset_delta,
                )
            )
        if transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = base_offset
            self._open[header.producer_id] = base_offset
        entry.last_append_ms = now_ms

    def record_marker(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, offset: int,
        *, aborted: bool, now_ms: int,
    ) -> CompletedTxn | None:
        """A COMMIT/ABORT marker appended at ``offset``: close the open transaction.

        Returns the transaction it closed (None when the producer had none
        open here: an empty transaction, or a marker written twice).
        Publishing the new first unstable offset is the caller's
        (:meth:`refresh_first_unstable`).
        """
        entry = self._entry_for(producer_id, producer_epoch)
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, offset, aborted)
        entry.current_txn_first_offset = -1
        self._open.pop(producer_id, None)
        entry.coordinator_epoch = coordinator_epoch
        entry.last_append_ms = now_ms
        return completed

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` or more; returns how many.

        Kafka's ``producer.id.expiration.ms``. A producer with an open
        transaction never expires (the transaction coordinator aborts it
        after its timeout, and the marker closes it here).
        """
        expired = [
            producer_id
            for producer_id, entry in self._entries.items()
            if entry.current_txn_first_offset < 0
            and now_ms - entry.last_append_ms >= expiration_ms
        ]
        for producer_id in expired:
            del self._entries[producer_id]
        return len(expired)

