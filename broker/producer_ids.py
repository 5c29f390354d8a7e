"""Producer ids for InitProducerId, unique across restarts of one data dir.

Ids are handed out from blocks; the end of the current block is persisted
before any id of it is used, so a restart starts after every id ever given.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kafkette.log.checkpoint import atomic_write

BLOCK_SIZE = 1000
STATE_FILE = "producer-id-block"


class ProducerIdAllocator:
    """Thread-safe; ``allocate`` may write a small file once per block."""

    def __init__(self, data_dir: Path) -> None:
        self._path = data_dir / STATE_FILE
        self._lock = threading.Lock()
        start = int(self._path.read_text().strip()) if self._path.exists() else 0
        self._next = start
        self._block_end = start

    def allocate(self) -> int:
        with self._lock:
            if self._next >= self._block_end:
                block_end = self._next + BLOCK_SIZE
                # Persisted first: if the write fails (a full disk) no id of the
                # new block is handed out, and the next call tries again.
                atomic_write(self._path, f"{block_end}\n".encode())
                self._block_end = block_end
            producer_id = self._next
            self._next += 1
            return producer_id
