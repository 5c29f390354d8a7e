"""The cleaner process: same result as an in-thread clean, abortable, restarted when it died."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from kafkette.log import PartitionLog
from kafkette.log.cleaner import CleanAborted, clean_log_with
from kafkette.log.cleaner_process import CLEANER_NICENESS, CleanerDied, CleanerProcess
from tests.log.compaction_data import COMPACT, all_records, clean, latest, write_rounds

MAP_BYTES = 1 << 20
UNLIMITED = 1.7976931348623157e308


def clean_in_child(
    process: CleanerProcess, log: PartitionLog, now: int, abort: threading.Event | None = None,
    rate: float = UNLIMITED,
):
    abort = abort or threading.Event()
    return clean_log_with(
        log, 0, now, lambda job: process.session(job, MAP_BYTES, rate, abort)
    )


def segment_files(log: PartitionLog) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log.directory.glob("*.log"))}


@pytest.fixture
def process():
    process = CleanerProcess()
    yield process
    process.close()


def test_child_clean_equals_in_thread_clean(tmp_path, clock, process):
    here = PartitionLog.open(tmp_path / "here-0", COMPACT, clock, recover=False)
    there = PartitionLog.open(tmp_path / "there-0", COMPACT, clock, recover=False)
    written = write_rounds(here, rounds=10, keys=12)
    assert write_rounds(there, rounds=10, keys=12) == written
    now = clock()
    expected = clean(here, now, memory=MAP_BYTES)
    stats = clean_in_child(process, there, now)
    assert process.pid is not None and process.pid != os.getpid()
    assert stats == expected and stats is not None and stats.groups >= 1
    assert segment_files(there) == segment_files(here)
    assert latest(all_records(there)) == latest((o, k, v) for o, (k, v) in written.items())
    there.close()
    reopened = PartitionLog.open(tmp_path / "there-0", COMPACT, clock, recover=True)
    assert all_records(reopened) == all_records(here)
    reopened.close()
    here.close()


def _start_slow_clean(
    process, log, clock
) -> tuple[threading.Event, list[Exception], threading.Thread]:
    """A clean throttled to 2 kB/s (minutes for these logs) in a thread, once its child
    process runs: (abort event, the exception it ended with, the thread). Lets a test
    abort or kill the child while it is surely mid-clean."""
    abort = threading.Event()
    outcome: list[Exception] = []

    def run() -> None:
        try:
            clean_in_child(process, log, clock(), abort, rate=2000.0)
        except Exception as exc:  # the test checks it
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 20
    while process.pid is None:
        assert time.monotonic() < deadline, "the cleaner process did not start"
        time.sleep(0.01)
    return abort, outcome, worker


def test_abort_kills_a_throttled_child_and_leaves_the_log_alone(tmp_path, clock, process):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    write_rounds(log, rounds=20, keys=12)
    before = segment_files(log)
    abort, outcome, worker = _start_slow_clean(process, log, clock)
    pid = process.pid
    time.sleep(0.5)
    abort.set()
    worker.join(5)
    assert not worker.is_alive(), "abort did not stop the clean promptly"
    assert len(outcome) == 1 and isinstance(outcome[0], CleanAborted)
    assert process.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert not list(log.directory.glob("*.cleaned"))
    assert segment_files(log) == before
    log.close()


def test_a_dead_child_fails_one_clean_and_is_replaced(tmp_path, clock, process):
    log = PartitionLog.open(tmp_path / "t-0", COMPACT, clock, recover=False)
    written = write_rounds(log, rounds=20, keys=12)
    _abort, outcome, worker = _start_slow_clean(process, log, clock)
    first_pid = process.pid
    time.sleep(0.3)
    os.kill(first_pid, signal.SIGKILL)  # e.g. the OOM killer
    worker.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], CleanerDied)
    assert not list(log.directory.glob("*.cleaned"))
    stats = clean_in_child(process, log, clock())  # a new child takes over
    assert stats is not None and process.pid not in (None, first_pid)
    assert latest(all_records(log)) == latest((o, k, v) for o, (k, v) in written.items())
    log.close()


def test_the_child_runs_at_the_lowest_cpu_priority(process):
    """The broker's produce and fetch must win the CPU over a clean (docs/performance.md)."""
    process.start()
    assert process.pid is not None
    deadline = time.monotonic() + 30
    niceness = os.getpriority(os.PRIO_PROCESS, process.pid)
    while niceness != CLEANER_NICENESS and time.monotonic() < deadline:
        time.sleep(0.05)  # the child lowers itself first thing; give it a moment under load
        niceness = os.getpriority(os.PRIO_PROCESS, process.pid)
    assert niceness == CLEANER_NICENESS == 19
