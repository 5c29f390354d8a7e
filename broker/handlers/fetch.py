"""Fetch: stored batches as they are, long-polling until ``min_bytes`` or ``max_wait_ms``.

Reads start at the whole batch holding the fetch offset (clients skip the
records before it). The first batch of a response is sent whole even past
``max_bytes`` so a consumer always progresses; after that, partitions get
data only while the response budget lasts. Small reads are copied; large
ones travel as file regions the connection sends with ``os.sendfile``.

A read runs on the event loop first, taking only bytes already in the page
cache (``reads_without_waiting``): that is nearly every read of a consumer
keeping up, or catching up on recent data, and it saves the worker-thread
round trip that cost a quarter of a small Fetch's CPU. When it meets bytes
that are not cached (or the fetch names many partitions), the whole read is
done again in a worker thread, where waiting for the disk blocks no one.

Fetch sessions (KIP-227, v7+): ``broker/fetch_sessions/`` decides from the
request's session id and epoch whether this is a sessionless, full or incremental
fetch; an incremental one reads every partition of its session and answers only
those with something new. From v13 topics are named by id (UNKNOWN_TOPIC_ID for an
id no topic has, answered per partition without holding up the long poll, as Kafka).
From v16 (KIP-951) a NOT_LEADER_OR_FOLLOWER / FENCED_LEADER_EPOCH partition carries
the current leader and the answer its endpoint. v17's replica directory id is read
and ignored (one log directory per broker).

``isolation_level=1`` (read_committed) reads only batches below the last
stable offset and answers the aborted transactions overlapping the data
returned (from the segments' abort indexes); every partition answer carries
the LSO, for both isolation levels, as Kafka's does.

Each partition is the one ``TopicRegistry.serving`` finds: in a cluster only
the leader serves it, in the client's ``current_leader_epoch``
(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER
otherwise). A follower's fetch (``replica_id`` >= 0; in ``replica_state`` from
v15) reads up to the log end offset and tells the partition the follower's
LEO (``Partition.follower_fetched``), which moves the high watermark; every
other fetch reads only below the HW (or the LSO), so consumers never see a
record that is not committed. On a single node the HW is the log end offset
and none of this runs.
"""

from __future__ import annotations

import functools
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.fetch_sessions import (
    CachedPartition,
    FetchSession,
    creating_session,
    incremental_answer,
    new_session_partitions,
    open_context,
    updating_session,
)
from kafkette.broker.fetch_sessions.context import SESSIONLESS
from kafkette.broker.network.finishing import FinishingAnswer
from kafkette.broker.partitions import Partition
from kafkette.broker.security.authorizer.checks import (
    CLUSTER_ACTION,
    READ,
    cluster_denied,
    topic_denied,
)
from kafkette.broker.security.session import listener_of
from kafkette.broker.throttled_log import storage_errors
from kafkette.broker.topic_ids import topic_name
from kafkette.log.errors import OffsetOutOfRange
from kafkette.log.file_region import FileRegion, WouldBlock, reads_without_waiting
from kafkette.wire.errors import ErrorCode
from kafkette.wire.fetch_replica import replica_id_of
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

READ_COMMITTED = 1
# Reads below this size are copied instead of sendfile'd.
COPY_BELOW_BYTES = 64 * 1024
# A fetch of more partitions than this reads in a worker thread: a long read on the
# event loop would hold up every other connection (a thread is given the GIL in turns).
INLINE_READ_MAX_PARTITIONS = 64
# A stored batch's base offset and length, then (at byte 23) its last offset delta:
# enough to count the offsets a response spans, one read per batch, never per record.
_BATCH_START = struct.Struct(">qi")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_BATCH_PREFIX = _LAST_OFFSET_DELTA_AT + _LAST_OFFSET_DELTA.size


@dataclass(slots=True)
class ReadCounts:
    """Where Fetch reads ran (for benches and tests): on the event loop, or in a thread
    (``fallbacks`` of those after an event-loop attempt met bytes not in the page cache)."""

    inline: int = 0
    threaded: int = 0
    fallbacks: int = 0


READ_COUNTS = ReadCounts()


@dataclass(slots=True)
class _Wanted:
    partition: Partition | None
    index: int
    offset: int
    max_bytes: int
    response: dict
    read_committed: bool
    # A replica's fetch: reads to the log end (a consumer's stops at the HW of a replicated
    # partition, Partition.read_for_fetch) and is not counted as traffic out.
    follower: bool = False
    # Count records out (a scan of the answer's batch headers): only while metrics or the
    # console read them (Broker.count_records_out), never for a follower.
    count_records: bool = False
    # What the last read put in the answer (Kafka's BytesOutPerSec; records as offsets).
    out_bytes: int = 0
    out_records: int = 0


async def handle_fetch(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    read_committed = body["isolation_level"] == READ_COMMITTED
    # Only where partitions have followers does a fetch come from a replica.
    replica_id = replica_id_of(body, version) if broker.topics.leadership_moves else -1
    cache = broker.fetch_sessions
    context = open_context(cache, version, body, now_ms()) if version >= 7 else SESSIONLESS
    if context.error:
        return {
            "throttle_time_ms": 0,
            "error_code": context.error,
            "session_id": 0,
            "responses": [],
        }
    # Fetch 13+: topic id -> name by broker/topic_ids.py's index (one dict read a topic;
    # an id no topic has costs a dict miss, never a rebuild).
    names = functools.partial(topic_name, broker) if version >= 13 else None
    session = context.session
    if session is None:
        groups = _request_groups(body["topics"], names)
        cached = None
    else:
        groups, cached = _session_groups(session, names)
    topics, wanted = _plan(broker, groups, read_committed, replica_id, request)
    max_wait = max(0, body["max_wait_ms"]) / 1000
    deadline = trio.current_time() + max_wait
    min_bytes = body["min_bytes"]
    partitions = [w.partition for w in wanted if w.partition is not None]
    follower = replica_id >= 0
    while True:
        # Register before reading, so an append that lands during the read wakes us.
        appended = trio.Event()
        for partition in partitions:
            partition.add_waiter(appended, follower)
        try:
            total = await _read(wanted, body["max_bytes"])
            if (
                total >= min_bytes
                or trio.current_time() >= deadline
                or broker.closing
                or any(w.response["error_code"] for w in wanted)
                or not wanted  # nothing to wait for (every partition refused), as Kafka
            ):
                break
            with trio.move_on_at(deadline):
                await appended.wait()
        finally:
            for partition in partitions:
                partition.remove_waiter(appended)
    _count_traffic_out(wanted)
    if session is not None and session.epoch != context.epoch:
        # Another fetch of this session came in during the long poll (Kafka's
        # updateAndGenerateResponseData checks the same): this answer is stale.
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.INVALID_FETCH_SESSION_EPOCH),
            "session_id": session.id,
            "responses": [],
        }
    if cached is not None and session is not None:
        responses = [r for topic in topics for r in topic["partitions"]]
        topics, updates = incremental_answer(cached, responses)
        on_answer = updating_session(session, context.epoch, updates)
        session_id = session.id
    elif context.may_create:
        by_id = version >= 13
        size = sum(len(topic["partitions"]) for topic in topics)
        answered = topics
        on_answer = creating_session(
            cache,
            lambda: cache.maybe_create(
                now_ms(),
                replica_id >= 0,
                size,
                by_id,
                lambda: new_session_partitions(_answered(groups, answered, by_id)),
            ),
        )
        session_id = 0  # set when the answer goes out unthrottled
    else:
        on_answer = None
        session_id = 0
    fields = {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "session_id": session_id,
        "responses": topics,
    }
    result = fields if on_answer is None else FinishingAnswer(fields, on_answer)
    if version >= 16:
        _add_leader_hints(broker, request, topics, result)
    return result


# (topic name or None when its id is unknown, topic id, the request's FetchPartitions)
_Group = tuple["str | None", uuid.UUID, list[dict]]


NameOf = Callable[[uuid.UUID], "str | None"]


def _request_groups(topics: list[dict], names: NameOf | None) -> list[_Group]:
    """The request's topics (by name before v13, by id from v13)."""
    if names is None:
        return [(topic["topic"], ZERO_UUID, topic["partitions"]) for topic in topics]
    return [
        (names(topic["topic_id"]), topic["topic_id"], topic["partitions"]) for topic in topics
    ]


def _session_groups(
    session: FetchSession, names: NameOf | None
) -> tuple[list[_Group], list[CachedPartition]]:
    """The session's partitions in its order, consecutive ones of a topic in one group
    (names resolved afresh when the session goes by topic id: a topic may come or go)."""
    groups: list[_Group] = []
    cached = list(session.partitions.values())
    last: object = None
    fetches: list[dict] = []
    name: str | None = None
    for item in cached:
        if item.topic != last:
            last = item.topic
            if names is not None:
                name = names(item.topic_id)
            else:
                name = item.name
            fetches = []
            groups.append((name, item.topic_id, fetches))
        item.name = name
        fetches.append(item.fetch)
    return groups, cached


def _answered(
    groups: list[_Group], topics: list[dict], by_id: bool
) -> Iterator[tuple[object, uuid.UUID, str | None, dict, dict]]:
    for (name, topic_id, fetches), topic in zip(groups, topics, strict=True):
        key = topic_id if by_id else name
        for fetch, response in zip(fetches, topic["partitions"], strict=True):
            yield key, topic_id, name, fetch, response


def _plan(
    broker: Broker,
    groups: list[_Group],
    read_committed: bool,
    replica_id: int,
    request: Request,
) -> tuple[list[dict], list[_Wanted]]:
    topics: list[dict] = []
    wanted: list[_Wanted] = []
    # Kafka: a follower needs CLUSTER_ACTION on the cluster, a consumer READ on each
    # topic; either refusal is TOPIC_AUTHORIZATION_FAILED on the partitions.
    follower_denied = replica_id >= 0 and cluster_denied(broker, request, CLUSTER_ACTION)
    for name, topic_id, fetches in groups:
        partitions = []
        if name is None:  # Fetch 13+ naming a topic id no topic has (Kafka: per partition)
            for fetch in fetches:
                partitions.append(
                    _refused(fetch["partition"], read_committed, ErrorCode.UNKNOWN_TOPIC_ID)
                )
            topics.append({"topic": "", "topic_id": topic_id, "partitions": partitions})
            continue
        if broker.authorizer is not None and (
            follower_denied
            or (replica_id < 0 and topic_denied(broker, request, READ, name))
        ):
            denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            for fetch in fetches:
                partitions.append(_refused(fetch["partition"], read_committed, denied))
            topics.append({"topic": name, "topic_id": topic_id, "partitions": partitions})
            continue
        for fetch in fetches:
            response = {
                "partition_index": fetch["partition"],
                "error_code": ErrorCode.NONE,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if read_committed else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            served = broker.topics.serving(
                name, fetch["partition"], fetch["current_leader_epoch"]
            )
            if isinstance(served, ErrorCode):
                response["error_code"] = int(served)
                partition = None
            else:
                partition = served
                if replica_id >= 0:
                    partition.follower_fetched(replica_id, fetch["fetch_offset"])
            partitions.append(response)
            wanted.append(
                _Wanted(
                    partition,
                    fetch["partition"],
                    fetch["fetch_offset"],
                    fetch["partition_max_bytes"],
                    response,
                    read_committed,
                    replica_id >= 0,
                    replica_id < 0 and broker.count_records_out,
                )
            )
        topics.append({"topic": name, "topic_id": topic_id, "partitions": partitions})
    return topics, wanted


_LEADER_MOVED = (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), int(ErrorCode.FENCED_LEADER_EPOCH))


def _add_leader_hints(broker: Broker, request: Request, topics: list[dict], result: dict) -> None:
    """KIP-951 (v16+): partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH
    carry the leader this broker knows, and ``node_endpoints`` where to reach it (for
    the listener the request came in on), so the client need not ask Metadata first."""
    leaders: set[int] = set()
    for topic in topics:
        for response in topic["partitions"]:
            if response["error_code"] not in _LEADER_MOVED:
                continue
            note_current_leader(broker, topic["topic"], response["partition_index"], response,
                                leaders)
    if leaders:
        result["node_endpoints"] = leader_endpoints(broker, request, leaders)


def note_current_leader(broker: Broker, topic: str, index: int, answer: dict,
                        leaders: set[int]) -> None:
    """KIP-951: the partition's answer carries the leader this broker knows (if any),
    whose id joins ``leaders`` (Fetch and ShareFetch)."""
    current = broker.topics.current_leader(topic, index)
    if current is None:
        return
    leader, epoch = current
    answer["current_leader"] = {"leader_id": leader, "leader_epoch": epoch}
    if leader >= 0:
        leaders.add(leader)


def leader_endpoints(broker: Broker, request: Request, leaders: set[int]) -> list[dict]:
    """KIP-951's ``node_endpoints``: where to reach ``leaders`` on the request's listener."""
    return [
        {"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
        for b in broker.topology.brokers(listener_of(request))
        if b.node_id in leaders
    ]


def _refused(index: int, read_committed: bool, error: ErrorCode) -> dict:
    return {
        "partition_index": index,
        "error_code": int(error),
        "high_watermark": -1,
        "last_stable_offset": -1,
        "log_start_offset": -1,
        "aborted_transactions": [] if read_committed else None,
        "preferred_read_replica": -1,
        "records": b"",
    }


async def _read(wanted: list[_Wanted], max_bytes: int) -> int:
    """:func:`_read_all` on the event loop if every byte it needs is cached, else in a thread.

    An attempt cut short by :class:`WouldBlock` is simply redone: ``_read_all``
    sets every field it answers (records, offsets) afresh on each run, as the
    long-poll loop already relies on.

    What the check covers: the bytes the read copies (responses under
    ``COPY_BELOW_BYTES``) and the batch headers it scans. A larger read answers with file
    regions that the connection later ``sendfile``s on the event loop; their bodies are not
    probed, so a cold region can still make that ``sendfile`` wait on the disk, as before.
    """
    if len(wanted) <= INLINE_READ_MAX_PARTITIONS:
        try:
            with reads_without_waiting():
                total = _read_all(wanted, max_bytes)
        except WouldBlock:
            READ_COUNTS.fallbacks += 1
        else:
            READ_COUNTS.inline += 1
            return total
    READ_COUNTS.threaded += 1
    return await trio.to_thread.run_sync(_read_all, wanted, max_bytes)


def _read_all(wanted: list[_Wanted], max_bytes: int) -> int:
    """Read every partition within the response budget; returns bytes read."""
    budget = max_bytes
    total = 0
    for item in wanted:
        response = item.response
        if item.partition is None or response["error_code"]:
            continue
        # Set afresh: an earlier attempt (long-poll round, or an event-loop read redone in
        # a thread) may have filled them before an error below ends this partition's read.
        response["records"] = b""
        item.out_bytes = item.out_records = 0
        if item.read_committed:
            response["aborted_transactions"] = []
        partition = item.partition
        try:
            stable, high_watermark, log_start, info = partition.read_for_fetch(
                item.offset, item.max_bytes, budget, item.read_committed, item.follower
            )
            if info is None:
                # Caught up: nothing read (what a session's quiet partitions mostly
                # are); the offsets are answered without the read's lock and snapshot.
                response["high_watermark"] = high_watermark
                response["last_stable_offset"] = stable
                response["log_start_offset"] = log_start
                continue
        except OffsetOutOfRange:
            response["error_code"] = int(ErrorCode.OFFSET_OUT_OF_RANGE)
            info = None
        except WouldBlock:
            raise  # not cached: the caller reads again in a worker thread
        except OSError as exc:  # the disk failed under us: Kafka's offline-log-dir answer
            subject = f"{partition.topic}-{partition.index}"
            storage_errors.failure("fetch from", subject, exc)
            response["error_code"] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            continue
        except Exception:  # the topic was deleted under us, or a closed log
            response["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        if info is None:
            response["high_watermark"] = partition.high_watermark
            response["last_stable_offset"] = partition.last_stable_offset
            response["log_start_offset"] = partition.log_start_offset
            continue
        response["high_watermark"] = high_watermark
        response["last_stable_offset"] = stable
        response["log_start_offset"] = info.log_start_offset
        size = info.size
        if size == 0 or (total > 0 and size > budget):
            response["records"] = b""
            continue
        if item.read_committed:
            response["aborted_transactions"] = [
                {"producer_id": producer_id, "first_offset": first_offset}
                for producer_id, first_offset in partition.aborted_transactions(
                    item.offset, info.next_offset
                )
            ]
        if size < COPY_BELOW_BYTES:
            data = info.to_bytes()
            response["records"] = data
            if item.count_records:
                item.out_records = _offsets_in_bytes(data, item.offset)
            item.out_bytes = len(data)  # shorter than size only if truncated under us
        else:
            response["records"] = info.regions
            if item.count_records:
                item.out_records = _offsets_in_regions(info.regions, item.offset)
            item.out_bytes = size
        total += size
        budget -= size
    return total


def _count_traffic_out(wanted: list[_Wanted]) -> None:
    """Add what the answer carries to the partitions' traffic counters (consumers only)."""
    for item in wanted:
        if item.out_bytes and item.partition is not None and not item.follower:
            item.partition.bytes_out += item.out_bytes
            item.partition.records_out += item.out_records


def _offsets_in_bytes(data: bytes, fetch_offset: int) -> int:
    """Offsets from ``fetch_offset`` to the end of the last whole batch in ``data`` (the
    records a consumer gets; those before its fetch offset are skipped by the client)."""
    first = last = -1
    pos = 0
    end = len(data)
    while pos + _BATCH_PREFIX <= end:
        base, length = _BATCH_START.unpack_from(data, pos)
        if first < 0:
            first = base
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(data, pos + _LAST_OFFSET_DELTA_AT)
        last = base + delta
        if length < _BATCH_PREFIX - 12:
            break  # not a batch (bytes changed under a racing read): count what was seen
        pos += 12 + length
    return max(0, last + 1 - max(first, fetch_offset)) if first >= 0 else 0


def _offsets_in_regions(regions: list[FileRegion], fetch_offset: int) -> int:
    """As :func:`_offsets_in_bytes` for file regions: one small ``pread`` per batch header.
    Runs only while metrics or the console are on (``Broker.count_records_out``); the
    headers are usually in the page cache, as the read just located them."""
    first = last = -1
    try:
        for region in regions:
            pos = region.position
            end = pos + region.length
            while pos + _BATCH_PREFIX <= end:
                prefix = region.file.pread(_BATCH_PREFIX, pos)
                if len(prefix) < _BATCH_PREFIX:
                    break  # truncated under us: count what was seen
                base, length = _BATCH_START.unpack_from(prefix, 0)
                if first < 0:
                    first = base
                (delta,) = _LAST_OFFSET_DELTA.unpack_from(prefix, _LAST_OFFSET_DELTA_AT)
                last = base + delta
                if length < _BATCH_PREFIX - 12:
                    break  # not a batch: count what was seen
                pos += 12 + length
    except (OSError, ValueError):
        # The file went away or failed under us: the answer itself is sent (or fails)
        # on its own; the counter keeps what was seen.
        pass
    return max(0, last + 1 - max(first, fetch_offset)) if first >= 0 else 0
