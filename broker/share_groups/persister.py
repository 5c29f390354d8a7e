"""Share partitions' durable state in the compacted ``__share_group_state`` topic.

Kafka's share coordinator keeps every share partition's persistent state (start
offset, and for the in-flight window which offsets are acknowledged or archived, with
delivery counts) in ``__share_group_state``, keyed by (group, topic id, partition),
partitioned by Java's hash of ``"<group>:<topic id>:<partition>"``. kafkette writes
the same records (``state_records.py``): a snapshot of a share partition after each
change that must survive a restart (acknowledgements, releases past the delivery
limit, start-offset moves), appended (and, in a cluster, committed) before the client
is answered. The topic is created on first use with Kafka's defaults
(``share.coordinator.state.topic.*``) and read back whole when the first share
partition is needed after a start.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import TYPE_CHECKING

import trio

from kafkette.broker.groups.partitioning import java_string_hash, kafka_abs
from kafkette.broker.internal_topics import (
    SHARE_STATE_TOPIC,
    append_committed,
    create_if_missing,
    replay_batches,
)
from kafkette.broker.share_groups import state_records as rec
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import Record, build_batch

if TYPE_CHECKING:
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.share")


class PersistError(Exception):
    """A state write that did not happen (or, in a cluster, did not commit)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def coordinator_key(key: rec.ShareKey) -> str:
    group, topic_id, partition = key
    encoded = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    return f"{group}:{encoded}:{partition}"


def state_partition_for(key: rec.ShareKey, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(coordinatorKey.hashCode()) % numPartitions``."""
    return kafka_abs(java_string_hash(coordinator_key(key))) % num_partitions


def topic_configs(broker: Broker) -> dict[str, str]:
    segment = broker.config.explicit.get("share.coordinator.state.topic.segment.bytes",
                                         "104857600")
    return {"cleanup.policy": "compact", "segment.bytes": str(segment)}


class SharePersister:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        configured = broker.config.explicit.get("share.coordinator.state.topic.num.partitions")
        self.num_partitions = int(configured) if configured else 50
        self.write_timeout_s = 5.0

    async def load(self) -> dict[rec.ShareKey, rec.ShareState]:
        """Every share partition's last state (snapshots, then updates on top)."""
        existing = self.broker.topics.metadata(SHARE_STATE_TOPIC)
        if existing is None:
            return {}
        self.num_partitions = existing.partitions
        partitions = self.broker.topics.partitions(SHARE_STATE_TOPIC)
        states = await trio.to_thread.run_sync(_read_states, partitions)
        log.info("loaded the state of %d share partitions from %s", len(states),
                 SHARE_STATE_TOPIC)
        return states

    async def _partition(self, index: int) -> Partition:
        await create_if_missing(self.broker.topics, SHARE_STATE_TOPIC, self.num_partitions,
                                topic_configs(self.broker))
        partition = self.broker.topics.partition(SHARE_STATE_TOPIC, index)
        if partition is None:
            raise PersistError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               f"{SHARE_STATE_TOPIC}-{index} is not served here")
        return partition

    async def write(self, key: rec.ShareKey, state: rec.ShareState | None) -> None:
        """Append the share partition's snapshot (None: its tombstone); raises
        PersistError if it is not written (committed, in a cluster)."""
        from kafkette.broker.topics import TopicError

        index = state_partition_for(key, self.num_partitions)
        try:
            partition = await self._partition(index)
        except TopicError as exc:
            raise PersistError(exc.code, exc.message) from exc
        value = None if state is None else rec.encode_snapshot(state)
        now = int(time.time() * 1000)
        record = Record(0, 0, rec.encode_key(rec.SNAPSHOT, key), value)
        batch = bytearray(build_batch([record], base_timestamp=now))
        error = await append_committed(partition, batch, self.write_timeout_s)
        if error != ErrorCode.NONE:
            raise PersistError(error, f"writing {SHARE_STATE_TOPIC}-{index}: {error.name}")


def _read_states(partitions: list[Partition]) -> dict[rec.ShareKey, rec.ShareState]:
    states: dict[rec.ShareKey, rec.ShareState] = {}
    for partition in partitions:
        for header, records in replay_batches(partition):
            if header.is_control:
                continue
            for record in records:
                if record.key is None:
                    continue
                try:
                    kind, key = rec.decode_key(record.key)
                    if record.value is None:
                        states.pop(key, None)
                        continue
                    state = rec.decode_value(kind, record.value)
                except (rec.UnsupportedRecord, ValueError, IndexError):
                    continue
                if kind == rec.SNAPSHOT or key not in states:
                    states[key] = state
                else:
                    states[key] = _apply_update(states[key], state)
    return states


def _apply_update(base: rec.ShareState, update: rec.ShareState) -> rec.ShareState:
    """A ShareUpdate on top of the snapshot before it: its batches replace the offsets
    they cover, the start offset moves, what falls below it goes."""
    start = max(base.start_offset, update.start_offset)
    kept: list[rec.StateBatch] = []
    for first, last, state, count in base.batches:
        for f, la, _s, _c in update.batches:
            if f <= last and la >= first:  # overlap: keep the parts outside the update
                if first < f:
                    kept.append((first, f - 1, state, count))
                first = la + 1
                if first > last:
                    break
        if first <= last:
            kept.append((first, last, state, count))
    merged = sorted(kept + list(update.batches))
    trimmed = tuple(
        (max(first, start), last, state, count) for first, last, state, count in merged
        if last >= start
    )
    return rec.ShareState(rec.SNAPSHOT, update.snapshot_epoch, base.state_epoch,
                          update.leader_epoch, start, trimmed, base.create_ms,
                          base.write_ms, update.delivery_complete_count)
