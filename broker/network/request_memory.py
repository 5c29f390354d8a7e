"""A bound on the bytes held by requests being read and handled (``queued.max.request.bytes``).

Kafka's socket server allocates each request's buffer from a memory pool and
stops reading from sockets while the pool is empty. Here a connection reserves
a frame's size from ``RequestMemoryPool`` once the frame's length prefix has
arrived and before it reads the body; it gives the bytes back after the
request is answered. While the pool cannot grant a reservation the
connection simply does not read, so TCP pushes back on that client and a
burst of huge frames cannot take the process's memory with it.

Frames of at most ``SMALL_FRAME_BYTES`` skip the pool: the usual requests
(metadata, heartbeats, fetches, small produces) never wait behind a huge one,
and what they can hold is bounded by the connection count times that size.

Reservations are granted first come, first served: a big frame waiting for
the pool is not overtaken forever by a stream of smaller ones. A reservation
as large as the whole pool is always granted once nothing else is held, so a
request up to ``socket.request.max.bytes`` is always admissible (the config
check makes the pool at least that large).
"""

from __future__ import annotations

from collections import deque

import trio

SMALL_FRAME_BYTES = 64 * 1024


class RequestMemoryPool:
    """A byte budget shared by every connection of one broker (event-loop only)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("a request memory pool needs a positive capacity")
        self.capacity = capacity
        self.in_use = 0
        self._waiters: deque[tuple[int, trio.Event]] = deque()

    @property
    def waiting(self) -> int:
        """Connections waiting for memory (not reading meanwhile)."""
        return len(self._waiters)

    def _fits(self, size: int) -> bool:
        return self.in_use == 0 or self.in_use + size <= self.capacity

    async def reserve(self, size: int) -> None:
        """Wait until ``size`` bytes can be held, then hold them. Cancellable."""
        if not self._waiters and self._fits(size):
            self.in_use += size
            await trio.lowlevel.checkpoint()
            return
        entry = (size, trio.Event())
        self._waiters.append(entry)
        try:
            await entry[1].wait()
        except BaseException:
            if entry[1].is_set():
                self.release(size)  # granted as we were cancelled: give it back
            else:
                self._waiters.remove(entry)
                self._grant()  # we may have been the head blocking smaller ones
            raise

    def release(self, size: int) -> None:
        """Give back a reservation; wakes waiters that now fit, in arrival order."""
        self.in_use -= size
        assert self.in_use >= 0, "released more request memory than was reserved"
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self._fits(self._waiters[0][0]):
            size, event = self._waiters.popleft()
            self.in_use += size
            event.set()
