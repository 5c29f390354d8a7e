"""DescribeQuorum: ``kafka-metadata-quorum.sh describe --status|--replication``.

Kafka 4.0 keeps its metadata in the Raft-replicated ``__cluster_metadata`` log and
answers who leads it, who votes and who observes. kafkette has no metadata log:
a single node is its own metadata authority, and a cluster's is the controller
elected in ZooKeeper (``broker.topology.quorum``). So the answer describes that
authority as a quorum of one voter: on a single node this node leads (epoch 1),
on a cluster the controller leads (at the highest controller epoch the partition
states carry) and the other live brokers are observers. With no log, the high
watermark and every log end offset are 0 (no lag); the leader's fetch and
caught-up times are now. v2 lists the voter's endpoints: its broker listeners
(there is no controller listener).
A request naming anything but exactly ``__cluster_metadata``-0 gets Kafka's
UNKNOWN_TOPIC_OR_PARTITION for every partition it names; while a cluster has no
controller, NOT_LEADER_OR_FOLLOWER (Raft's answer from a non-leader, which clients
retry). Observers report log end offset and times -1 (they fetch no log).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import DESCRIBE, cluster_denied
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.topology import MetadataQuorum
    from kafkette.wire.connection import Request

METADATA_TOPIC = "__cluster_metadata"
NOT_HOSTED = "This server does not host this topic-partition."
NOT_LEADER = (
    "For requests intended only for the leader, this error indicates that the broker is "
    "not the current leader. For requests intended for any replica, this error indicates "
    "that the broker is not a replica of the topic partition."
)


def _replica(node_id: int, now_ms: int) -> dict:
    return {
        "replica_id": node_id,
        "replica_directory_id": ZERO_UUID,
        "log_end_offset": 0,
        "last_fetch_timestamp": now_ms,
        "last_caught_up_timestamp": now_ms,
    }


def _is_the_metadata_partition(topics: list[dict]) -> bool:
    """Kafka's Raft handler answers only a request naming exactly __cluster_metadata-0
    (one topic, one partition); anything else, even alongside it, is refused whole."""
    return (
        len(topics) == 1
        and topics[0]["topic_name"] == METADATA_TOPIC
        and [p["partition_index"] for p in topics[0]["partitions"]] == [0]
    )


def _error_answer(topics: list[dict], code: ErrorCode, message: str) -> dict:
    """Every partition the request names gets ``code`` (Kafka's partition-level error
    response), no nodes."""
    return {
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "topics": [
            {
                "topic_name": topic["topic_name"],
                "partitions": [
                    {
                        "partition_index": wanted["partition_index"],
                        "error_code": int(code),
                        "error_message": message,
                        "leader_id": 0,
                        "leader_epoch": 0,
                        "high_watermark": 0,
                        "current_voters": [],
                        "observers": [],
                    }
                    for wanted in topic["partitions"]
                ],
            }
            for topic in topics
        ],
        "nodes": [],
    }


async def handle_describe_quorum(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE):
        return {
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "error_message": None,
            "topics": [],
            "nodes": [],
        }
    topics = request.body["topics"]
    if not _is_the_metadata_partition(topics):
        return _error_answer(topics, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, NOT_HOSTED)
    quorum = broker.topology.quorum()
    leader = quorum.leader
    if leader < 0:
        # No controller right now (a cluster between elections): Raft's answer from a
        # non-leader, which clients retry.
        return _error_answer(topics, ErrorCode.NOT_LEADER_OR_FOLLOWER, NOT_LEADER)
    now_ms = int(time.time() * 1000)
    # Observers fetch nothing (there is no log): offset and times unknown, -1, as
    # Kafka reports a replica it has not heard from.
    observer_entries = [
        dict(_replica(o, now_ms), log_end_offset=-1, last_fetch_timestamp=-1,
             last_caught_up_timestamp=-1)
        for o in quorum.observers
    ]
    partition = {
        "partition_index": 0,
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "leader_id": leader,
        "leader_epoch": quorum.epoch,
        "high_watermark": 0,
        "current_voters": [_replica(leader, now_ms)],
        "observers": observer_entries,
    }
    return {
        "error_code": ErrorCode.NONE,
        "error_message": "",
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "nodes": _nodes(quorum),
    }


def _nodes(quorum: MetadataQuorum) -> list[dict]:
    """v2's Nodes: the leader at its broker listeners (there is no controller listener)."""
    if quorum.leader_listeners is None:
        return []
    listeners = [{"name": n, "host": h, "port": p} for n, h, p in quorum.leader_listeners]
    return [{"node_id": quorum.leader, "listeners": listeners}]
