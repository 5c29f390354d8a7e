"""Topic administration in cluster mode: the changes are written to ZooKeeper.

What any broker receives (CreateTopics, DeleteTopics, CreatePartitions,
AlterConfigs) becomes znode writes, as Kafka's ZooKeeper-era AdminZkClient
made them: configs in ``/config/topics/<t>`` (written before the topic, so a
broker that sees the topic sees its configs), the assignment in
``/brokers/topics/<t>``, a deletion request in ``/admin/delete_topics/<t>``
(the controller deletes). Brokers learn of the change through their watches;
waiting until the local snapshot shows it is the caller's business
(``TopicRegistry``). Refusals are ``TopicError`` with Kafka's codes and
messages.

``update_isr`` is the partition leader's ISR change: a conditional write of
the state znode with the same leader and leader epoch (Kafka's ZooKeeper-era
leader bumped only the znode version); None when it lost a race.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.assignment import (
    AssignmentError,
    assign_replicas,
    check_explicit_assignment,
)
from kafkette.broker.cluster.metadata import PartitionState
from kafkette.broker.topics import TopicError
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.admin")


def _assignment_error(exc: AssignmentError) -> TopicError:
    code = (
        ErrorCode.INVALID_PARTITIONS
        if exc.kind == "partitions"
        else ErrorCode.INVALID_REPLICATION_FACTOR
    )
    return TopicError(code, str(exc))


class ZkAdmin:
    """Admin writes of one broker. ``metadata()`` gives the current snapshot."""

    def __init__(self, session: ZkSession, metadata) -> None:
        self.session = session
        self._metadata = metadata

    async def _run(self, fn, *args):
        """``session.run``; ZooKeeper unreachable (connection lost, session expired) is
        REQUEST_TIMED_OUT: nothing is known to be done, the client retries (Kafka's
        ZooKeeper-era brokers held such requests until ZooKeeper returned or the
        client gave up)."""
        try:
            return await self.session.run(fn, *args)
        except KazooException as exc:
            log.warning("ZooKeeper unavailable for an admin request: %r", exc)
            raise TopicError(
                ErrorCode.REQUEST_TIMED_OUT, f"ZooKeeper unavailable ({type(exc).__name__})"
            ) from None

    @property
    def metadata(self) -> ClusterMetadata:
        return self._metadata()

    async def live_brokers(self) -> list[int]:
        """The registered brokers as ZooKeeper has them now (Kafka's AdminZkClient reads
        them there too: a snapshot may lag a broker that just registered)."""
        children = await self._run(lambda c: c.get_children(znodes.BROKER_IDS))
        return sorted(int(child) for child in children)

    async def plan_topic(
        self,
        name: str,
        partitions: int,
        replication_factor: int,
        assignment: Mapping[int, Sequence[int]] | None,
    ) -> dict[int, tuple[int, ...]]:
        """The replicas of a new topic, or TopicError (Kafka's codes and messages)."""
        live = await self.live_brokers()
        if assignment:
            problem = check_explicit_assignment(dict(assignment), live)
            if problem:
                raise TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, problem)
            return {p: tuple(r) for p, r in assignment.items()}
        try:
            return assign_replicas(live, partitions, replication_factor)
        except AssignmentError as exc:
            raise _assignment_error(exc) from None

    async def create_topic(
        self,
        name: str,
        replicas: dict[int, tuple[int, ...]],
        configs: Mapping[str, str],
    ) -> uuid.UUID:
        """Write the topic (configs first); TOPIC_ALREADY_EXISTS if it is there."""
        topic_id = uuid.uuid4()

        def write(client: KazooClient) -> None:
            if client.exists(znodes.delete_topic_path(name)):
                raise TopicError(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion."
                )
            if client.exists(znodes.topic_path(name)):
                raise TopicError(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
                )
            set_or_create(client, znodes.topic_config_path(name),
                          znodes.encode_topic_config(dict(configs)))
            try:
                client.create(znodes.topic_path(name), znodes.encode_topic(topic_id, replicas))
            except NodeExistsError:
                raise TopicError(
                    ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
                ) from None

        await self._run(write)
        return topic_id

    async def delete_topic(self, name: str) -> None:
        """Ask the controller to delete the topic (a repeated request is fine)."""

        def write(client: KazooClient) -> None:
            if not client.exists(znodes.topic_path(name)):
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            try:
                client.create(znodes.delete_topic_path(name))
            except NodeExistsError:
                pass

        await self._run(write)

    async def add_partitions(
        self,
        name: str,
        total: int,
        assignments: Sequence[Sequence[int]] | None,
        *,
        validate_only: bool = False,
    ) -> None:
        """Grow ``name`` to ``total`` partitions: Kafka's checks, then a write
        conditional on the assignment's znode version."""

        def write(client: KazooClient) -> None:
            try:
                data, stat = client.get(znodes.topic_path(name))
            except NoNodeError:
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                ) from None
            current = znodes.decode_topic(data)
            if current.adding or current.removing:
                raise TopicError(
                    ErrorCode.REASSIGNMENT_IN_PROGRESS,
                    f"A partition reassignment is in progress for topic '{name}'.",
                )
            existing = len(current.replicas)
            if total < existing:
                raise TopicError(
                    ErrorCode.INVALID_PARTITIONS,
                    f"Topic currently has {existing} partitions, which is higher than"
                    f" the requested {total}.",
                )
            if total == existing:
                raise TopicError(
                    ErrorCode.INVALID_PARTITIONS,
                    f"Topic already has {existing} partitions.",
                )
            live = sorted(int(c) for c in client.get_children(znodes.BROKER_IDS))
            added = self._new_replicas(current.replicas, total, assignments, live)
            if validate_only:
                return
            assert current.topic_id is not None
            grown = {**current.replicas, **added}
            try:
                client.set(
                    znodes.topic_path(name), znodes.encode_topic(current.topic_id, grown),
                    version=stat.version,
                )
            except BadVersionError:
                raise TopicError(
                    ErrorCode.REASSIGNMENT_IN_PROGRESS,
                    f"The assignment of topic '{name}' changed meanwhile; retry.",
                ) from None

        await self._run(write)

    def _new_replicas(
        self,
        replicas: Mapping[int, tuple[int, ...]],
        total: int,
        assignments: Sequence[Sequence[int]] | None,
        live: list[int],
    ) -> dict[int, tuple[int, ...]]:
        existing = len(replicas)
        rf = len(replicas[0])
        if assignments is not None:
            if len(assignments) != total - existing:
                raise TopicError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Increasing the number of partitions by {total - existing} but"
                    f" {len(assignments)} assignments provided.",
                )
            added = {existing + i: tuple(a) for i, a in enumerate(assignments)}
            for p, brokers in added.items():
                if len(brokers) != rf:
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Inconsistent replication factor between partitions, partition 0 has"
                        f" {rf} while partitions [{p}] have replication factors"
                        f" [{len(brokers)}], respectively.",
                    )
                if len(set(brokers)) != len(brokers):
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Duplicate brokers not allowed in replica assignment:"
                        f" {', '.join(map(str, brokers))} for partition id {p}.",
                    )
                unknown = [b for b in brokers if b not in live]
                if unknown:
                    raise TopicError(
                        ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Unknown broker(s) in replica assignment:"
                        f" {', '.join(map(str, unknown))}.",
                    )
            return added
        first = replicas[0][0]
        start = next((i for i, b in enumerate(live) if b >= first), 0)
        try:
            return assign_replicas(
                live, total - existing, rf, fixed_start_index=start,
                start_partition_id=existing,
            )
        except AssignmentError as exc:
            raise _assignment_error(exc) from None

    async def set_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        """Replace the topic's configs in ``/config/topics/<t>``: every broker applies them."""

        def write(client: KazooClient) -> None:
            if not client.exists(znodes.topic_path(name)):
                raise TopicError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            set_or_create(client, znodes.topic_config_path(name),
                          znodes.encode_topic_config(dict(configs)))

        await self._run(write)

    async def update_isr(
        self, topic: str, partition: int, state: PartitionState, new_isr: Sequence[int]
    ) -> PartitionState | None:
        """The leader's ISR change, conditional on ``state.zk_version``; None on a
        conflict (the controller or another write moved the state: act on the next
        snapshot, which will carry a newer version). Raises ``KazooException`` when
        ZooKeeper cannot be reached: nothing was decided, so the caller retries later
        (no newer version would ever come to wake it)."""
        isr = tuple(new_isr)
        data = znodes.encode_state(state.leader, state.leader_epoch, isr, state.controller_epoch)

        def write(client: KazooClient) -> PartitionState | None:
            try:
                stat = client.set(
                    znodes.state_path(topic, partition), data, version=state.zk_version
                )
            except (BadVersionError, NoNodeError):
                return None
            return PartitionState(
                state.leader, state.leader_epoch, isr, state.controller_epoch, stat.version
            )

        result = await self.session.run(write)  # KazooException: the caller retries and logs
        if result is not None:
            log.info("%s-%d: isr %s -> %s", topic, partition, list(state.isr), list(isr))
        return result


def set_or_create(client: KazooClient, path: str, data: bytes) -> None:
    """Worker thread: the znode holds ``data``, made (with its parents) if missing."""
    try:
        client.set(path, data)
    except NoNodeError:
        try:
            client.create(path, data, makepath=True)
        except NodeExistsError:
            client.set(path, data)
