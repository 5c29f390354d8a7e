"""Fetch: stored batches as they are, long-polling until ``min_bytes`` or ``max_wait_ms``.

Reads start at the whole batch holding the fetch offset (clients skip the
records before it). The first batch of a response is sent whole even past
``max_bytes`` so a consumer always progresses; after that, partitions get
data only while the response budget lasts. Small reads are copied in the
worker thread; large ones travel as file regions the connection sends with
``os.sendfile``. Fetch sessions are not kept: every answer has session id 0,
which tells clients to keep sending full fetch requests.

``isolation_level=1`` (read_committed) reads only batches below the last
stable offset and answers the aborted transactions overlapping the data
returned (from the segments' abort indexes); every partition answer carries
the LSO, for both isolation levels, as Kafka's does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partition import LEADER_EPOCH, Partition
from kafkette.broker.throttled_log import storage_errors
from kafkette.log.errors import OffsetOutOfRange
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

READ_COMMITTED = 1
# Reads below this size are copied in the worker thread instead of sendfile'd.
COPY_BELOW_BYTES = 64 * 1024


@dataclass(slots=True)
class _Wanted:
    partition: Partition | None
    index: int
    offset: int
    max_bytes: int
    response: dict
    read_committed: bool


async def handle_fetch(broker: Broker, request: Request) -> dict:
    body = request.body
    read_committed = body["isolation_level"] == READ_COMMITTED
    topics, wanted = _plan(broker, body, read_committed)
    max_wait = max(0, body["max_wait_ms"]) / 1000
    deadline = trio.current_time() + max_wait
    min_bytes = body["min_bytes"]
    partitions = [w.partition for w in wanted if w.partition is not None]
    while True:
        # Register before reading, so an append that lands during the read wakes us.
        appended = trio.Event()
        for partition in partitions:
            partition.add_waiter(appended)
        try:
            total = await trio.to_thread.run_sync(_read_all, wanted, body["max_bytes"])
            if (
                total >= min_bytes
                or trio.current_time() >= deadline
                or broker.closing
                or any(w.response["error_code"] for w in wanted)
            ):
                break
            with trio.move_on_at(deadline):
                await appended.wait()
        finally:
            for partition in partitions:
                partition.remove_waiter(appended)
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": topics}


def _plan(broker: Broker, body: dict, read_committed: bool) -> tuple[list[dict], list[_Wanted]]:
    topics: list[dict] = []
    wanted: list[_Wanted] = []
    for topic in body["topics"]:
        name = topic["topic"]
        partitions = []
        for fetch in topic["partitions"]:
            response = {
                "partition_index": fetch["partition"],
                "error_code": 0,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if read_committed else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            partition = broker.topics.partition(name, fetch["partition"])
            if partition is None:
                response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            elif fetch["current_leader_epoch"] > LEADER_EPOCH:
                response["error_code"] = int(ErrorCode.UNKNOWN_LEADER_EPOCH)
            partitions.append(response)
            wanted.append(
                _Wanted(
                    partition,
                    fetch["partition"],
                    fetch["fetch_offset"],
                    fetch["partition_max_bytes"],
                    response,
                    read_committed,
                )
            )
        topics.append({"topic": name, "partitions": partitions})
    return topics, wanted


def _read_all(wanted: list[_Wanted], max_bytes: int) -> int:
    """Worker thread: read every partition within the response budget; returns bytes read."""
    budget = max_bytes
    total = 0
    for item in wanted:
        response = item.response
        if item.partition is None or response["error_code"]:
            continue
        log = item.partition.log
        try:
            # Read before the data (the LSO never passes what the read sees).
            stable = log.last_stable_offset
            info = log.read(
                item.offset, max(1, min(item.max_bytes, budget)),
                stable if item.read_committed else None,
            )
        except OffsetOutOfRange:
            response["error_code"] = int(ErrorCode.OFFSET_OUT_OF_RANGE)
            info = None
        except OSError as exc:  # the disk failed under us: Kafka's offline-log-dir answer
            subject = f"{item.partition.topic}-{item.partition.index}"
            storage_errors.failure("fetch from", subject, exc)
            response["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            continue
        except Exception:  # the topic was deleted under us, or a closed log
            response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        if info is None:
            response["high_watermark"] = log.high_watermark
            response["last_stable_offset"] = log.last_stable_offset
            response["log_start_offset"] = log.log_start_offset
            continue
        response["high_watermark"] = info.high_watermark
        response["last_stable_offset"] = stable
        response["log_start_offset"] = info.log_start_offset
        size = info.size
        if size == 0 or (total > 0 and size > budget):
            response["records"] = b""
            continue
        if item.read_committed:
            response["aborted_transactions"] = [
                {"producer_id": producer_id, "first_offset": first_offset}
                for producer_id, first_offset in log.aborted_transactions(
                    item.offset, info.next_offset
                )
            ]
        response["records"] = info.to_bytes() if size < COPY_BELOW_BYTES else info.regions
        total += size
        budget -= size
    return total
