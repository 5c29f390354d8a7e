"""The cleaner's key -> latest offset map, bounded like Kafka's SkimpyOffsetMap.

Kafka sizes its map in bytes (``log.cleaner.dedupe.buffer.size`` split across
``log.cleaner.threads``) at 24 bytes an entry (16-byte MD5 + 8-byte offset)
filled to a 0.9 load factor (``log.cleaner.io.buffer.load.factor``). We keep
the same *entry count* bound so the same configuration cleans the same
ranges per pass, but store the keys in a Python dict (no hash collisions;
each entry costs more memory than Kafka's 24 bytes, see docs/storage-format.md).
A batch's keys go in, and its survivors come out, in one call each
(log/cleaner_keys.py: a C walk, no Record object per record).
"""

from __future__ import annotations

from kafkette.log.cleaner_keys import put_keys, survivors
from kafkette.wire.record_batch import BatchHeader

ENTRY_BYTES = 24
LOAD_FACTOR = 0.9


class OffsetMap:
    """Latest offset per key over the dirty range of one clean."""

    def __init__(self, memory_bytes: int) -> None:
        self.capacity = max(1, int(memory_bytes // ENTRY_BYTES * LOAD_FACTOR))
        self._offsets: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def full(self) -> bool:
        return len(self._offsets) >= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest for ``key`` (offsets come in increasing order)."""
        self._offsets[key] = offset

    def put_batch(self, header: BatchHeader, data: bytes, first_dirty: int) -> None:
        """:meth:`put` every keyed record of the batch ``data`` at or above ``first_dirty``."""
        put_keys(header, data, first_dirty, self._offsets)

    def survivors(self, header: BatchHeader, data: bytes) -> list[tuple[int, bool]]:
        """(index, value is null) of the batch's keyed records no later offset shadows."""
        return survivors(header, data, self._offsets)

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, -1 if unknown."""
        return self._offsets.get(key, -1)

    def clear(self) -> None:
        self._offsets.clear()
