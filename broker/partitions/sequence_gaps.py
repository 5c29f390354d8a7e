"""A batch refused before its append leaves a gap that is ours, not the producer's.

An idempotent producer pipelines up to five batches per partition. When this leader refuses
batch N with a retriable error before appending it (NOT_ENOUGH_REPLICAS while the ISR is
short, KAFKA_STORAGE_ERROR on a full disk) and batch N+1 then arrives to a partition that
can take it (the ISR grew back a moment later, a page was freed), the sequence check sees a
gap and would answer OUT_OF_ORDER_SEQUENCE_NUMBER. librdkafka takes that as lost state: it
bumps the producer epoch and re-sends, under new sequences, every record whose outcome it does
not know, on every partition: duplicates. So N+1 gets N's retriable answer instead, and the
producer retries both in order. (Kafka checks the ISR and appends under one lock and its log
dir goes offline at the first I/O error, so the window is narrower there; the answer here is
one a producer already handles.)

The same gap with a producer the leader has no state for (its earlier batches all went to a
leader that is gone) is worse: the sequence check accepts any first sequence of an unknown
producer (KIP-360, as Kafka), so N+1 would be appended without N, and librdkafka, seeing N+1
acknowledged, takes N as persisted too (its implicit acknowledgement): an acknowledged record
lost. N+1 gets N's answer there as well.

Per partition, one entry per producer id: the epoch and sequence of its last refused batch
and the error it got. It explains a gap only while the log's next expected sequence for that
producer is the refused one (or the producer is unknown here); it is dropped when that
producer's next batch is appended, when the log has moved past it, and at every change of
leadership. Read and written
under the partition's append lock (the min-ISR refusal happens before it, on the event loop,
where nothing else runs at the time).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.partitions.partition import Partition
    from kafkette.wire.record_batch import BatchHeader

# producerId int64, producerEpoch int16, baseSequence int32 at byte 43 of a v2 batch; magic at 16.
_PRODUCER = struct.Struct(">qhi")
_PRODUCER_AT = 43
_MAGIC_AT = 16

MESSAGE = "An earlier batch of this producer was refused ({}); retry them in order."


def producer_of(records: bytes | bytearray | memoryview) -> tuple[int, int, int] | None:
    """(producer id, epoch, base sequence) of a record set's first batch, or None when it is
    not an idempotent v2 batch. A few bytes read, nothing parsed."""
    if len(records) < _PRODUCER_AT + _PRODUCER.size or records[_MAGIC_AT] != 2:
        return None
    producer_id, epoch, sequence = _PRODUCER.unpack_from(records, _PRODUCER_AT)
    return None if producer_id < 0 or sequence < 0 else (producer_id, epoch, sequence)


def note_refused(partition: Partition, producer: tuple[int, int, int] | None,
                 error: ErrorCode) -> None:  # fmt: skip
    """Batch ``producer`` (id, epoch, sequence) was refused with retriable ``error``."""
    if producer is not None:
        producer_id, epoch, sequence = producer
        partition.refused_batches[producer_id] = (epoch, sequence, error)


def note_appended(partition: Partition, header: BatchHeader) -> None:
    if partition.refused_batches:
        partition.refused_batches.pop(header.producer_id, None)


def excuse(partition: Partition, header: BatchHeader) -> ErrorCode | None:
    """The retriable error to answer instead of appending (or of OUT_OF_ORDER_SEQUENCE_NUMBER)
    when a batch this leader refused comes before ``header``'s in its producer's sequence;
    None otherwise."""
    refused = partition.refused_batches.get(header.producer_id)
    if refused is None:
        return None
    epoch, sequence, error = refused
    if epoch != header.producer_epoch or sequence >= header.base_sequence:
        return None
    table = partition.log.producer_state.table
    expected = table.next_sequence(header.producer_id, header.producer_epoch)
    if expected is not None and expected != sequence:
        # The log moved past the refused batch (it came back in order, or through another
        # leader and replication): this gap is not the refusal's; and the entry is stale.
        del partition.refused_batches[header.producer_id]
        return None
    return error
