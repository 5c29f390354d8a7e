"""The controller: one broker at a time elects partition leaders and deletes topics.

Election is Kafka's ZooKeeper-era one: the broker that creates the ephemeral
``/controller`` znode is the controller, and the same ZooKeeper transaction
bumps ``/controller_epoch`` (conditional on its version), so two brokers can
never both take the same epoch. Every later write of the controller is a
transaction that checks ``/controller_epoch`` is still at the version it
wrote: a controller that lost its session (and so its place) can no longer
change anything.

The controller works from the same snapshots every broker has
(``MetadataWatcher``): on each one it makes the partition states agree with
the live brokers (see ``plan_partition``), executes topic deletions asked in
``/admin/delete_topics``, and gives topics written without a topic id one.
Every write is conditional on the znode version it read; a write that loses
a race is dropped, and the snapshot that follows (the watch fired) decides
again. When ``/controller`` disappears every broker races to create it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

from kafkette.broker.clock import now_ms
from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.metadata import NO_LEADER, ClusterMetadata, PartitionState
from kafkette.broker.cluster.reassignment import (
    Assignment,
    Completion,
    ReassignmentRefused,
    cancel,
    check_target,
    plan_completion,
    reassign_to,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.controller")


@dataclass(frozen=True, slots=True)
class StateChange:
    """A partition state to write: ``current`` None means create the znode."""

    topic: str
    partition: int
    current: PartitionState | None
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]


def plan_partition(
    topic: str,
    partition: int,
    replicas: tuple[int, ...],
    state: PartitionState | None,
    live: set[int] | dict,
    unclean: bool,
) -> StateChange | None:
    """The change Kafka's controller would make to one partition, or None (pure).

    - no state yet: leader = first live replica, ISR = the live replicas, epoch 0
      (nothing while no replica is alive);
    - leader gone (or none): the first replica in assignment order that is alive
      and in the ISR leads, ISR = its live members, epoch + 1; with none, the
      partition goes offline (leader -1, epoch + 1, ISR keeps the last leader so it
      can lead again when it returns) unless unclean.leader.election.enable lets the
      first live replica lead alone (records only the old ISR had are lost);
    - leader alive but some ISR members dead (or no longer replicas, after a
      reassignment): they leave the ISR, epoch + 1.
    """
    if state is None:
        alive = tuple(r for r in replicas if r in live)
        if not alive:
            return None
        return StateChange(topic, partition, None, alive[0], 0, alive)
    alive_isr = tuple(r for r in state.isr if r in live and r in replicas)
    if state.leader == NO_LEADER or state.leader not in live:
        candidates = [r for r in replicas if r in live and r in state.isr]
        if candidates:
            return StateChange(
                topic, partition, state, candidates[0], state.leader_epoch + 1, alive_isr
            )
        if unclean:
            alive = [r for r in replicas if r in live]
            if alive:
                log.warning(
                    "unclean leader election for %s-%d: %d leads without the ISR %s",
                    topic, partition, alive[0], list(state.isr),
                )
                return StateChange(
                    topic, partition, state, alive[0], state.leader_epoch + 1, (alive[0],)
                )
        if state.leader == NO_LEADER:
            return None  # already offline: wait for an ISR member
        isr = (state.leader,) if state.leader in state.isr else state.isr
        return StateChange(topic, partition, state, NO_LEADER, state.leader_epoch + 1, isr)
    if alive_isr != state.isr:
        return StateChange(
            topic, partition, state, state.leader, state.leader_epoch + 1, alive_isr
        )
    return None


def plan(
    metadata: ClusterMetadata, unclean_default: bool, bounced: frozenset[int] = frozenset()
) -> list[StateChange]:
    """Every partition's change for this snapshot.

    ``bounced`` brokers (registered again since the last step, see
    ``bounced_brokers``) count as dead for this step: they lose their
    leaderships and leave the ISRs, as Kafka's controller handles a broker whose
    epoch changed (a failure, then a start-up). They come back as followers and
    rejoin the ISR by catching up; the next snapshot (the writes fire it) sees
    them alive.
    """
    changes = []
    live = set(metadata.brokers) - bounced
    for name, topic in metadata.topics.items():
        if name in metadata.pending_deletions:
            continue
        raw = topic.configs.get("unclean.leader.election.enable")
        unclean = raw.strip().lower() == "true" if raw is not None else unclean_default
        for p, replicas in topic.replicas.items():
            change = plan_partition(
                name, p, replicas, metadata.states.get((name, p)), live, unclean
            )
            if change is not None:
                changes.append(change)
    return changes


def bounced_brokers(
    known: dict[int, int], metadata: ClusterMetadata
) -> frozenset[int]:
    """Brokers whose registration is newer than the one ``known`` (id -> broker epoch)
    last saw: they restarted, however quickly, and lost whatever they held in memory."""
    return frozenset(
        b for b, info in metadata.brokers.items()
        if b in known and known[b] != info.epoch
    )


def plan_preferred_leaders(metadata: ClusterMetadata, percentage: int) -> list[StateChange]:
    """Kafka's auto leader rebalance (``checkAndTriggerAutoLeaderRebalance``) for one
    snapshot: for each live broker, if more than ``percentage`` % of the partitions it
    is the preferred (first) replica of are led by another broker, each of those whose
    preferred replica is in the ISR gets it back as leader (leader epoch + 1, ISR kept).
    """
    preferred: dict[int, list[tuple[str, int]]] = {}
    for name, topic in metadata.topics.items():
        if name in metadata.pending_deletions:
            continue
        for p, replicas in topic.replicas.items():
            if replicas and not topic.reassigning(p):
                preferred.setdefault(replicas[0], []).append((name, p))
    changes = []
    for broker, partitions in sorted(preferred.items()):
        if broker not in metadata.brokers:
            continue
        elsewhere = [
            key for key in partitions
            if (state := metadata.states.get(key)) is not None and state.leader != broker
        ]
        if len(elsewhere) * 100 <= percentage * len(partitions):
            continue
        for name, p in elsewhere:
            state = metadata.states[(name, p)]
            if broker in state.isr and state.leader in metadata.brokers:
                changes.append(
                    StateChange(name, p, state, broker, state.leader_epoch + 1, state.isr)
                )
    return changes


class Fenced(Exception):
    """``/controller_epoch`` moved on: another broker is the controller now."""


class Controller:
    """Runs on every broker; acts only while this broker holds ``/controller``."""

    def __init__(
        self,
        session: ZkSession,
        broker_id: int,
        unclean_default: bool,
        imbalance_percentage: int = 10,
    ) -> None:
        self.session = session
        self.broker_id = broker_id
        self.unclean_default = unclean_default
        self.imbalance_percentage = imbalance_percentage
        self.active = False
        self.retired = False  # a broker shutting down never races for /controller again
        self.epoch = 0
        self._epoch_version = -1
        self._latest: ClusterMetadata | None = None
        self._wake = trio.Event()
        self._broker_epochs: dict[int, int] = {}  # as of this controller's last step

    def offer(self, metadata: ClusterMetadata) -> None:
        """A new snapshot (listener; never blocks)."""
        self._latest = metadata
        self._wake.set()

    def session_lost(self) -> None:
        """The session that held ``/controller`` expired: no longer the controller."""
        if self.active:
            log.warning("ZooKeeper session lost: resigning as controller (epoch %d)", self.epoch)
        self.active = False

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            metadata = self._latest
            if metadata is None:
                continue
            try:
                await self._step(metadata)
            except Fenced:
                log.info("controller epoch %d fenced by a newer controller: resigning", self.epoch)
                self.active = False
            except Exception as exc:  # ZooKeeper away: the next snapshot tries again
                log.warning("controller step failed: %r", exc)
                await trio.sleep(1.0)
                self._wake.set()

    async def rebalance_leaders(self, interval_s: float) -> None:
        """``auto.leader.rebalance.enable``: every ``leader.imbalance.check.interval.seconds``
        the controller moves leadership back to preferred replicas (see
        ``plan_preferred_leaders``)."""
        while True:
            await trio.sleep(interval_s)
            metadata = self._latest
            if not self.active or self.retired or metadata is None:
                continue
            if self.broker_id not in metadata.brokers:
                continue
            try:
                await self.session.run(self._rebalance, metadata)
            except Fenced:
                self.active = False
            except Exception as exc:  # ZooKeeper away: the next round tries again
                log.warning("preferred leader election failed: %r", exc)

    async def apply_changes(self, changes: list[StateChange]) -> list[StateChange]:
        """Write ``changes`` as the controller (ElectLeaders); the ones written. Nothing
        when this broker is not (or no longer) the controller."""
        if not self.active or self.retired:
            return []

        def write(client: KazooClient) -> list[StateChange]:
            return [c for c in changes if self._apply(client, c)]

        try:
            return await self.session.run(write)
        except Fenced:
            self.active = False
            return []

    def _rebalance(self, client: KazooClient, metadata: ClusterMetadata) -> None:
        # A broker registered again since the last step is not handed leaderships before
        # that step has moved it out of the ISRs (it may have lost an unflushed tail).
        bounced = bounced_brokers(self._broker_epochs, metadata)
        for change in plan_preferred_leaders(metadata, self.imbalance_percentage):
            if change.leader in bounced:
                continue
            log.info("preferred replica %d leads %s-%d again", change.leader, change.topic,
                     change.partition)
            self._apply(client, change)

    async def _step(self, metadata: ClusterMetadata) -> None:
        if self.retired:
            self.active = False
            return
        if self.active and metadata.controller_id not in (NO_LEADER, self.broker_id):
            log.info("broker %d is the controller now: resigning", metadata.controller_id)
            self.active = False
        if not self.active and metadata.controller_id == NO_LEADER:
            await self.elect()
        if not self.active or self.broker_id not in metadata.brokers:
            return
        await self.session.run(self._duties, metadata)

    async def elect(self) -> None:
        """Race for ``/controller`` (it is free, as far as this broker knows)."""
        if self.retired:
            return
        won = await self.session.run(self._try_elect)
        if won:
            self._broker_epochs = {}  # a new term: registrations seen before prove nothing
            self.active = True
            log.info("broker %d is the controller (controller epoch %d)", self.broker_id,
                     self.epoch)

    # Worker thread ----------------------------------------------------------------

    def _try_elect(self, client: KazooClient) -> bool:
        """Kafka's registerControllerAndIncrementControllerEpoch, in one transaction."""
        for _ in range(5):
            try:
                data, stat = client.get(znodes.CONTROLLER_EPOCH)
                epoch, version = znodes.decode_controller_epoch(data), stat.version
            except NoNodeError:
                try:
                    client.create(znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(0))
                except NodeExistsError:
                    pass
                continue
            txn = client.transaction()
            txn.create(
                znodes.CONTROLLER, znodes.encode_controller(self.broker_id, now_ms()),
                ephemeral=True,
            )
            txn.set_data(
                znodes.CONTROLLER_EPOCH, znodes.encode_controller_epoch(epoch + 1), version=version
            )
            results = txn.commit()
            if not any(isinstance(r, Exception) for r in results):
                self.epoch, self._epoch_version = epoch + 1, results[1].version
                return True
            if isinstance(results[0], NodeExistsError):
                return self._already_mine(client)
            # the epoch moved under us: read it again
        return False

    def _already_mine(self, client: KazooClient) -> bool:
        """``/controller`` exists: ours only if this session made it (a retried election)."""
        try:
            data, stat = client.get(znodes.CONTROLLER)
        except NoNodeError:
            return False
        if znodes.decode_controller(data) != self.broker_id:
            return False
        if stat.ephemeralOwner != self.session.session_id:
            return False
        epoch_data, epoch_stat = client.get(znodes.CONTROLLER_EPOCH)
        self.epoch = znodes.decode_controller_epoch(epoch_data)
        self._epoch_version = epoch_stat.version
        return True

    def _fenced_commit(self, client: KazooClient, ops) -> bool:
        """Commit ``ops(txn)`` after a check of our controller epoch; False if a
        conditional op lost its race; Fenced if the epoch moved."""
        txn = client.transaction()
        txn.check(znodes.CONTROLLER_EPOCH, self._epoch_version)
        ops(txn)
        results = txn.commit()
        if isinstance(results[0], Exception):
            if isinstance(results[0], BadVersionError | NoNodeError):
                raise Fenced()
            return False
        return not any(isinstance(r, Exception) for r in results)

    def _duties(self, client: KazooClient, metadata: ClusterMetadata) -> None:
        self._delete_topics(client, metadata)
        self._add_topic_ids(client, metadata)
        bounced = bounced_brokers(self._broker_epochs, metadata)
        if bounced:
            log.info("brokers %s registered again since the last step: their"
                     " leaderships move and they rejoin as followers", sorted(bounced))
        unsettled: set[int] = set()
        changed = set()
        for change in plan(metadata, self.unclean_default, bounced):
            changed.add((change.topic, change.partition))
            if not self._apply(client, change) and change.current is not None:
                # Lost a race: a bounced broker stays "bounced" until its move is written.
                unsettled.update(bounced & {change.current.leader, *change.current.isr})
        self._broker_epochs = {
            b: self._broker_epochs[b] if b in unsettled else info.epoch
            for b, info in metadata.brokers.items()
        }
        self._complete_reassignments(client, metadata, changed)

    # Reassignments (KIP-455; the rules are in reassignment.py) ---------------------

    async def alter_reassignments(
        self,
        requests: dict[tuple[str, int], tuple[int, ...] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        """Start (a target) or cancel (None) reassignments: each partition's result.
        NOT_CONTROLLER for every partition when this broker is not the controller."""
        if not self.active or self.retired:
            return dict.fromkeys(requests, (ErrorCode.NOT_CONTROLLER, None))
        try:
            return await self.session.run(
                self._alter_reassignments, requests, allow_replication_factor_change
            )
        except Fenced:
            self.active = False
            return dict.fromkeys(requests, (ErrorCode.NOT_CONTROLLER, None))
        except KazooException as exc:  # ZooKeeper away: nothing known to be written
            log.warning("reassignment request not written, ZooKeeper unavailable: %r", exc)
            return dict.fromkeys(
                requests, (ErrorCode.REQUEST_TIMED_OUT, f"ZooKeeper unavailable ({exc!r})")
            )

    def _alter_reassignments(
        self,
        client: KazooClient,
        requests: dict[tuple[str, int], tuple[int, ...] | None],
        allow_rf_change: bool,
    ) -> dict[tuple[str, int], tuple[ErrorCode, str | None]]:
        live = {int(c) for c in client.get_children(znodes.BROKER_IDS)}
        results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        by_topic: dict[str, dict[int, tuple[int, ...] | None]] = {}
        for (topic, p), target in requests.items():
            by_topic.setdefault(topic, {})[p] = target
        for topic, wanted in by_topic.items():
            for _ in range(5):  # the assignment moved under us (CreatePartitions): again
                outcome = self._alter_topic(client, topic, wanted, live, allow_rf_change)
                if outcome is not None:
                    break
            else:
                outcome = {
                    p: (ErrorCode.REASSIGNMENT_IN_PROGRESS, "The assignment kept changing.")
                    for p in wanted
                }
            results.update({(topic, p): r for p, r in outcome.items()})
        return results

    def _alter_topic(
        self,
        client: KazooClient,
        topic: str,
        wanted: dict[int, tuple[int, ...] | None],
        live: set[int],
        allow_rf_change: bool,
    ) -> dict[int, tuple[ErrorCode, str | None]] | None:
        """One topic's requests in one conditional write; None when it lost a race."""
        unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        try:
            data, stat = client.get(znodes.topic_path(topic))
        except NoNodeError:
            return dict.fromkeys(wanted, unknown)
        doc = znodes.decode_topic(data)
        if doc.topic_id is None or client.exists(znodes.delete_topic_path(topic)):
            return dict.fromkeys(wanted, unknown)
        replicas, adding, removing = dict(doc.replicas), dict(doc.adding), dict(doc.removing)
        results: dict[int, tuple[ErrorCode, str | None]] = {}
        for p, target in wanted.items():
            if p not in replicas:
                results[p] = unknown
                continue
            current = Assignment(replicas[p], adding.get(p, ()), removing.get(p, ()))
            if target is None:
                if not current.moving:
                    results[p] = (
                        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                        f"No reassignment in progress for partition {topic}-{p}.",
                    )
                    continue
                new = cancel(current)
            else:
                try:
                    check_target(current, target, live, allow_rf_change)
                except ReassignmentRefused as refused:
                    results[p] = (refused.code, refused.message)
                    continue
                new = reassign_to(current, target)
            replicas[p], adding[p], removing[p] = new.replicas, new.adding, new.removing
            results[p] = (ErrorCode.NONE, None)
            log.info(
                "reassignment of %s-%d: %s (replicas %s, adding %s, removing %s)", topic, p,
                "cancelled" if target is None else f"to {list(target)}",
                list(new.replicas), list(new.adding), list(new.removing),
            )
        if not any(code == ErrorCode.NONE for code, _ in results.values()):
            return results
        encoded = znodes.encode_topic(doc.topic_id, replicas, adding, removing)
        path, version = znodes.topic_path(topic), stat.version
        if not self._fenced_commit(
            client, lambda txn: txn.set_data(path, encoded, version=version)
        ):
            return None
        return results

    def _complete_reassignments(
        self, client: KazooClient, metadata: ClusterMetadata, skip: set[tuple[str, int]]
    ) -> None:
        """Every moving partition whose target replicas are all in the ISR completes:
        the partition state and the topic's assignment in one transaction."""
        for name, topic in metadata.topics.items():
            if name in metadata.pending_deletions or not (topic.adding or topic.removing):
                continue
            done = [
                c for p in sorted(topic.replicas)
                if (name, p) not in skip
                and (c := plan_completion(topic, p, metadata.states.get((name, p)),
                                          metadata.brokers)) is not None
            ]
            if done:
                self._complete(client, topic, done)

    def _complete(self, client: KazooClient, topic, done: list[Completion]) -> None:
        replicas, adding, removing = (
            dict(topic.replicas), dict(topic.adding), dict(topic.removing)
        )
        for c in done:
            replicas[c.partition] = c.replicas
            adding.pop(c.partition, None)
            removing.pop(c.partition, None)
        encoded = znodes.encode_topic(topic.topic_id, replicas, adding, removing)

        def ops(txn) -> None:
            for c in done:
                txn.set_data(
                    znodes.state_path(c.topic, c.partition),
                    znodes.encode_state(c.leader, c.leader_epoch, c.isr, self.epoch),
                    version=c.current.zk_version,
                )
            txn.set_data(znodes.topic_path(topic.name), encoded, version=topic.zk_version)

        if self._fenced_commit(client, ops):
            for c in done:
                log.info(
                    "reassignment of %s-%d completed: replicas %s, leader %d, leader epoch %d,"
                    " isr %s", c.topic, c.partition, list(c.replicas), c.leader,
                    c.leader_epoch, list(c.isr),
                )

    def _apply(self, client: KazooClient, change: StateChange) -> bool:
        data = znodes.encode_state(change.leader, change.leader_epoch, change.isr, self.epoch)
        path = znodes.state_path(change.topic, change.partition)
        if change.current is None:
            client.ensure_path(znodes.partition_path(change.topic, change.partition))
            done = self._fenced_commit(client, lambda txn: txn.create(path, data))
        else:
            version = change.current.zk_version
            done = self._fenced_commit(
                client, lambda txn: txn.set_data(path, data, version=version)
            )
        if done:
            log.info(
                "%s-%d: leader %d, leader epoch %d, isr %s", change.topic, change.partition,
                change.leader, change.leader_epoch, list(change.isr),
            )
        return done

    def _delete_topics(self, client: KazooClient, metadata: ClusterMetadata) -> None:
        for topic in sorted(metadata.pending_deletions):
            if topic in metadata.topics or client.exists(znodes.topic_path(topic)):
                # Configs first, then the assignment: brokers drop the topic when it goes.
                try:
                    client.delete(znodes.topic_config_path(topic))
                except NoNodeError:
                    pass
                try:
                    client.delete(znodes.topic_path(topic), recursive=True)
                except NoNodeError:
                    pass
                log.info("deleted topic %s", topic)
            try:
                client.delete(znodes.delete_topic_path(topic))
            except NoNodeError:
                pass

    def _add_topic_ids(self, client: KazooClient, metadata: ClusterMetadata) -> None:
        """Topics written without an id (by an old tool) get one, as Kafka 2.8+ does: the
        id the brokers know it by when it had one (its logs stay), else a new one."""
        for topic in client.get_children(znodes.BROKER_TOPICS):
            if topic in metadata.topics and topic not in metadata.ids_to_restore:
                continue
            try:
                data, stat = client.get(znodes.topic_path(topic))
            except NoNodeError:
                continue
            assignment = znodes.decode_topic(data)
            if assignment.topic_id is not None:
                continue
            known = metadata.topics.get(topic)
            topic_id = known.topic_id if known is not None else uuid.uuid4()
            new = znodes.encode_topic(
                topic_id, assignment.replicas, assignment.adding, assignment.removing
            )
            try:
                client.set(znodes.topic_path(topic), new, version=stat.version)
            except (BadVersionError, NoNodeError):
                pass
