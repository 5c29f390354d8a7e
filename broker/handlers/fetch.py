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

In cluster mode (``broker.cluster`` set) only the leader serves a partition,
in the client's ``current_leader_epoch`` (FENCED_LEADER_EPOCH /
UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER otherwise). A follower's fetch
(``replica_id`` >= 0; in ``replica_state`` from v15) reads up to the log end
offset and tells the replica manager the follower's LEO, which moves the high
watermark; every other fetch reads only below the HW (or the LSO), so
consumers never see a record that is not committed. On a single node the HW
is the log end offset and none of this runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.partition import Partition
from kafkette.broker.throttled_log import storage_errors
from kafkette.log.errors import OffsetOutOfRange
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.replica_manager import ReplicaManager
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

READ_COMMITTED = 1
# Reads below this size are copied in the worker thread instead of sendfile'd.
COPY_BELOW_BYTES = 64 * 1024
# A fetch of at most this many partitions, each in its active segment and at most this
# many offsets behind its log end, reads on the event loop (_caught_up).
INLINE_READ_MAX_PARTITIONS = 64
INLINE_READ_MAX_LAG = 1024


@dataclass(slots=True)
class _Wanted:
    partition: Partition | None
    index: int
    offset: int
    max_bytes: int
    response: dict
    read_committed: bool
    # Cluster mode: the answer's HW is the log's; a consumer (not a follower) reads below it.
    cluster: bool = False
    bounded: bool = False


async def handle_fetch(broker: Broker, request: Request) -> dict:
    body = request.body
    read_committed = body["isolation_level"] == READ_COMMITTED
    topics, wanted = _plan(broker, body, read_committed, request.header.api_version)
    max_wait = max(0, body["max_wait_ms"]) / 1000
    deadline = trio.current_time() + max_wait
    min_bytes = body["min_bytes"]
    partitions = [w.partition for w in wanted if w.partition is not None]
    bounded = [w.bounded for w in wanted if w.partition is not None]
    hot = _caught_up(wanted)
    while True:
        # Register before reading, so an append that lands during the read wakes us.
        appended = trio.Event()
        for partition, below_hw in zip(partitions, bounded, strict=True):
            partition.add_waiter(appended, below_hw)
        try:
            if hot:
                total = _read_all(wanted, body["max_bytes"])
            else:
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


def _caught_up(wanted: list[_Wanted]) -> bool:
    """Read on the event loop? Yes for a consumer (or follower) at or near the log end
    of a few partitions: what it reads was appended moments ago (or while it waited),
    so it is in the page cache, and the read is a copy of a few KiB or file regions for
    sendfile. A worker-thread round trip there would cost more than the read, on the
    path of every record from producer to long-polling consumer. Any other read (older
    data, possibly on disk) stays in a worker thread."""
    if len(wanted) > INLINE_READ_MAX_PARTITIONS:
        return False
    for item in wanted:
        if item.partition is None:
            continue
        log = item.partition.log
        if item.offset < log.log_end_offset - INLINE_READ_MAX_LAG or (
            item.offset < log.active_base_offset()
        ):
            return False
    return True


def replica_id_of(body: dict, version: int) -> int:
    """The fetching replica's broker id, -1 for consumers (KIP-903 moved it in v15)."""
    if version >= 15:
        state = body.get("replica_state")
        return state["replica_id"] if state else -1
    return body.get("replica_id", -1)


def _plan(
    broker: Broker, body: dict, read_committed: bool, version: int = 0
) -> tuple[list[dict], list[_Wanted]]:
    topics: list[dict] = []
    wanted: list[_Wanted] = []
    replicas = broker.cluster.replicas if broker.cluster is not None else None
    replica_id = replica_id_of(body, version) if replicas is not None else -1
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
            if replicas is None:
                partition = broker.topics.partition(name, fetch["partition"])
                if partition is None:
                    response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                elif fetch["current_leader_epoch"] > partition.leader_epoch:
                    response["error_code"] = int(ErrorCode.UNKNOWN_LEADER_EPOCH)
            else:
                partition = _cluster_partition(replicas, name, fetch, response, replica_id)
            partitions.append(response)
            wanted.append(
                _Wanted(
                    partition,
                    fetch["partition"],
                    fetch["fetch_offset"],
                    fetch["partition_max_bytes"],
                    response,
                    read_committed,
                    replicas is not None,
                    replicas is not None and replica_id < 0,
                )
            )
        topics.append({"topic": name, "partitions": partitions})
    return topics, wanted


def _cluster_partition(
    replicas: ReplicaManager, name: str, fetch: dict, response: dict, replica_id: int
) -> Partition | None:
    """The led partition (error filled in otherwise); a follower's fetch offset recorded
    unless it is past the log end."""
    led = replicas.leader_partition(name, fetch["partition"], fetch["current_leader_epoch"])
    if isinstance(led, ErrorCode):
        response["error_code"] = int(led)
        return None
    # Past the leader's log end the read answers OFFSET_OUT_OF_RANGE: as Kafka, only a
    # fetch that can succeed updates the follower's state (else it would count as caught up).
    if replica_id >= 0 and fetch["fetch_offset"] <= led.log.log_end_offset:
        replicas.record_follower_fetch(led, replica_id, fetch["fetch_offset"])
    return led


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
            high_watermark = log.high_watermark
            if item.read_committed:
                bound: int | None = stable
            else:
                bound = high_watermark if item.bounded else None
            info = log.read(item.offset, max(1, min(item.max_bytes, budget)), bound)
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
        response["high_watermark"] = high_watermark if item.cluster else info.high_watermark
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
