"""Transactional batches and markers for the log tests (a plain module, like log_batches)."""

from __future__ import annotations

from kafkette.log import PartitionLog
from kafkette.wire.record_batch import validate_batch
from kafkette.wire.records import ControlRecordType, Record, build_batch, build_control_batch

TIMESTAMP = 1_700_000_000_000


class TxnProducer:
    """One transactional producer: consecutive sequences, markers with its epoch."""

    def __init__(self, producer_id: int, epoch: int = 0, coordinator_epoch: int = 0) -> None:
        self.producer_id = producer_id
        self.epoch = epoch
        self.coordinator_epoch = coordinator_epoch
        self.sequence = 0

    def data(self, count: int = 2, *, keys: list[bytes] | None = None, value: bytes = b"v",
             transactional: bool = True, sequence: bool = True) -> bytearray:
        records = [
            Record(i, i, keys[i] if keys else None, value + b"-%d" % (self.sequence + i))
            for i in range(count)
        ]
        batch = build_batch(
            records, base_timestamp=TIMESTAMP, producer_id=self.producer_id,
            producer_epoch=self.epoch, base_sequence=self.sequence if sequence else -1,
            transactional=transactional,
        )
        if sequence:
            self.sequence += count
        return bytearray(batch)

    def marker(self, kind: ControlRecordType, *, epoch: int | None = None,
               coordinator_epoch: int | None = None) -> bytearray:
        return bytearray(
            build_control_batch(
                kind, producer_id=self.producer_id,
                producer_epoch=self.epoch if epoch is None else epoch,
                coordinator_epoch=(
                    self.coordinator_epoch if coordinator_epoch is None else coordinator_epoch
                ),
                timestamp=TIMESTAMP,
            )
        )

    def commit(self) -> bytearray:
        return self.marker(ControlRecordType.COMMIT)

    def abort(self) -> bytearray:
        return self.marker(ControlRecordType.ABORT)


def plain(count: int = 2, keys: list[bytes] | None = None, value: bytes = b"p") -> bytearray:
    records = [Record(i, i, keys[i] if keys else None, value) for i in range(count)]
    return bytearray(build_batch(records, base_timestamp=TIMESTAMP))


def append(log: PartitionLog, batch: bytearray) -> tuple[int, int]:
    """Append one batch after the checks the broker makes; (base, last) offsets."""
    header = validate_batch(batch)
    verdict = log.check_sequence(header)
    assert verdict.append, verdict
    info = log.append(batch, [header])
    return info.base_offset, info.last_offset
