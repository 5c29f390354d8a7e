"""A broker that is no longer a replica of a partition deletes the partition's log.

Kafka's controller ends a reassignment with StopReplica(delete=true) to the
removed replicas, which stop fetching and delete the partition's log. Here a
broker hosts only the partitions it is a replica of (docs/cluster.md), so a
partition of the snapshot this broker still hosts but is no replica of is
dropped: forgotten by the topic registry and the data dir's topics.json, then
its directory removed. A broker that was down when the reassignment completed
does the same when it returns.

Runs as a metadata listener after the replica manager, so the replica has
already stopped leading or following in that snapshot; the drop holds the
partition's append lock, as the follower's appends do.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.cluster")


def stray_partitions(metadata: ClusterMetadata, broker_id: int) -> list[tuple[str, int]]:
    """The partitions of the snapshot ``broker_id`` holds no replica of (pure)."""
    return [
        (name, p)
        for name, topic in metadata.topics.items()
        if name not in metadata.pending_deletions
        for p, replicas in topic.replicas.items()
        if broker_id not in replicas
    ]


async def drop_stray_replicas(broker: Broker, metadata: ClusterMetadata, broker_id: int) -> None:
    """Delete the local logs of the partitions this broker is not a replica of."""
    for name, p in stray_partitions(metadata, broker_id):
        partition = broker.topics.partition(name, p)
        if partition is None:
            continue  # not hosted here: nothing to drop
        end = partition.log_end_offset if not partition.is_closed else -1
        try:
            dropped = await broker.topics.drop_local_partition(name, p)
        except (OSError, ValueError) as exc:
            log.warning("could not delete the log of %s-%d: %s", name, p, exc)
            continue
        if dropped:
            log.info(
                "%s-%d: no longer a replica here: local log deleted (it ended at offset %d)",
                name, p, end,
            )
