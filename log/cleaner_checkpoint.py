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

import threading
from pathlib import Path

from kafkette.log.checkpoint import atomic_write
from kafkette.log.replication_checkpoint import format_partition_offsets, read_partition_offsets

CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"

TopicPartition = tuple[str, int]


def read_cleaner_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """Parse the file; anything malformed reads as empty (logged)."""
    return read_partition_offsets(path, "cleaning restarts from the log start")


def format_cleaner_checkpoint(entries: dict[TopicPartition, int]) -> bytes:
    return format_partition_offsets(entries)


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
