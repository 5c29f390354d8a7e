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

In a cluster the state belongs to the share coordinator (``coordinator.py``), the leader
of the key's ``__share_group_state`` partition: reads and writes go through it, locally
when this broker leads that partition, else to its leader with ReadShareGroupState and
WriteShareGroupState; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and an unreachable
coordinator are retried (after the metadata moves) until ``retry_s`` runs out.
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
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import Record, build_batch

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import BrokerInfo
    from kafkette.broker.cluster.peer_client import PeerClient
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


# Coordinator answers worth asking again, the metadata having (maybe) moved meanwhile.
_RETRIED = frozenset({
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.REQUEST_TIMED_OUT,
})
READ_VERSION, WRITE_VERSION, SUMMARY_VERSION = 0, 1, 1
_PEER_TIMEOUT_S = 5.0


class SharePersister:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        configured = broker.config.explicit.get("share.coordinator.state.topic.num.partitions")
        self.num_partitions = int(configured) if configured else 50
        self.write_timeout_s = 5.0
        # Cluster mode: how long a read or write keeps looking for the coordinator (a
        # dead one's partitions move once its ZooKeeper session expires).
        self.retry_s = 20.0
        self._peers: dict[int, PeerClient] = {}

    @property
    def clustered(self) -> bool:
        return self.broker.cluster is not None

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

        if self.clustered:
            error, _ = await self._through_coordinator(key, "write", state)
            if error != ErrorCode.NONE:
                raise PersistError(error, f"writing the share state of {key}: {error.name}")
            return
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


    async def read(self, key: rec.ShareKey, leader_epoch: int) -> rec.ShareState | None:
        """Cluster mode: the share partition's state at its coordinator, None if it has
        none; raises PersistError when the coordinator cannot answer in time.
        ``leader_epoch``: the data partition's, which fences older leaders' writes."""
        error, state = await self._through_coordinator(key, "read", None, leader_epoch)
        if error != ErrorCode.NONE:
            raise PersistError(error, f"reading the share state of {key}: {error.name}")
        if state is None or state.start_offset < 0:
            return None
        return state

    async def summary(self, key: rec.ShareKey) -> rec.ShareState | None:
        """Cluster mode: the share partition's start offset and delivery-complete count
        at its coordinator (ReadShareGroupStateSummary), None if it has no state. Reads
        without fencing anyone: what DescribeShareGroupOffsets reports."""
        error, state = await self._through_coordinator(key, "summary", None)
        if error != ErrorCode.NONE:
            raise PersistError(error, f"reading the share state of {key}: {error.name}")
        if state is None or state.start_offset < 0:
            return None
        return state

    async def _through_coordinator(
        self, key: rec.ShareKey, op: str, state: rec.ShareState | None, leader_epoch: int = -1
    ) -> tuple[ErrorCode, rec.ShareState | None]:
        from kafkette.broker.topics import TopicError

        cluster = self.broker.cluster
        assert cluster is not None
        coordinator = self.broker.share_coordinator
        deadline = trio.current_time() + self.retry_s
        while True:
            error: ErrorCode
            answer: rec.ShareState | None = None
            try:
                await create_if_missing(self.broker.topics, SHARE_STATE_TOPIC,
                                        self.num_partitions, topic_configs(self.broker))
            except TopicError as exc:
                if exc.code not in _RETRIED and exc.code != ErrorCode.REQUEST_TIMED_OUT:
                    return exc.code, None
            metadata = cluster.metadata
            topic = metadata.topics.get(SHARE_STATE_TOPIC)
            leader = -1
            if topic is not None:
                self.num_partitions = len(topic.replicas)
                leader = metadata.leader_of(SHARE_STATE_TOPIC,
                                            state_partition_for(key, self.num_partitions))
            info = metadata.brokers.get(leader)
            if leader == cluster.broker_id:
                if op in ("read", "summary"):
                    error, answer = await coordinator.read(key, leader_epoch)
                else:
                    error = await coordinator.write(key, state)
            elif info is not None:
                error, answer = await self._remote(info, key, op, state, leader_epoch)
            else:
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            if error not in _RETRIED or trio.current_time() >= deadline:
                return error, answer
            log.debug("share state %s of %s at broker %d: %s, retrying", op, key, leader,
                      error.name)
            await cluster.wait_for(lambda m, seen=metadata: m is not seen, 0.25)
            await trio.sleep(0.05)

    def _peer(self, info: BrokerInfo) -> PeerClient:
        from kafkette.broker.cluster.peer_client import PeerClient  # cluster mode only

        peer = self._peers.get(info.id)
        if peer is None or (peer.host, peer.port) != (info.host, info.port):
            security = self.broker.peer_security
            assert security is not None, "set in cluster mode"
            cluster = self.broker.cluster
            assert cluster is not None
            peer = PeerClient(info.host, info.port, f"share-persister-{cluster.broker_id}",
                              1024 * 1024, security)
            self._peers[info.id] = peer
        return peer

    async def _remote(
        self, info: BrokerInfo, key: rec.ShareKey, op: str, state: rec.ShareState | None,
        leader_epoch: int,
    ) -> tuple[ErrorCode, rec.ShareState | None]:
        from kafkette.broker.cluster.peer_client import PeerError

        group, topic_id, index = key
        if op == "read":
            api, version = ApiKey.READ_SHARE_GROUP_STATE, READ_VERSION
            part: dict = {"partition": index, "leader_epoch": leader_epoch}
        elif op == "summary":
            api, version = ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, SUMMARY_VERSION
            part = {"partition": index, "leader_epoch": leader_epoch}
        elif state is None:
            api, version = ApiKey.DELETE_SHARE_GROUP_STATE, 0
            part = {"partition": index}
        else:
            api, version = ApiKey.WRITE_SHARE_GROUP_STATE, WRITE_VERSION
            part = {
                "partition": index, "state_epoch": state.state_epoch,
                "leader_epoch": state.leader_epoch, "start_offset": state.start_offset,
                "delivery_complete_count": state.delivery_complete_count,
                "state_batches": [
                    {"first_offset": f, "last_offset": last, "delivery_state": s,
                     "delivery_count": c}
                    for f, last, s, c in state.batches
                ],
            }
        body = {"group_id": group, "topics": [{"topic_id": topic_id, "partitions": [part]}]}
        try:
            with trio.fail_after(_PEER_TIMEOUT_S):
                response = await self._peer(info).request(api, version, body)
        except (PeerError, trio.TooSlowError) as exc:
            log.debug("share coordinator %d not reached: %s", info.id, exc)
            return ErrorCode.NETWORK_EXCEPTION, None
        try:
            answer = response.body["results"][0]["partitions"][0]
        except (KeyError, IndexError):
            return ErrorCode.UNKNOWN_SERVER_ERROR, None
        error = ErrorCode(answer["error_code"])
        if op not in ("read", "summary") or error != ErrorCode.NONE:
            return error, None
        if op == "summary":
            return error, rec.ShareState(
                rec.SNAPSHOT, 0, answer["state_epoch"], answer["leader_epoch"],
                answer["start_offset"], (),
                delivery_complete_count=answer.get("delivery_complete_count", -1),
            )
        return error, rec.ShareState(
            rec.SNAPSHOT, 0, answer["state_epoch"], -1, answer["start_offset"],
            tuple((b["first_offset"], b["last_offset"], b["delivery_state"],
                   b["delivery_count"]) for b in answer["state_batches"]),
        )


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
