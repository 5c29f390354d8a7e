"""A broker that is no longer a replica of a partition drops the partition's data.

Kafka's controller ends a reassignment with StopReplica(delete=true) to the
removed replicas, which stop fetching and delete the partition's log. Here
every broker keeps a log for every partition of every topic (phase-1 layout,
docs/cluster.md), so "deleting" is emptying: a broker not among a partition's
replicas whose local log still holds records truncates it fully (segments,
indexes, producer state and leader-epoch entries go; the log restarts empty at
offset 0). A broker that was down when the reassignment completed does the same
when it returns.

Runs as a metadata listener after the replica manager, so the replica has
already stopped leading or following in that snapshot; the truncation holds
the partition's append lock, as the follower's appends do.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

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
    """Empty the local logs of the partitions this broker is not a replica of."""
    for name, p in stray_partitions(metadata, broker_id):
        partition = broker.topics.partition(name, p)
        if partition is None or partition.log.log_end_offset == 0:
            continue
        async with partition.append_lock:
            log_ = partition.log
            if log_.is_closed or log_.log_end_offset == 0:
                continue
            end = log_.log_end_offset
            try:
                await trio.to_thread.run_sync(log_.truncate_fully_and_start_at, 0)
            except (OSError, ValueError) as exc:
                log.warning("could not drop the data of %s-%d: %s", name, p, exc)
                continue
        log.info(
            "%s-%d: no longer a replica here: local log emptied (it ended at offset %d)",
            name, p, end,
        )
