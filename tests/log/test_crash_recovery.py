"""kill -9 a process appending with flush.messages=1, then recover its log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from kafkette.log import PartitionLog
from kafkette.wire.record_batch import iter_batches, patch_base_offset

CHILD = Path(__file__).with_name("crash_child.py")


def _load_child_module():
    from tests.log import crash_child

    return crash_child


def run_child_until_killed(directory: Path, first: int, acks_wanted: int) -> tuple[int, list]:
    """Start the child, wait for ``acks_wanted`` acks, SIGKILL it mid-append."""
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(first)],
        stdout=subprocess.PIPE, text=True,
    )
    acks = []
    try:
        ready = process.stdout.readline().split()
        assert ready and ready[0] == "ready", ready
        for line in process.stdout:
            number, base, last = map(int, line.split())
            acks.append((number, base, last))
            if len(acks) >= acks_wanted:
                break
        os.kill(process.pid, signal.SIGKILL)
        # Drain what was acknowledged before the kill landed.
        for line in process.stdout:
            number, base, last = map(int, line.split())
            acks.append((number, base, last))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    return int(ready[1]), acks


def test_kill_9_loses_no_acknowledged_batch(tmp_path, clock):
    child = _load_child_module()
    directory = tmp_path / "t-0"
    first_number = 0
    for round_number in range(3):
        start_offset, acks = run_child_until_killed(directory, first_number, 150)
        assert acks, "child acknowledged nothing"
        assert acks[0][1] == start_offset  # offsets continue where the last run stopped
        log = PartitionLog.open(directory, child.CONFIG, clock, recover=True)
        try:
            last_acked = acks[-1][2]
            # Every acknowledged batch is there, byte for byte.
            for number, base, _last in acks:
                data = log.read(base, 1).to_bytes()
                expected = child.batch_number(number)
                patch_base_offset(expected, base)
                assert data == bytes(expected), (round_number, number)
            # No partial batch: the log ends on a batch boundary at or after the
            # last ack (at most the one batch that was written but not acked).
            end = log.log_end_offset
            assert end >= last_acked + 1
            assert end <= last_acked + 1 + 5
            if end > last_acked + 1:
                tail = iter_batches(log.read(last_acked + 1, 1).to_bytes())
                assert len(tail) == 1 and tail[0].next_offset == end
            first_number = acks[-1][0] + 1 + (1 if end > last_acked + 1 else 0)
            assert len(log.segment_base_offsets) >= 1
        finally:
            log.close()
    # The final log reads back as a single contiguous run of valid batches.
    log = PartitionLog.open(directory, child.CONFIG, clock, recover=False)
    offset = 0
    while offset < log.log_end_offset:
        headers = iter_batches(log.read(offset, 1 << 20).to_bytes())
        assert headers[0].base_offset <= offset <= headers[0].last_offset
        offset = headers[-1].next_offset
    assert offset == log.log_end_offset
    assert len(log.segment_base_offsets) > 1
    log.close()
