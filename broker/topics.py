"""The broker's topics: names, partitions and topic configs over the data dir.

Admin changes (create, delete, add partitions, alter configs) are serialized
by one ``trio.Lock`` and run their file work in a worker thread. Lookups are
plain dict reads on the event loop (the data dir's tables are lock-free too, so
a lookup never waits for a change in progress). Errors are ``TopicError`` with
the Kafka error code to answer with.

In cluster mode (``zookeeper.connect``) ZooKeeper is the truth: the admin
changes are written there (``broker/cluster/zk_admin.py``) and each waits,
bounded by the request's timeout, until this broker's snapshot shows it (and,
for new partitions, their leaders), so a client that asks again sees it. The
local logs follow every snapshot (``follow_cluster``): topics the cluster has
get local logs with ZooKeeper's topic id and configs, but only for the
partitions this broker is a replica of (as Kafka: a broker hosts its replicas,
nothing else); topics it no longer has are deleted locally. A partition whose
replica a reassignment removes is dropped by ``broker/cluster/stray_replicas.py``
once the replica has stopped (``drop_local_partition``).

Size limits are KRaft's, checked before any file is made: a controller
operation writes at most ``MAX_RECORDS_PER_USER_OP`` metadata records (one
per topic, per partition and per config), and one CreateTopics request asks
for at most ``MAX_PARTITIONS_PER_REQUEST`` partitions in all. Both are
refused with POLICY_VIOLATION and Kafka's own messages.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

import trio

from kafkette.broker.config import TOPIC_CONFIGS, BrokerConfig, ConfigError, check_value
from kafkette.broker.internal_topics import (
    INTERNAL_TOPICS,
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafkette.broker.partitions import Partition
from kafkette.broker.partitions.partition import while_appends_wait_all
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.log import TopicMetadata
from kafkette.log.config import LogConfig, log_config_for
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.cluster.node import ClusterNode
    from kafkette.log import DataDir


log = logging.getLogger("kafkette.topics")


MAX_TOPIC_NAME = 249
# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP and
# ReplicationControlManager.MAX_PARTITIONS_PER_BATCH.
MAX_RECORDS_PER_USER_OP = 10_000
MAX_PARTITIONS_PER_REQUEST = 10_000
EXCESSIVE_BATCH_MESSAGE = "Unable to perform excessively large batch operation."
EXCESSIVE_PARTITIONS_MESSAGE = "Excessively large number of partitions per request."
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
# How long an admin change waits for the cluster to show it when the request gives no timeout.
DEFAULT_ADMIN_TIMEOUT_S = 30.0


class TopicError(Exception):
    """A refused topic operation, with the Kafka error code to answer."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def topic_name_problem(name: str | None) -> str | None:
    """Kafka's topic name rules; None if ``name`` is legal."""
    if not name:
        return "topic name is empty"
    if name in (".", ".."):
        return f"topic name cannot be {name!r}"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL_NAME.match(name):
        return (
            f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def validate_topic_configs(configs: Mapping[str, str | None], broker: BrokerConfig) -> LogConfig:
    """Check topic-level names and values; raise TopicError(INVALID_CONFIG)."""
    for name, value in configs.items():
        entry = TOPIC_CONFIGS.get(name)
        if entry is None:
            raise TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            continue
        try:
            check_value(name, entry[1], value)
        except ConfigError as exc:
            raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    try:
        return log_config_for({k: v for k, v in configs.items() if v is not None}, broker.log)
    except ValueError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None


class TopicRegistry:
    """Every topic and partition this broker serves."""

    def __init__(self, data_dir: DataDir, config: BrokerConfig) -> None:
        self.data_dir = data_dir
        self.config = config
        self._admin_lock = trio.Lock()
        self.cluster: ClusterNode | None = None  # set by the broker in cluster mode
        # topic -> hosted partition index -> Partition (all of them in single-node mode)
        self._partitions: dict[str, dict[int, Partition]] = {}
        # topic id -> name, kept with every create/delete here (by_id is a dict read).
        self._names_by_id: dict[uuid.UUID, str] = {
            meta.topic_id: name for name, meta in data_dir.topics.items()
        }
        for name, meta in data_dir.topics.items():
            self._partitions[name] = {
                i: Partition(name, i, data_dir.partition(name, i)) for i in meta.hosted_indexes()
            }

    # Lookups -----------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return list(self._partitions)

    @property
    def leadership_moves(self) -> bool:
        """Cluster mode: partitions have replicas on other brokers, which fetch from
        their leader, and leadership moves between brokers. False on a single node,
        which leads every partition it has for ever (in epoch 0)."""
        return self.cluster is not None and self.cluster.replicas is not None

    def current_leader(self, name: str, index: int) -> tuple[int, int] | None:
        """(live leader id or -1, leader epoch) of a partition as this broker's cluster
        snapshot has it: the hint a client sent to the wrong broker gets (KIP-951).
        None when the snapshot has no state for it, and always on a single node (which
        never sends a client elsewhere)."""
        if self.cluster is None:
            return None
        metadata = self.cluster.metadata
        state = metadata.state(name, index)
        if state is None:
            return None
        return metadata.leader_of(name, index), state.leader_epoch

    def metadata(self, name: str) -> TopicMetadata | None:
        return self.data_dir.topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        """The local topic with this id (one dict read), None if there is none."""
        meta = self.data_dir.topics.get(self._names_by_id.get(topic_id, ""))
        return meta if meta is not None and meta.topic_id == topic_id else None

    def _forget_id(self, name: str, meta: TopicMetadata | None) -> None:
        """Drop the deleted topic's id from the index: one pop by its id (``meta`` is
        the topic's metadata read before the delete), not a scan of every id."""
        if meta is not None and self._names_by_id.get(meta.topic_id) == name:
            del self._names_by_id[meta.topic_id]

    def partitions(self, name: str) -> list[Partition]:
        """The topic's partitions hosted here, by index (all of them on a single node)."""
        parts = self._partitions.get(name)
        return [] if parts is None else [parts[i] for i in sorted(parts)]

    def partition(self, name: str, index: int) -> Partition | None:
        """The partition if hosted here; None if unknown or (cluster mode) another
        broker's only: ``has_partition`` tells the two apart."""
        parts = self._partitions.get(name)
        return None if parts is None else parts.get(index)

    def serving(
        self, name: str, index: int, current_leader_epoch: int = -1
    ) -> Partition | ErrorCode:
        """The partition this broker serves a client's request on, or the error to answer.

        On a single node: every partition hosted here (UNKNOWN_TOPIC_OR_PARTITION
        otherwise), in epoch 0 (a ``current_leader_epoch`` above it is
        UNKNOWN_LEADER_EPOCH; -1 checks none). In a cluster: only one this broker
        leads, in the client's epoch (``ReplicaManager.leader_partition``: Kafka's
        NOT_LEADER_OR_FOLLOWER and fencing errors otherwise).
        """
        if self.cluster is not None and self.cluster.replicas is not None:
            return self.cluster.replicas.leader_partition(name, index, current_leader_epoch)
        parts = self._partitions.get(name)
        partition = None if parts is None else parts.get(index)
        if partition is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if current_leader_epoch > partition.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return partition

    def has_partition(self, name: str, index: int) -> bool:
        """Does the topic have partition ``index``, hosted here or not?"""
        meta = self.data_dir.topics.get(name)
        return meta is not None and 0 <= index < meta.partitions

    def all_partitions(self) -> list[Partition]:
        return [p for parts in self._partitions.values() for p in parts.values()]

    def topic_configs(self, name: str) -> Mapping[str, str]:
        meta = self.metadata(name)
        return {} if meta is None else meta.configs

    def max_message_bytes(self, name: str) -> int:
        raw = self.topic_configs(name).get("max.message.bytes")
        return int(raw) if raw is not None else self.config.message_max_bytes

    # Changes -----------------------------------------------------------------

    async def create(
        self,
        name: str,
        partitions: int,
        configs: Mapping[str, str | None],
        *,
        validate_only: bool = False,
        replication_factor: int = -1,
        assignment: Mapping[int, list[int]] | None = None,
        timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S,
    ) -> TopicMetadata | None:
        """Create a topic. ``replication_factor`` -1 is the default one;
        ``assignment`` (partition -> brokers) replaces both (cluster mode: a single
        node checks those before calling)."""
        problem = topic_name_problem(name)
        if problem:
            raise TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if partitions <= 0:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0"
            )
        validate_topic_configs(configs, self.config)
        clean = {k: v for k, v in configs.items() if v is not None}
        if 1 + partitions + len(clean) > MAX_RECORDS_PER_USER_OP:
            raise TopicError(ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
        if self.cluster is not None:
            return await self._create_in_cluster(
                self.cluster, name, partitions, clean, validate_only=validate_only,
                replication_factor=replication_factor, assignment=assignment,
                timeout_s=timeout_s,
            )
        async with self._admin_lock:
            if name in self._partitions:
                raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists")
            if _collides(name, self._partitions):
                raise TopicError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"topic '{name}' collides with an existing topic"
                    " ('.' and '_' are the same in metric names)",
                )
            if validate_only:
                return None
            with _storage_errors_as_topic_error("creating topic", name):
                meta = await trio.to_thread.run_sync(
                    lambda: self.data_dir.create_topic(name, partitions, clean)
                )
            self._partitions[name] = {
                i: Partition(name, i, self.data_dir.partition(name, i)) for i in range(partitions)
            }
            self._names_by_id[meta.topic_id] = name
            return meta

    async def delete(self, name: str, *, timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S) -> None:
        if not self.config.delete_topic_enable:
            raise TopicError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
        if self.cluster is not None:
            await self._delete_in_cluster(self.cluster, name, timeout_s)
            return
        async with self._admin_lock:
            if name not in self._partitions:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic '{name}'")
            meta = self.data_dir.topics.get(name)
            with _storage_errors_as_topic_error("deleting topic", name):
                # With no append in progress (as Kafka's Partition.delete takes the lock
                # its appends hold): one in flight is written and answered first, one
                # queued behind finds the log closed and answers Partition.closed_error.
                await while_appends_wait_all(
                    self._partitions[name].values(), lambda: self.data_dir.delete_topic(name)
                )
            self._forget_id(name, meta)
            parts = self._partitions.pop(name)
            for part in parts.values():
                part.notify_appended()  # wake fetchers: they will see the topic gone

    async def add_partitions(
        self,
        name: str,
        total: int,
        *,
        validate_only: bool = False,
        assignments: list[list[int]] | None = None,
        timeout_s: float = DEFAULT_ADMIN_TIMEOUT_S,
    ) -> None:
        if self.cluster is not None:
            meta = self.metadata(name)
            current = 0 if meta is None else meta.partitions
            if total - current > MAX_RECORDS_PER_USER_OP:
                raise TopicError(ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
            await self.cluster.admin.add_partitions(
                name, total, assignments, validate_only=validate_only
            )
            if not validate_only:
                await self._wait_for_leaders(self.cluster, name, total, timeout_s)
            return
        async with self._admin_lock:
            parts = self._partitions.get(name)
            if parts is None:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic '{name}'")
            if total <= len(parts):
                raise TopicError(
                    ErrorCode.INVALID_PARTITIONS,
                    f"topic currently has {len(parts)} partitions, which is higher than or equal"
                    f" to the requested {total}",
                )
            if total - len(parts) > MAX_RECORDS_PER_USER_OP:
                raise TopicError(ErrorCode.POLICY_VIOLATION, EXCESSIVE_BATCH_MESSAGE)
            if validate_only:
                return
            with _storage_errors_as_topic_error("adding partitions to", name):
                await trio.to_thread.run_sync(self.data_dir.add_partitions, name, total)
            for i in range(len(parts), total):
                parts[i] = Partition(name, i, self.data_dir.partition(name, i))

    async def set_configs(
        self, name: str, configs: Mapping[str, str], *, validate_only: bool
    ) -> None:
        """Replace a topic's explicit configs (AlterConfigs semantics)."""
        validate_topic_configs(configs, self.config)
        if self.cluster is not None:
            if name not in self.cluster.metadata.topics:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic '{name}'")
            if validate_only:
                return
            wanted = dict(configs)
            await self.cluster.admin.set_topic_configs(name, wanted)
            # Kafka answers once ZooKeeper has it; waiting for this broker's own view too
            # lets the client read its write here at once (bounded: others follow anyway).
            await self.cluster.wait_for(
                lambda m: name not in m.topics or m.topics[name].configs == wanted, 5.0
            )
            return
        async with self._admin_lock:
            if name not in self._partitions:
                raise TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic '{name}'")
            if validate_only:
                return
            # The data dir persists the configs and hands the new LogConfig to each log.
            with _storage_errors_as_topic_error("altering configs of", name):
                await trio.to_thread.run_sync(
                    self.data_dir.set_topic_configs, name, dict(configs)
                )

    # Cluster mode ----------------------------------------------------------------

    async def _create_in_cluster(
        self,
        node: ClusterNode,
        name: str,
        partitions: int,
        configs: dict[str, str],
        *,
        validate_only: bool,
        replication_factor: int,
        assignment: Mapping[int, list[int]] | None,
        timeout_s: float,
    ) -> TopicMetadata | None:
        metadata = node.metadata
        if name in metadata.topics:
            raise TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if _collides(name, metadata.topics):
            raise TopicError(
                ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"topic '{name}' collides with an existing topic"
                " ('.' and '_' are the same in metric names)",
            )
        if replication_factor == -1 and not assignment:
            replication_factor = await self._default_replication_factor(node, name)
            if name == TRANSACTION_STATE_TOPIC:
                min_isr = min(node.config.transaction_state_log_min_isr, replication_factor)
                configs = {"min.insync.replicas": str(min_isr), **configs}
            elif name == SHARE_STATE_TOPIC:
                min_isr = min(node.config.share_coordinator_state_topic_min_isr,
                              replication_factor)
                configs = {"min.insync.replicas": str(min_isr), **configs}
        replicas = await node.admin.plan_topic(name, partitions, replication_factor, assignment)
        if validate_only:
            return None
        topic_id = await node.admin.create_topic(name, replicas, configs)
        if timeout_s > 0:
            await self._wait_for_leaders(node, name, len(replicas), timeout_s)
        meta = self.metadata(name)
        if meta is not None and meta.topic_id == topic_id:
            return meta
        return TopicMetadata(name, topic_id, len(replicas), configs)

    async def _default_replication_factor(self, node: ClusterNode, name: str) -> int:
        """Internal topics: Kafka's offsets.topic.replication.factor,
        transaction.state.log.replication.factor and
        share.coordinator.state.topic.replication.factor, capped at the live brokers (Kafka
        refuses instead; docs/cluster.md). Others: default.replication.factor."""
        if name not in INTERNAL_TOPICS:
            return node.config.default_replication_factor
        live = max(1, len(await node.admin.live_brokers()))
        if name == OFFSETS_TOPIC:
            return min(node.config.offsets_topic_replication_factor, live)
        if name == TRANSACTION_STATE_TOPIC:
            return min(node.config.transaction_state_log_replication_factor, live)
        if name == SHARE_STATE_TOPIC:
            return min(node.config.share_coordinator_state_topic_replication_factor, live)
        return node.config.default_replication_factor

    async def _wait_for_leaders(
        self, node: ClusterNode, name: str, partitions: int, timeout_s: float
    ) -> None:
        def ready(metadata: ClusterMetadata) -> bool:
            topic = metadata.topics.get(name)
            return (
                topic is not None
                and len(topic.replicas) >= partitions
                and all(metadata.leader_of(name, p) >= 0 for p in topic.replicas)
            )

        if not await node.wait_for(ready, timeout_s):
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"topic '{name}' was written to ZooKeeper but its partitions had no leaders"
                f" within {timeout_s:g}s",
            )

    async def _delete_in_cluster(self, node: ClusterNode, name: str, timeout_s: float) -> None:
        if name not in node.metadata.topics:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )
        await node.admin.delete_topic(name)
        if timeout_s > 0 and not await node.wait_for(
            lambda m: name not in m.topics, timeout_s
        ):
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT,
                f"deletion of topic '{name}' asked; not done within {timeout_s:g}s",
            )

    def stale_topics(self, metadata: ClusterMetadata) -> set[str]:
        """Local topics the cluster no longer has, or has again under a new topic id:
        their local logs are about to go (``follow_cluster``)."""
        stale = set()
        for name, meta in self.data_dir.topics.items():
            topic = metadata.topics.get(name)
            if topic is None or topic.topic_id != meta.topic_id:
                stale.add(name)
        return stale

    async def follow_cluster(self, metadata: ClusterMetadata) -> None:
        """Make the local logs what the cluster says: create, grow, reconfigure, delete."""
        async with self._admin_lock:
            for name, topic in metadata.topics.items():
                configs = _usable_configs(name, topic.configs, self.config)
                local = self.data_dir.topics.get(name)
                try:
                    if local is not None and local.topic_id != topic.topic_id:
                        log.info("topic %s was re-created in the cluster: new local logs", name)
                        await self._delete_local(name)
                        local = None
                    hosted = self._replicas_here(topic)
                    if local is None:
                        await self._create_local(name, len(topic.replicas), configs, topic, hosted)
                        continue
                    if local.partitions < len(topic.replicas):
                        await self._grow_local(name, len(topic.replicas), hosted)
                    for index in sorted(hosted):
                        if name in self._partitions and index not in self._partitions[name]:
                            await self._host_local(name, index)
                    if dict(local.configs) != configs:
                        await trio.to_thread.run_sync(
                            self.data_dir.set_topic_configs, name, configs
                        )
                except (OSError, ValueError) as exc:
                    storage_errors.failure("following the cluster for topic", name, exc)
            for name in [n for n in self._partitions if n not in metadata.topics]:
                log.info("topic %s is gone from the cluster: deleting its local logs", name)
                try:
                    await self._delete_local(name)
                except OSError as exc:
                    storage_errors.failure("deleting topic", name, exc)

    def _replicas_here(self, topic) -> set[int]:
        """The partitions of a snapshot's topic this broker is a replica of (during a
        reassignment: of the adding and removing replicas alike, as Kafka)."""
        assert self.cluster is not None
        me = self.cluster.broker_id
        return {p for p, replicas in topic.replicas.items() if me in replicas}

    async def _create_local(
        self, name: str, partitions: int, configs: dict[str, str], topic, hosted: set[int]
    ) -> None:
        await trio.to_thread.run_sync(
            lambda: self.data_dir.create_topic(
                name, partitions, configs, topic.topic_id, partitions_hosted=hosted
            )
        )
        meta = self.data_dir.topics[name]
        self._names_by_id[meta.topic_id] = name
        self._partitions[name] = {
            i: Partition(name, i, self.data_dir.partition(name, i)) for i in meta.hosted_indexes()
        }

    async def _grow_local(self, name: str, total: int, hosted: set[int]) -> None:
        parts = self._partitions[name]
        await trio.to_thread.run_sync(self.data_dir.add_partitions, name, total, hosted)
        for i in self.data_dir.topics[name].hosted_indexes():
            if i not in parts:
                parts[i] = Partition(name, i, self.data_dir.partition(name, i))

    async def _host_local(self, name: str, index: int) -> None:
        """A reassignment made this broker a replica: the partition gets a new, empty log."""
        log_ = await trio.to_thread.run_sync(self.data_dir.host_partition, name, index)
        self._partitions[name][index] = Partition(name, index, log_)
        log.info("%s-%d: now a replica here: local log created", name, index)

    async def drop_local_partition(self, name: str, index: int) -> bool:
        """No longer a replica (reassignment): forget the partition, then delete its
        directory (Kafka's StopReplica with delete). False if it was not hosted here."""
        async with self._admin_lock:
            parts = self._partitions.get(name)
            partition = None if parts is None else parts.pop(index, None)
            if partition is None:
                return False
            try:
                await partition.while_appends_wait(
                    lambda: self.data_dir.drop_partition(name, index)
                )
            except BaseException:
                if index in self.data_dir.topics[name].hosted_indexes():
                    parts[index] = partition  # still there (topics.json unchanged): keep it
                raise
            partition.notify_appended()
            return True

    async def _delete_local(self, name: str) -> None:
        meta = self.data_dir.topics.get(name)
        await while_appends_wait_all(
            self._partitions.get(name, {}).values(), lambda: self.data_dir.delete_topic(name)
        )
        self._forget_id(name, meta)
        for part in self._partitions.pop(name, {}).values():
            part.notify_appended()


_refused_configs: dict[str, Mapping[str, str]] = {}  # said once per topic and content


def _usable_configs(name: str, configs: Mapping[str, str], broker: BrokerConfig) -> dict[str, str]:
    """The configs of a topic as ZooKeeper has them, without what this broker cannot
    apply (a name it does not know, written by another tool): left out, said once."""
    usable = {k: v for k, v in configs.items() if k in TOPIC_CONFIGS}
    problem = None
    if len(usable) != len(configs):
        problem = f"ignoring configs {sorted(set(configs) - set(usable))}"
    try:
        validate_topic_configs(usable, broker)
    except TopicError as exc:
        problem, usable = f"configs {usable} not applied locally: {exc.message}", {}
    if problem is not None and _refused_configs.get(name) != configs:
        _refused_configs[name] = dict(configs)
        log.warning("topic %s: %s", name, problem)
    return usable


def _collides(name: str, existing: Mapping[str, object]) -> bool:
    folded = name.replace(".", "_")
    return any(other.replace(".", "_") == folded for other in existing)


@contextmanager
def _storage_errors_as_topic_error(operation: str, name: str) -> Iterator[None]:
    """A full disk or I/O error in an admin change: KAFKA_STORAGE_ERROR, one log line."""
    try:
        yield
    except OSError as exc:
        storage_errors.failure(operation, name, exc)
        raise TopicError(
            ErrorCode.KAFKA_STORAGE_ERROR, f"{operation} '{name}' failed: {describe_error(exc)}"
        ) from exc
