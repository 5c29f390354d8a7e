"""Recovery on real files: torn tails, flipped bits, lost indexes, leftovers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kafkette.log import LogConfig, PartitionLog
from kafkette.log.checkpoint import CHECKPOINT_FILE_NAME
from kafkette.log.segment import segment_file_name
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=60)


def build_log(path: Path, clock, count: int, config: LogConfig = CONFIG) -> tuple[
        PartitionLog, list[bytes]]:
    log = PartitionLog.open(path, config, clock, recover=False)
    stored = []
    for i in range(count):
        batch = log_batches.build_sized_batch(
            1 + i % 4, 20 + i, seed=i, base_timestamp=1_700_000_000_000 + 10 * i
        )
        log.append(batch, [validate_batch(batch)])
        stored.append(bytes(batch))
    return log, stored


def read_all(log: PartitionLog) -> bytes:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20).to_bytes()
        headers = iter_batches(data)
        assert headers
        out.append(data)
        offset = headers[-1].next_offset
    return b"".join(out)


def segment_path(directory: Path, base: int, suffix: str = ".log") -> Path:
    return directory / segment_file_name(base, suffix)


def test_cut_at_every_byte_of_last_batch_recovers_batches_before(tmp_path, clock):
    source = tmp_path / "src-0"
    log, stored = build_log(source, clock, 12)
    small = log_batches.build_sized_batch(1, 5)  # a short last batch: fewer cuts to try
    log.append(small, [validate_batch(small)])
    stored.append(bytes(small))
    last_base = log.segment_base_offsets[-1]
    active = segment_path(source, last_base)
    active_size = active.stat().st_size
    last_size = len(stored[-1])
    last_batch_base = validate_batch(stored[-1]).base_offset
    log.close()
    (source / CHECKPOINT_FILE_NAME).unlink()  # no recovery point: a full scan
    for cut in range(active_size - last_size, active_size):
        trial = tmp_path / f"cut{cut}-0"
        shutil.copytree(source, trial)
        os.truncate(segment_path(trial, last_base), cut)
        reopened = PartitionLog.open(trial, CONFIG, clock, recover=True)
        assert reopened.log_end_offset == last_batch_base, cut
        assert read_all(reopened) == b"".join(stored[:-1]), cut
        batch = log_batches.build_sized_batch(2, 3)
        assert reopened.append(batch, [validate_batch(batch)]).base_offset == last_batch_base
        reopened.close()
        shutil.rmtree(trial)


@pytest.mark.parametrize("flip_at", [0, 9, 16, 17, 30, 61, -1])
def test_flipped_bit_truncates_from_that_batch(tmp_path, clock, flip_at):
    """Bytes 0 (baseOffset: out of range), 9 (length), 16 (magic), then CRC-covered."""
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 10, LogConfig(index_interval_bytes=60))
    victim = 6
    position = sum(len(b) for b in stored[:victim])
    victim_base = validate_batch(stored[victim]).base_offset
    log.close()
    (directory / CHECKPOINT_FILE_NAME).unlink()
    path = segment_path(directory, 0)
    data = bytearray(path.read_bytes())
    index = position + (flip_at if flip_at >= 0 else len(stored[victim]) - 1)
    data[index] ^= 0x10
    path.write_bytes(data)
    reopened = PartitionLog.open(directory, LogConfig(index_interval_bytes=60), clock,
                                 recover=True)
    assert reopened.log_end_offset == victim_base
    assert read_all(reopened) == b"".join(stored[:victim])
    assert path.stat().st_size == position
    reopened.close()


def test_corrupt_unflushed_middle_segment_drops_later_segments(tmp_path, clock):
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 40)
    bases = log.segment_base_offsets
    assert len(bases) >= 3
    log.close()
    (directory / CHECKPOINT_FILE_NAME).unlink()
    middle = segment_path(directory, bases[1])
    data = bytearray(middle.read_bytes())
    data[-5] ^= 0xFF  # inside the segment's last batch
    middle.write_bytes(data)
    reopened = PartitionLog.open(directory, CONFIG, clock, recover=True)
    assert reopened.segment_base_offsets == bases[:2]
    ends = [validate_batch(b).next_offset for b in stored]
    assert reopened.log_end_offset == ends[ends.index(bases[2]) - 1]
    assert not segment_path(directory, bases[2]).exists()
    reopened.close()


def test_recovery_point_limits_the_scan(tmp_path, clock):
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 40)
    bases = log.segment_base_offsets
    log.maybe_flush()  # flushes rolled segments, checkpoints recovery point
    assert log.recovery_point == bases[-1]
    # Damage a flushed segment (index intact): trusted, not rescanned.
    flushed = segment_path(directory, bases[0])
    data = bytearray(flushed.read_bytes())
    data[-3] ^= 0xFF
    flushed.write_bytes(data)
    # Tear the active, unflushed segment.
    active = segment_path(directory, bases[-1])
    os.truncate(active, active.stat().st_size - 1)
    # The process "dies": no close. Reopen as after a crash.
    reopened = PartitionLog.open(directory, CONFIG, clock, recover=True)
    assert reopened.segment_base_offsets == bases
    assert segment_path(directory, bases[0]).stat().st_size == len(data)
    assert reopened.log_end_offset == validate_batch(stored[-1]).base_offset
    reopened.close()
    del log


def _index_bytes(directory: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.suffix in (".index", ".timeindex")
    }


@pytest.mark.parametrize("damage", ["delete", "garbage", "torn", "both"])
def test_lost_or_corrupt_index_is_rebuilt_identical(tmp_path, clock, damage):
    directory = tmp_path / "t-0"
    log, _ = build_log(directory, clock, 40)
    bases = log.segment_base_offsets
    log.close()
    before = _index_bytes(directory)
    assert all(len(v) > 12 for v in before.values())
    for base in bases[:2] + bases[-1:]:
        index = segment_path(directory, base, ".index")
        time_index = segment_path(directory, base, ".timeindex")
        if damage == "delete":
            index.unlink()
        elif damage == "garbage":
            index.write_bytes(b"\xff" * 16 + index.read_bytes())
        elif damage == "torn":
            index.write_bytes(index.read_bytes()[:-3])
        else:
            index.unlink()
            time_index.unlink()
    reopened = PartitionLog.open(directory, CONFIG, clock, recover=False)
    reopened.close()
    assert _index_bytes(directory) == before


def test_index_pointing_past_log_end_is_rebuilt(tmp_path, clock):
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 10, LogConfig(index_interval_bytes=60))
    log.close()
    path = segment_path(directory, 0)
    keep = sum(len(b) for b in stored[:3])
    os.truncate(path, keep)  # as if the log lost its tail but the index did not
    reopened = PartitionLog.open(directory, LogConfig(index_interval_bytes=60), clock,
                                 recover=False)
    assert reopened.log_end_offset == validate_batch(stored[2]).next_offset
    assert read_all(reopened) == b"".join(stored[:3])
    reopened.close()


def test_leftover_files_are_removed(tmp_path, clock):
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 5)
    log.close()
    leftovers = [
        directory / (segment_file_name(0, ".log") + ".deleted"),
        directory / (segment_file_name(7, ".log") + ".swap"),
        directory / segment_file_name(99, ".index"),  # orphan index, no .log
        directory / (CHECKPOINT_FILE_NAME + ".tmp"),
    ]
    for path in leftovers:
        path.write_bytes(b"junk")
    reopened = PartitionLog.open(directory, CONFIG, clock, recover=True)
    assert not any(p.exists() for p in leftovers)
    assert read_all(reopened) == b"".join(stored)
    reopened.close()


def test_empty_segment_after_crash_mid_roll(tmp_path, clock):
    directory = tmp_path / "t-0"
    log, stored = build_log(directory, clock, 40)
    end = log.log_end_offset
    log.close()
    for suffix in (".log", ".index", ".timeindex"):
        segment_path(directory, end, suffix).write_bytes(b"")
    reopened = PartitionLog.open(directory, CONFIG, clock, recover=True)
    assert reopened.log_end_offset == end
    assert read_all(reopened) == b"".join(stored)
    reopened.close()
