"""Idempotent-producer bookkeeping: sequence checks per producer and partition.

The Java client, kafka-python 3 and Spark's Kafka sink turn idempotence on by
default, so retried batches must not be written twice. As in Kafka, each
(producer id, partition) remembers its epoch and its last five batches: a
batch equal to one of them is a duplicate and is acknowledged with the offset
it got the first time; a batch that does not continue the last sequence is
refused with OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is fenced.

Pure and synchronous: the broker calls ``check`` and ``record`` under the
partition's append lock, so no locking happens here.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import BatchHeader

BATCHES_REMEMBERED = 5
SEQUENCE_SPACE = 1 << 31


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_REMEMBERED))


@dataclass(frozen=True, slots=True)
class SequenceVerdict:
    """What to do with a batch: append it, answer with an earlier result, or refuse."""

    error: ErrorCode = ErrorCode.NONE
    duplicate_of: BatchMetadata | None = None

    @property
    def append(self) -> bool:
        return self.error == ErrorCode.NONE and self.duplicate_of is None


APPEND = SequenceVerdict()


class ProducerStateTable:
    """Sequence state of every idempotent producer that wrote to one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> SequenceVerdict:
        if not header.has_producer_id or header.base_sequence < 0:
            return APPEND
        entry = self._entries.get(header.producer_id)
        if entry is None:
            # Unknown producer (new, or its state predates a restart): accept, as
            # Kafka does when it has no state to compare with.
            return APPEND
        if header.producer_epoch < entry.epoch:
            return SequenceVerdict(ErrorCode.INVALID_PRODUCER_EPOCH)
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
            return APPEND
        for batch in entry.batches:
            if (
                batch.first_sequence == header.base_sequence
                and batch.last_sequence == header.last_sequence
            ):
                return SequenceVerdict(duplicate_of=batch)
        if entry.batches:
            expected = (entry.batches[-1].last_sequence + 1) % SEQUENCE_SPACE
            if header.base_sequence != expected:
                return SequenceVerdict(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        return APPEND

    def record(self, header: BatchHeader, base_offset: int) -> None:
        """Remember a batch that was appended at ``base_offset``."""
        if not header.has_producer_id or header.base_sequence < 0:
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
