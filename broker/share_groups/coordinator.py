"""The share coordinator: share partitions' state where ``__share_group_state`` is led.

Kafka's share coordinator (KIP-932) keeps the latest state of every share partition
whose key hashes to a ``__share_group_state`` partition its broker leads, and serves the
inter-broker state APIs (Initialize/Read/Write/DeleteShareGroupState,
ReadShareGroupStateSummary) from it; the data partitions' leaders (their
``SharePartitionManager``) read a share partition's state when they start it and write
it after every change (``persister.py``). This is that coordinator, on the event loop.

In a cluster it follows the group coordinator's pattern (``groups/coordinator.py``): a
listener on the cluster metadata loads a state partition's keys from its log when this
broker becomes its leader (COORDINATOR_LOAD_IN_PROGRESS for them meanwhile) and forgets
them when it stops leading it; keys of partitions led elsewhere are NOT_COORDINATOR.
A write appends one ShareSnapshot (kafkette's writers send their whole persistent window,
so a write replaces the share partition's state) with ``append_committed`` and answers
once it is committed; one lock per state partition keeps appends and the cached state
in the same order. Fencing as Kafka's: a write with an older leader epoch than the
state's is FENCED_LEADER_EPOCH, an older state epoch FENCED_STATE_EPOCH.

On a single node there is no cache: the state APIs read the key's partition from the
log (the share partition manager writes there directly, ``persister.py``).

Differences from Kafka: a write to a key never initialized is accepted (kafkette's
writers start share partitions without InitializeShareGroupState), and a read of one
answers NONE with start offset -1 and state epoch 0 (Kafka: INVALID_REQUEST), which is
what Kafka's persister turns an uninitialized partition into.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from kafkette.broker.internal_topics import (
    COORDINATOR_WRITE_ERRORS,
    SHARE_STATE_TOPIC,
    append_committed,
)
from kafkette.broker.share_groups import state_records as rec
from kafkette.broker.share_groups.persister import (
    _read_states,
    state_partition_for,
    topic_configs,
)
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import Record, build_batch

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.share")


UNINITIALIZED = rec.ShareState(rec.SNAPSHOT, 0, 0, -1, -1, ())


@dataclass(slots=True)
class _Owned:
    """A state partition this broker leads: ``token`` tells one leadership from the
    next, ``states`` is filled once loaded (None while loading)."""

    token: int
    states: dict[rec.ShareKey, rec.ShareState] | None = None
    lock: trio.Lock = field(default_factory=trio.Lock)
    # The highest leader epoch a reader announced per key (Kafka records it; here it
    # fences older writers while this broker coordinates the key).
    read_epochs: dict[rec.ShareKey, int] = field(default_factory=dict)


class ShareCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._owned: dict[int, _Owned] | None = None  # None: a single node
        self._tokens = 0
        self._nursery: trio.Nursery | None = None
        self._single_lock = trio.Lock()
        configured = broker.config.explicit.get("share.coordinator.state.topic.num.partitions")
        self._configured_partitions = int(configured) if configured else 50
        self.write_timeout_s = 5.0

    @property
    def num_partitions(self) -> int:
        cluster = self.broker.cluster
        if cluster is not None:
            topic = cluster.metadata.topics.get(SHARE_STATE_TOPIC)
            if topic is not None:
                return len(topic.replicas)
        existing = self.broker.topics.metadata(SHARE_STATE_TOPIC)
        return existing.partitions if existing is not None else self._configured_partitions

    def partition_for(self, key: rec.ShareKey) -> int:
        return state_partition_for(key, self.num_partitions)

    # Cluster mode: state partitions move with leadership ---------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        cluster = self.broker.cluster
        if cluster is None:
            return
        self._owned = {}
        self._nursery = nursery
        cluster.add_listener(self._on_metadata)
        await self._on_metadata(cluster.metadata)

    def _led(self, metadata: ClusterMetadata) -> set[int]:
        from kafkette.broker.partitions import Partition

        topic = metadata.topics.get(SHARE_STATE_TOPIC)
        cluster = self.broker.cluster
        if topic is None or cluster is None:
            return set()
        led = set()
        for index in topic.replicas:
            state = metadata.states.get((SHARE_STATE_TOPIC, index))
            if state is None or state.leader != cluster.broker_id:
                continue
            if isinstance(self.broker.topics.serving(SHARE_STATE_TOPIC, index), Partition):
                led.add(index)
        return led

    async def _on_metadata(self, metadata: ClusterMetadata) -> None:
        if self._owned is None:
            return
        led = self._led(metadata)
        for index in [i for i in self._owned if i not in led]:
            del self._owned[index]
            log.info("forgot the share states of %s-%d: no longer its leader",
                     SHARE_STATE_TOPIC, index)
        for index in sorted(led - self._owned.keys()):
            self._tokens += 1
            self._owned[index] = _Owned(self._tokens)
            assert self._nursery is not None
            try:
                self._nursery.start_soon(self._load, index, self._tokens)
            except RuntimeError:  # stopping
                return

    async def _load(self, index: int, token: int) -> None:
        partition = self.broker.topics.partition(SHARE_STATE_TOPIC, index)
        try:
            states = ({} if partition is None
                      else await trio.to_thread.run_sync(_read_states, [partition]))
        except Exception:  # a failed disk: its keys stay loading (retried by clients)
            log.exception("cannot load %s-%d", SHARE_STATE_TOPIC, index)
            return
        assert self._owned is not None
        owned = self._owned.get(index)
        if owned is None or owned.token != token:
            return
        owned.states = states
        log.info("loaded the state of %d share partitions from %s-%d", len(states),
                 SHARE_STATE_TOPIC, index)

    def _owner(self, key: rec.ShareKey) -> tuple[ErrorCode, _Owned | None]:
        assert self._owned is not None
        owned = self._owned.get(self.partition_for(key))
        if owned is None:
            return ErrorCode.NOT_COORDINATOR, None
        if owned.states is None:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        return ErrorCode.NONE, owned

    # The state APIs ------------------------------------------------------------------

    async def read(
        self, key: rec.ShareKey, leader_epoch: int = -1
    ) -> tuple[ErrorCode, rec.ShareState]:
        """The key's last state (UNINITIALIZED if none), or NOT_COORDINATOR /
        COORDINATOR_LOAD_IN_PROGRESS, or FENCED_LEADER_EPOCH for a reader whose data
        partition leader epoch is older than one seen. A newer epoch fences the writers
        of older ones from then on (the data partition's leadership moved)."""
        if self._owned is None:
            partition = self.broker.topics.partition(SHARE_STATE_TOPIC, self.partition_for(key))
            if partition is None:
                return ErrorCode.NONE, UNINITIALIZED
            states = await trio.to_thread.run_sync(_read_states, [partition])
            return ErrorCode.NONE, states.get(key, UNINITIALIZED)
        error, owned = self._owner(key)
        if owned is None:
            return error, UNINITIALIZED
        assert owned.states is not None
        state = owned.states.get(key, UNINITIALIZED)
        if leader_epoch >= 0:
            if leader_epoch < self._fence_epoch(owned, key):
                return ErrorCode.FENCED_LEADER_EPOCH, UNINITIALIZED
            owned.read_epochs[key] = leader_epoch
        return ErrorCode.NONE, state

    @staticmethod
    def _fence_epoch(owned: _Owned, key: rec.ShareKey) -> int:
        current = owned.states.get(key) if owned.states is not None else None
        return max(owned.read_epochs.get(key, -1),
                   current.leader_epoch if current is not None else -1)

    async def initialize(self, key: rec.ShareKey, state_epoch: int, start_offset: int
                         ) -> ErrorCode:
        """InitializeShareGroupState: start the key over at ``start_offset`` with nothing
        in flight, at ``state_epoch`` (FENCED_STATE_EPOCH if older than the state's)."""
        if self._owned is not None:
            error, owned = self._owner(key)
            if owned is None:
                return error
            assert owned.states is not None
            current = owned.states.get(key)
            if current is not None and state_epoch < current.state_epoch:
                return ErrorCode.FENCED_STATE_EPOCH
        state = rec.ShareState(rec.SNAPSHOT, 0, state_epoch, -1, start_offset, ())
        return await self.write(key, state, fence=False)

    async def write(
        self, key: rec.ShareKey, state: rec.ShareState | None, *, fence: bool = True
    ) -> ErrorCode:
        """Replace the key's state by ``state`` (None: delete it), committed before the
        answer. ``state``'s snapshot epoch and create time are the coordinator's."""
        index = self.partition_for(key)
        if self._owned is None:
            async with self._single_lock:
                return await self._append(index, key, state)
        error, owned = self._owner(key)
        if owned is None:
            return error
        async with owned.lock:
            assert self._owned is not None
            if self._owned.get(index) is not owned or owned.states is None:
                return ErrorCode.NOT_COORDINATOR
            current = owned.states.get(key)
            if state is not None:
                if fence and 0 <= state.leader_epoch < self._fence_epoch(owned, key):
                    return ErrorCode.FENCED_LEADER_EPOCH
                if fence and current is not None and state.state_epoch < current.state_epoch:
                    return ErrorCode.FENCED_STATE_EPOCH
                now = int(time.time() * 1000)
                state = rec.ShareState(
                    rec.SNAPSHOT,
                    (current.snapshot_epoch + 1) if current is not None else 0,
                    state.state_epoch, state.leader_epoch, state.start_offset, state.batches,
                    current.create_ms if current is not None else now, now,
                    state.delivery_complete_count,
                )
            elif current is None:
                return ErrorCode.NONE
            error = await self._append(index, key, state)
            if error == ErrorCode.NONE and self._owned.get(index) is owned:
                if state is None:
                    owned.states.pop(key, None)
                else:
                    owned.states[key] = state
            return error

    async def _append(self, index: int, key: rec.ShareKey, state: rec.ShareState | None
                      ) -> ErrorCode:
        from kafkette.broker.internal_topics import create_if_missing
        from kafkette.broker.topics import TopicError

        partition: Partition | None
        try:
            await create_if_missing(self.broker.topics, SHARE_STATE_TOPIC, self.num_partitions,
                                    topic_configs(self.broker))
        except TopicError as exc:
            log.warning("cannot create %s: %s", SHARE_STATE_TOPIC, exc.message)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = self.broker.topics.partition(SHARE_STATE_TOPIC, index)
        if partition is None:
            return ErrorCode.NOT_COORDINATOR
        value = None if state is None else rec.encode_snapshot(state)
        record = Record(0, 0, rec.encode_key(rec.SNAPSHOT, key), value)
        batch = bytearray(build_batch([record], base_timestamp=int(time.time() * 1000)))
        try:
            error = await append_committed(partition, batch, self.write_timeout_s)
        except Exception as exc:  # storage failure
            log.warning("writing %s-%d failed: %s", SHARE_STATE_TOPIC, index, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return COORDINATOR_WRITE_ERRORS.get(error, error)
