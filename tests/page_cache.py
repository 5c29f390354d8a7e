"""Dropping a file's pages from the page cache, and knowing that they are gone.

``posix_fadvise(DONTNEED)`` is a request: on a busy machine the kernel keeps a just-written
page for a while (a tenth of a second or two, measured here) before it lets it go, and
file systems without a disk behind their page cache (tmpfs) never do. ``evict`` asks until
``mincore`` sees none of the file's pages cached. Test modules import it:
``from tests import page_cache``.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import time
from pathlib import Path

PAGE = mmap.PAGESIZE
EVICTION_DEADLINE_S = 10.0
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]  # fmt: skip
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte)]


def cached_pages(path: Path) -> int:
    """How many of ``path``'s pages are in the page cache (mincore on a mapping that is
    never touched, so asking brings nothing in)."""
    size = path.stat().st_size
    pages = (size + PAGE - 1) // PAGE
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
        try:
            vector = (ctypes.c_ubyte * pages)()
            if _libc.mincore(address, size, vector) != 0:
                raise OSError(ctypes.get_errno(), "mincore")
            return sum(byte & 1 for byte in vector)
        finally:
            _libc.munmap(address, size)
    finally:
        os.close(fd)


def evict(path: Path, deadline_s: float = EVICTION_DEADLINE_S) -> bool:
    """fsync ``path`` (dirty pages are never dropped) and ask the kernel to drop its pages
    until none is cached; False if some are still there at the deadline.

    One request is not always enough: on a busy machine the kernel keeps a just-written
    page for a while (a tenth of a second or two, measured here) before it lets it go.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        deadline = time.monotonic() + deadline_s
        while True:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            if cached_pages(path) == 0:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
    finally:
        os.close(fd)


def evicts(directory: Path) -> bool:
    """True if this file system lets a file's pages go (tmpfs keeps them: it has no disk to
    read them back from)."""
    probe = directory / "eviction-probe"
    probe.write_bytes(os.urandom(64 * 1024))
    try:
        return evict(probe, deadline_s=2.0)
    finally:
        probe.unlink()
