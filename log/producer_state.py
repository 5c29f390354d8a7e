"""Idempotent-producer bookkeeping of one partition log: sequence checks per producer.

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
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import BatchHeader

BATCHES_REMEMBERED = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN
SEQUENCE_SPACE = 1 << 31
NO_TIMESTAMP = -1


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

    ``last_append_ms`` drives ``producer.id.expiration.ms``. The two
    transaction fields are carried (and snapshotted) for the transactions
    work; idempotent producers leave them at -1.
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


def _is_idempotent(header: BatchHeader) -> bool:
    return header.producer_id >= 0 and header.base_sequence >= 0 and not header.is_control


class ProducerStateTable:
    """Sequence state of every idempotent producer that wrote to one partition."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._entries.get(producer_id)

    def items(self) -> Iterator[tuple[int, ProducerEntry]]:
        """(producer id, entry) in producer id order (snapshots are deterministic)."""
        for producer_id in sorted(self._entries):
            yield producer_id, self._entries[producer_id]

    def put(self, producer_id: int, entry: ProducerEntry) -> None:
        """Install an entry as read from a snapshot."""
        self._entries[producer_id] = entry

    def check(self, header: BatchHeader) -> SequenceVerdict:
        """Judge an incoming batch against what this partition remembers.

        Reads one entry and never mutates, so it may run while another thread
        only removes entries (expiration): a dict lookup is atomic.
        """
        if not _is_idempotent(header):
            return APPEND
        entry = self._entries.get(header.producer_id)
        if entry is None:
            # Unknown producer: new, expired, or its data deleted. As Kafka
            # since KIP-360, accept whatever sequence it starts with.
            return APPEND
        if header.producer_epoch < entry.epoch:
            return SequenceVerdict(ErrorCode.INVALID_PRODUCER_EPOCH)
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return APPEND
        first_sequence, last_sequence = header.base_sequence, header.last_sequence
        for batch in entry.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return SequenceVerdict(duplicate_of=batch)
        if entry.batches:
            expected = (entry.batches[-1].last_sequence + 1) % SEQUENCE_SPACE
            if header.base_sequence != expected:
                return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return APPEND

    def record(self, header: BatchHeader, base_offset: int, now_ms: int) -> None:
        """Remember a batch appended at ``base_offset`` (header's own base offset ignored)."""
        if not _is_idempotent(header):
            return
        entry = self._entries.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
            self._entries[header.producer_id] = entry
        entry.batches.append(
            BatchMetadata(
                header.base_sequence,
                header.last_sequence,
                base_offset,
                base_offset + header.last_offset_delta,
            )
        )
        entry.last_append_ms = now_ms

    def remove_expired(self, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for ``expiration_ms`` or more; returns how many.

        Kafka's ``producer.id.expiration.ms``. A producer with an open
        transaction would never expire (none exist yet: transactions are not
        served).
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

    def max_producer_id(self) -> int:
        """Largest producer id known here, -1 if none."""
        return max(self._entries, default=-1)
