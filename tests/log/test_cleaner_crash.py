"""kill -9 a process while it cleans: no surviving record is lost, the log recovers."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkette.log import PartitionLog
from tests.log.cleaner_crash_child import CONFIG, KEYS
from tests.log.compaction_data import all_records, latest

CHILD = Path(__file__).parent / "cleaner_crash_child.py"


def run_until_killed(directory: Path, first_round: int, delay: float) -> int:
    """Start the child, kill -9 it ``delay`` s after its first acknowledged round; returns
    the last acked round."""
    process = subprocess.Popen(
        [sys.executable, str(CHILD), str(directory), str(first_round)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout.readline().strip() == "ready"
        # The delay counts from the first acknowledged round: on a busy machine the child
        # can need longer than the delay to write anything, and a kill before any ack left
        # nothing to check (an empty log is then correct, the assertions expect the keys).
        first = process.stdout.readline()
        assert first.startswith("acked "), first
        last = int(first.split()[1])
        time.sleep(delay)
        os.kill(process.pid, signal.SIGKILL)
        for line in process.stdout:
            if line.startswith("acked "):
                last = int(line.split()[1])
        return last
    finally:
        process.kill()
        process.wait(10)


def test_kill_9_during_cleaning_loses_no_surviving_record(tmp_path, clock):
    directory = tmp_path / "t-0"
    rng = random.Random(13)
    acked = -1
    for _ in range(6):
        acked = max(acked, run_until_killed(directory, acked + 1, rng.uniform(0.2, 1.2)))
        log = PartitionLog.open(directory, CONFIG, clock, recover=True)
        try:
            names = [p.name for p in directory.iterdir()]
            assert not [n for n in names if n.endswith((".swap", ".cleaned", ".deleted"))]
            records = all_records(log)
            # The round after the last ack may have been written before the kill.
            values = latest(records)
            rounds = {int(v[1].split(b"-")[0][1:]) for v in values.values()}
            assert len(values) == KEYS
            assert rounds in ({acked}, {acked + 1}), (rounds, acked)
            for offset, key, value in records:
                k = int(key.split(b"-")[1])
                assert value.startswith(b"r") and value.split(b"-")[1] == b"k%d" % k, offset
            if rounds == {acked + 1}:
                acked += 1
        finally:
            log.close()
    assert acked > 6
