"""DescribeQuorum: ``kafka-metadata-quorum.sh describe --status|--replication``.

Kafka 4.0 keeps its metadata in the Raft-replicated ``__cluster_metadata`` log and
answers who leads it, who votes and who observes. kafkette has no metadata log:
a single node is its own metadata authority, and a cluster's is the controller
elected in ZooKeeper. So the answer describes that authority as a quorum of one
voter: on a single node this node leads (epoch 1), on a cluster the controller
leads (at the highest controller epoch the partition states carry) and the other
live brokers are observers. With no log, the high watermark and every log end
offset are 0 (no lag); the leader's fetch and caught-up times are now. v2 lists
the voter's endpoints: its broker listeners (there is no controller listener).
Any other topic or partition gets Kafka's UNKNOWN_TOPIC_OR_PARTITION entry; while a
cluster has no controller, NOT_LEADER_OR_FOLLOWER (Raft's answer from a non-leader,
which clients retry).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import DESCRIBE, cluster_denied
from kafkette.wire.errors import ErrorCode
from kafkette.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

METADATA_TOPIC = "__cluster_metadata"
NOT_HOSTED = "This server does not host this topic-partition."


def _replica(node_id: int, now_ms: int) -> dict:
    return {
        "replica_id": node_id,
        "replica_directory_id": ZERO_UUID,
        "log_end_offset": 0,
        "last_fetch_timestamp": now_ms,
        "last_caught_up_timestamp": now_ms,
    }


def _quorum(broker: Broker) -> tuple[int, int, list[int], list[dict]]:
    """Leader id, leader epoch, observer ids, and the leader's Nodes entry (v2)."""
    if broker.cluster is None:
        listeners = [
            {"name": name, "host": endpoint.host, "port": endpoint.port}
            for name, endpoint in broker.endpoints.items()
        ]
        return broker.node_id, 1, [], [{"node_id": broker.node_id, "listeners": listeners}]
    metadata = broker.cluster.metadata
    leader = metadata.controller_id
    epoch = max((s.controller_epoch for s in metadata.states.values()), default=1)
    observers = sorted(b for b in metadata.brokers if b != leader)
    info = metadata.brokers.get(leader)
    nodes = []
    if info is not None:
        endpoints = info.endpoints or (("PLAINTEXT", info.host, info.port),)
        listeners = [{"name": n, "host": h, "port": p} for n, h, p in endpoints]
        nodes.append({"node_id": leader, "listeners": listeners})
    return leader, epoch, observers, nodes


async def handle_describe_quorum(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE):
        return {
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "error_message": None,
            "topics": [],
            "nodes": [],
        }
    now_ms = int(time.time() * 1000)
    leader, epoch, observers, nodes = _quorum(broker)
    topics = []
    described = False
    for topic in request.body["topics"]:
        partitions = []
        for wanted in topic["partitions"]:
            index = wanted["partition_index"]
            if topic["topic_name"] == METADATA_TOPIC and index == 0 and leader >= 0:
                described = True
                leader_entry = _replica(leader, now_ms)
                observer_entries = [
                    dict(_replica(o, now_ms), last_fetch_timestamp=-1,
                         last_caught_up_timestamp=-1)
                    for o in observers
                ]
                partitions.append({
                    "partition_index": 0,
                    "error_code": 0,
                    "error_message": None,
                    "leader_id": leader,
                    "leader_epoch": epoch,
                    "high_watermark": 0,
                    "current_voters": [leader_entry],
                    "observers": observer_entries,
                })
            else:
                ours = topic["topic_name"] == METADATA_TOPIC and index == 0
                # No controller right now (a cluster between elections): Raft's answer
                # from a non-leader, which clients retry.
                code = (ErrorCode.NOT_LEADER_OR_FOLLOWER if ours
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                partitions.append({
                    "partition_index": index,
                    "error_code": int(code),
                    "error_message": None if ours else NOT_HOSTED,
                    "leader_id": 0,
                    "leader_epoch": 0,
                    "high_watermark": 0,
                    "current_voters": [],
                    "observers": [],
                })
        topics.append({"topic_name": topic["topic_name"], "partitions": partitions})
    return {
        "error_code": 0,
        "error_message": None,
        "topics": topics,
        "nodes": nodes if described else [],
    }
