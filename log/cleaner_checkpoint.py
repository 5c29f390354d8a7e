"""``cleaner-offset-checkpoint``: how far the log cleaner got, per partition.

Kafka's text checkpoint format, in the data dir::

    0                      <- version
    2                      <- number of entries
    my-topic 0 1200        <- topic partition first-dirty-offset
    other 3 88

Offsets below the checkpoint were cleaned (each key there is unique within
that range); the next clean builds its key map from the checkpoint on.
Written atomically (``atomic_write``); a missing or unreadable file reads as
empty, which only makes the next clean start from the log start.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from kafkette.log.checkpoint import atomic_write

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
_VERSION = 0
_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def read_cleaner_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Parse the file; anything malformed reads as empty (logged)."""
    try:
        lines = path.read_text("utf-8").splitlines()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        _log.warning("%s unreadable (%s): cleaning restarts from the log start", path, exc)
        return {}
    try:
        if int(lines[0]) != _VERSION:
            raise ValueError(f"version {lines[0]}")
        count = int(lines[1])
        entries: dict[TopicPartition, int] = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
        if len(entries) != count:
            raise ValueError("entry count mismatch")
        return entries
    except (IndexError, ValueError) as exc:
        _log.warning("%s malformed (%s): cleaning restarts from the log start", path, exc)
        return {}


def format_cleaner_checkpoint(entries: dict[TopicPartition, int]) -> bytes:
    lines = [str(_VERSION), str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    return ("\n".join(lines) + "\n").encode("utf-8")


class CleanerCheckpoints:
    """The data dir's cleaner checkpoint, cached in memory; thread-safe."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / CLEANER_CHECKPOINT_FILE
        self._lock = threading.Lock()
        self._entries = read_cleaner_checkpoint(self.path)

    def get(self, topic: str, partition: int) -> int:
        with self._lock:
            return self._entries.get((topic, partition), 0)

    def update(self, topic: str, partition: int, offset: int) -> None:
        """Persist (atomically) a new first dirty offset for one partition."""
        with self._lock:
            self._entries[(topic, partition)] = offset
            atomic_write(self.path, format_cleaner_checkpoint(self._entries))

    def forget(self, keep: set[TopicPartition]) -> None:
        """Drop partitions no longer in ``keep`` (deleted topics, truncated logs)."""
        with self._lock:
            gone = [tp for tp in self._entries if tp not in keep]
            if not gone:
                return
            for tp in gone:
                del self._entries[tp]
            atomic_write(self.path, format_cleaner_checkpoint(self._entries))
