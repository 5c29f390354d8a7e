"""DescribeLogDirs and AlterReplicaLogDirs: ``kafka-log-dirs.sh`` and replica moves.

kafkette keeps every partition in its one data dir (``log.dirs``' single entry
in Kafka's terms), so DescribeLogDirs answers one log dir, named by its absolute
path, with each hosted partition's size on disk (its segments' bytes), its offset
lag (Kafka's: how far the log end is behind the high watermark, never below 0)
and, from v4, the volume's total and usable bytes. ``__cluster_metadata`` is not
listed, as in Kafka; the internal topics are.

AlterReplicaLogDirs answers as a Kafka broker with one log dir does: a move to
that same dir succeeds and changes nothing, any other path is LOG_DIR_NOT_FOUND
(the path must be the exact absolute one DescribeLogDirs shows), a partition this
broker does not host is UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER when
the cluster has it elsewhere. Both need the cluster permission Kafka checks
(DESCRIBE, ALTER).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.authorizer.checks import ALTER, DESCRIBE, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


def log_dir_path(broker: Broker) -> str:
    """The data dir as Kafka names a log dir: its absolute path, not resolved further."""
    return os.path.abspath(broker.config.data_dir)


def _volume_bytes(path: str) -> tuple[int, int]:
    """Total and usable bytes of the volume ``path`` is on (Kafka: File.getTotalSpace /
    getUsableSpace), or -1, -1 if it cannot be read."""
    try:
        stats = os.statvfs(path)
    except OSError:
        return -1, -1
    return stats.f_blocks * stats.f_frsize, stats.f_bavail * stats.f_frsize


def _partition_entry(partition: Partition) -> dict:
    return {
        "partition_index": partition.index,
        "partition_size": partition.size_bytes,
        "offset_lag": max(partition.high_watermark - partition.log_end_offset, 0),
        "is_future_key": False,
    }


def _wanted(broker: Broker, topics: list[dict] | None) -> dict[str, list[Partition]]:
    hosted: dict[str, list[Partition]] = {}
    if topics is None:
        for partition in broker.topics.all_partitions():
            hosted.setdefault(partition.topic, []).append(partition)
        for partitions in hosted.values():
            partitions.sort(key=lambda p: p.index)
        return hosted
    seen: set[tuple[str, int]] = set()  # a request may name a partition many times
    for topic in topics:
        for index in topic["partitions"]:
            if (topic["topic"], index) in seen:
                continue
            seen.add((topic["topic"], index))
            partition = broker.topics.partition(topic["topic"], index)
            if partition is not None:
                hosted.setdefault(topic["topic"], []).append(partition)
    return hosted


def _topic_entries(wanted: dict[str, list[Partition]]) -> list[dict]:
    """In a worker thread: a log's size takes its state lock, which a worker may hold
    while it truncates or rolls segments; the event loop must not wait on it."""
    return [
        {"name": name, "partitions": [_partition_entry(p) for p in partitions]}
        for name, partitions in wanted.items()
    ]


async def handle_describe_log_dirs(broker: Broker, request: Request) -> dict:
    version = request.header.api_version
    if cluster_denied(broker, request, DESCRIBE):
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "results": [],
        }
    path = log_dir_path(broker)
    wanted = _wanted(broker, request.body["topics"])
    topics = await trio.to_thread.run_sync(_topic_entries, wanted)
    result = {"error_code": ErrorCode.NONE, "log_dir": path, "topics": topics}
    if version >= 4:  # statvfs: a system call that may block on a busy disk
        result["total_bytes"], result["usable_bytes"] = await trio.to_thread.run_sync(
            _volume_bytes, path
        )
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": [result]}


def _move_error(broker: Broker, path: str, own: str, name: str, index: int) -> ErrorCode:
    if path != own:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if broker.topics.partition(name, index) is not None:
        return ErrorCode.NONE
    if broker.topology.has_partition(name, index):  # the cluster has it elsewhere
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def handle_alter_replica_log_dirs(broker: Broker, request: Request) -> dict:
    denied = cluster_denied(broker, request, ALTER)
    own = log_dir_path(broker)
    by_topic: dict[str, list[dict]] = {}
    for target in request.body["dirs"]:
        for topic in target["topics"]:
            for index in topic["partitions"]:
                code = (
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    if denied
                    else _move_error(broker, target["path"], own, topic["name"], index)
                )
                by_topic.setdefault(topic["name"], []).append(
                    {"partition_index": index, "error_code": int(code)}
                )
    return {
        "throttle_time_ms": 0,
        "results": [
            {"topic_name": name, "partitions": partitions}
            for name, partitions in by_topic.items()
        ],
    }
