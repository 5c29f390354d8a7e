"""One partition as the broker sees it: its log, its append lock, its waiters.

The log itself is synchronous and lives in worker threads. Here is what the
event loop needs around it: a ``trio.Lock`` that keeps appends (and the
idempotence check that precedes them, ``log.check_sequence``) in order, and
the set of long-polling fetches to wake when data arrives. The producer
table belongs to the log (it is snapshotted and rebuilt with it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header

if TYPE_CHECKING:
    from kafkette.log import PartitionLog

LEADER_EPOCH = 0  # one node, never re-elected: every batch carries epoch 0 (single-node mode)


class Partition:
    """A topic partition served by this broker. Not thread-safe: event loop only."""

    __slots__ = (
        "_hw_waiters",
        "_waiters",
        "append_lock",
        "bytes_in",
        "bytes_out",
        "index",
        "leader_epoch",
        "log",
        "on_append",
        "records_in",
        "records_out",
        "topic",
    )

    def __init__(self, topic: str, index: int, log: PartitionLog) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        # The epoch this broker knows for the partition: stamped into produced batches
        # and checked against requests' current_leader_epoch. Always 0 on a single node;
        # in cluster mode the replica manager sets it from ZooKeeper's partition state.
        self.leader_epoch = LEADER_EPOCH
        # Cluster mode, while this broker leads the partition: the replica manager's
        # hook that moves the high watermark after any append (produce, coordinators,
        # markers). None on a single node, where the HW is the log end offset.
        self.on_append: Callable[[Partition], None] | None = None
        self.append_lock = trio.Lock()
        # Traffic since this broker opened the partition (Kafka's BrokerTopicMetrics, per
        # partition here): plain ints bumped once per partition per request by the
        # produce and fetch handlers, read at scrape time by metrics and the console.
        # In: batches appended from Produce (duplicates excluded). Out: what consumers'
        # Fetches returned (followers' fetches excluded), records counted as offsets.
        self.bytes_in = 0
        self.records_in = 0
        self.bytes_out = 0
        self.records_out = 0
        self._waiters: set[trio.Event] = set()
        self._hw_waiters: set[trio.Event] = set()

    def add_waiter(self, event: trio.Event, high_watermark: bool = False) -> None:
        """Have ``event`` set at the next append (Fetch long-poll); with
        ``high_watermark`` also when the HW moves (a cluster consumer reads below it;
        a follower, which reads to the log end, has no use for that wake-up)."""
        (self._hw_waiters if high_watermark else self._waiters).add(event)

    def remove_waiter(self, event: trio.Event) -> None:
        self._waiters.discard(event)
        self._hw_waiters.discard(event)

    async def append_batch(
        self, batch: bytearray, check: Callable[[], ErrorCode] | None = None
    ) -> ErrorCode:
        """Append one batch the broker built itself (coordinators' records, markers).

        In order with produce appends (under the append lock), after ``check``
        if given (its error is returned and nothing is written), in a worker
        thread; then long-polling fetches are woken. A storage failure raises.
        """
        async with self.append_lock:
            if check is not None:
                error = check()
                if error != ErrorCode.NONE:
                    return error
            await trio.to_thread.run_sync(self.log.append, batch, [read_header(batch)])
        self.notify_appended()
        return ErrorCode.NONE

    def notify_appended(self) -> None:
        if self.on_append is not None:
            self.on_append(self)
        waiters, self._waiters = self._waiters, set()
        for event in waiters:
            event.set()
        if self._hw_waiters:
            self.notify_high_watermark()

    def notify_high_watermark(self) -> None:
        """Cluster mode: the HW moved, so consumers long-polling below it may read on."""
        waiters, self._hw_waiters = self._hw_waiters, set()
        for event in waiters:
            event.set()
