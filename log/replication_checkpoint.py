"""``replication-offset-checkpoint``: each replicated partition's high watermark.

Kafka's per-data-dir text checkpoint format (the same as the cleaner's)::

    0                      <- version
    2                      <- number of entries
    my-topic 0 1200        <- topic partition high-watermark
    other 3 88

A broker reloads it at start, so a leader that restarts still knows which
offsets were committed (consumers may read below it) before its followers
report in. Written atomically (``atomic_write``) every
``replica.high.watermark.checkpoint.interval.ms`` by the replica manager and
on clean close. A missing file reads as empty; a torn or malformed one too,
with one log line: a lost HW only makes consumers wait until the followers'
fetches raise it again (truncation never relies on it: KIP-101).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Container, Mapping
from pathlib import Path

from kafkette.log.checkpoint import atomic_write

REPLICATION_CHECKPOINT_FILE = "replication-offset-checkpoint"
_VERSION = 0
_log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def parse_partition_offsets(text: str) -> dict[TopicPartition, int]:
    """Entries of Kafka's ``topic partition offset`` checkpoint text; ValueError if malformed."""
    lines = text.split("\n")
    try:
        if int(lines[0]) != _VERSION:
            raise ValueError(f"version {lines[0]!r}")
        count = int(lines[1])
        entries: dict[TopicPartition, int] = {}
        for line in lines[2 : 2 + count]:
            topic, partition, offset = line.split(" ")
            entries[(topic, int(partition))] = int(offset)
    except IndexError:
        raise ValueError("truncated") from None
    if len(entries) != count or any(line.strip() for line in lines[2 + count :]):
        raise ValueError(f"expected {count} entries")
    return entries


def read_partition_offsets(path: Path, consequence: str) -> dict[TopicPartition, int]:
    """Parse the file; missing reads as empty, unreadable or malformed too (one log line
    saying ``consequence``)."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        _log.warning("%s unreadable (%s): %s", path, exc, consequence)
        return {}
    try:
        return parse_partition_offsets(text)
    except ValueError as exc:
        _log.warning("%s malformed (%s): %s", path, exc, consequence)
        return {}


def format_partition_offsets(entries: Mapping[TopicPartition, int]) -> bytes:
    lines = [str(_VERSION), str(len(entries))]
    lines += [f"{t} {p} {o}" for (t, p), o in sorted(entries.items())]
    return ("\n".join(lines) + "\n").encode("utf-8")


class HighWatermarkCheckpoint:
    """The data dir's HW checkpoint: what was read at open, then what was last written.

    Thread-safe (the periodic write runs in a worker thread, close in another).
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / REPLICATION_CHECKPOINT_FILE
        self._lock = threading.Lock()
        self._entries = read_partition_offsets(
            self.path, "high watermarks start at the log start offsets"
        )

    def entries(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._entries)

    def write(
        self, high_watermarks: Mapping[TopicPartition, int], existing: Container[TopicPartition]
    ) -> None:
        """Persist ``high_watermarks`` over the previous entries; entries of partitions
        not in ``existing`` (deleted topics) are dropped."""
        with self._lock:
            merged = {tp: hw for tp, hw in self._entries.items() if tp in existing}
            merged.update(
                (tp, hw) for tp, hw in high_watermarks.items() if tp in existing
            )
            if merged == self._entries and self.path.exists():
                return
            atomic_write(self.path, format_partition_offsets(merged))
            self._entries = merged
