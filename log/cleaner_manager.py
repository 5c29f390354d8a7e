"""Which log to clean next (Kafka's LogCleanerManager), and one clean end to end.

``clean_one`` runs in a worker thread: it measures every compacted log, picks
the dirtiest one whose dirty ratio reaches ``min.cleanable.dirty.ratio`` (or
whose ``max.compaction.lag.ms`` or a tombstone's delete horizon is due),
cleans it, and moves its ``cleaner-offset-checkpoint`` entry. The caller
(the broker) backs off ``log.cleaner.backoff.ms`` when nothing was cleanable.

The clean's reading, decoding and writing run in a cleaner process
(log/cleaner_process.py), one per concurrent ``clean_one`` (so at most
``log.cleaner.threads``), started on first use and kept until :meth:`close`;
this thread keeps the parts that need the live log, swaps included.

Between two groups of a clean this thread waits as long as the group took
(``GROUP_PAUSE_FACTOR``): with the C key walk a 268 MB clean swaps its 64
groups in about a second, and back to back they raised produce latency
while the cleaner process itself, at niceness 19, did not
(docs/performance.md, "Log cleaner"). The copy phase takes twice as long.

The broker makes its manager at start; the cleaner itself (log/cleaner.py, the cleaner
process's client, the log engine under them) is imported by the first ``clean_one`` that
meets a compacted log, so a broker with no compacted topic never loads it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kafkette.log.cleaner_checkpoint import CleanerCheckpoints
from kafkette.log.config import CleanerConfig
from kafkette.log.errors import CleanAborted, LogClosed

if TYPE_CHECKING:
    from kafkette.log.cleaner import CleanStats
    from kafkette.log.cleaner_process import CleanerProcess
    from kafkette.log.partition_log import PartitionLog

_log = logging.getLogger(__name__)
# After each group's swap, wait this many times as long as the group took.
GROUP_PAUSE_FACTOR = 1.0

LogEntry = tuple[str, int, "PartitionLog"]


def _pause(abort: threading.Event, seconds: float) -> None:
    """Wait between two groups; CleanAborted at once if the broker stops meanwhile."""
    if abort.wait(seconds):
        raise CleanAborted("cleaner stopping")


class LogCleanerManager:
    """Picks and cleans compacted logs of one data dir; thread-safe."""

    def __init__(self, data_dir: Path, config: CleanerConfig, clock: Callable[[], int]) -> None:
        self.config = config
        self._clock = clock
        self.checkpoints = CleanerCheckpoints(data_dir)
        self._lock = threading.Lock()
        self._in_progress: set[tuple[str, int]] = set()
        self._horizons: dict[tuple[str, int], int] = {}
        self._idle: list[CleanerProcess] = []  # cleaner processes not in a clean now
        self._all: list[CleanerProcess] = []
        self._closed = False

    def _take_process(self) -> CleanerProcess:
        with self._lock:
            if self._closed:
                raise CleanAborted("cleaner closed")
            if self._idle:
                return self._idle.pop()
            from kafkette.log.cleaner_process import CleanerProcess

            process = CleanerProcess()
            self._all.append(process)
            return process

    def _give_back(self, process: CleanerProcess) -> None:
        with self._lock:
            if self._closed:
                process.kill()
            else:
                self._idle.append(process)

    def close(self) -> None:
        """Stop every cleaner process; call once no clean runs (after the broker's cleaners)."""
        with self._lock:
            self._closed = True
            processes, self._all, self._idle = self._all, [], []
        for process in processes:
            process.close()

    def _pick(
        self, logs: Iterable[LogEntry], now: int
    ) -> tuple[str, int, PartitionLog, bool] | None:
        compacted = [(topic, index, log) for topic, index, log in logs if log.config.compacts]
        if not compacted:
            return None
        from kafkette.log.cleaner import measure  # a compacted log: the cleaner is needed

        best: tuple[float, tuple[str, int, PartitionLog, bool]] | None = None
        with self._lock:
            for topic, index, log in compacted:
                if (topic, index) in self._in_progress:
                    continue
                span = measure(log, self.checkpoints.get(topic, index), now)
                if span is None:
                    continue
                horizon = self._horizons.get((topic, index))
                horizon_due = horizon is not None and now >= horizon
                if span.dirty_bytes == 0 and not horizon_due:
                    continue
                due = span.max_lag_exceeded or horizon_due
                if not due and span.ratio < log.config.min_cleanable_dirty_ratio:
                    continue
                score = 2.0 if due else span.ratio
                if best is None or score > best[0]:
                    best = (score, (topic, index, log, horizon_due))
            if best is None:
                return None
            self._in_progress.add(best[1][:2])
            return best[1]

    def clean_one(self, logs: Iterable[LogEntry], abort: threading.Event) -> CleanStats | None:
        """Clean the filthiest cleanable log; None if none qualified.

        Raises CleanAborted when ``abort`` is set mid-clean (nothing half-done
        is left: see log/cleaner.py).
        """
        now = self._clock()
        logs = list(logs)
        # Entries of deleted topics go (a topic re-created under the same name starts over).
        self.checkpoints.forget({(topic, index) for topic, index, _ in logs})
        picked = self._pick(logs, now)
        if picked is None:
            return None
        topic, index, log, horizon_due = picked
        from kafkette.log.cleaner import clean_log_with
        from kafkette.log.file_region import FileGone

        process: CleanerProcess | None = None
        try:
            process = self._take_process()
            config = self.config
            try:
                stats = clean_log_with(
                    log, self.checkpoints.get(topic, index), now,
                    lambda job: process.session(  # type: ignore[union-attr]
                        job, config.map_memory_bytes, config.io_max_bytes_per_second, abort
                    ),
                    expire_tombstones=horizon_due,
                    pace=lambda seconds: _pause(abort, seconds * GROUP_PAUSE_FACTOR),
                )
            except (FileGone, LogClosed):
                return None  # retention, truncation or deletion got there first
            except OSError:
                if log.is_closed:
                    return None  # the topic was deleted under the clean
                raise
            except CleanAborted:
                if abort.is_set():
                    raise
                return None
            if stats is None:
                return None
            self.checkpoints.update(topic, index, stats.end_offset)
            if stats.next_delete_horizon_ms is not None:
                self._horizons[(topic, index)] = stats.next_delete_horizon_ms
            else:
                self._horizons.pop((topic, index), None)
            _log.info(
                "cleaned %s-%d up to %d: %d -> %d bytes, %d of %d records kept",
                topic, index, stats.end_offset, stats.bytes_read, stats.bytes_written,
                stats.records_kept, stats.records_read,
            )
            return stats
        finally:
            if process is not None:
                self._give_back(process)
            with self._lock:
                self._in_progress.discard((topic, index))
