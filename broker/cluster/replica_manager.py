"""Replication on one broker: which partitions it leads or follows, and the leader's duties.

The replica manager listens to the cluster metadata (the ZooKeeper snapshot
``ClusterNode`` publishes) and, for every local partition whose replica list
holds this broker, makes it a leader, a follower or neither:

- **Leader** (the state znode names us): the partition's ``leader_epoch`` is
  set, the epoch's start is recorded at the log end offset in the
  leader-epoch cache, and a ``LeaderReplication`` (``isr.py``) tracks the
  followers from their fetches. The leader advances the high watermark, holds
  acks=all produces until it passes their offsets, and changes the ISR itself
  (shrink after ``replica.lag.time.max.ms``, expand when a follower reaches the
  HW) with a conditional write of the state znode in the same leader epoch, as
  Kafka's ZooKeeper-era leaders did.
- **Follower**: handed to the fetcher task of the leader broker
  (``replica_fetcher.py``), which truncates and then fetches.
- **Neither** (no leader, or not a replica): nothing runs for it; requests get
  NOT_LEADER_OR_FOLLOWER.

High watermarks are explicit in cluster mode (``Partition.start_replication``)
and checkpointed to ``replication-offset-checkpoint`` every
``replica.high.watermark.checkpoint.interval.ms`` and at stop.

Everything here runs on the event loop; role changes go through the partition
(``Partition.become_leader`` / ``become_follower``), which holds its appends off
meanwhile, so role changes and appends never interleave.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio
from kazoo.exceptions import KazooException

from kafkette.broker.cluster.isr import LeaderReplication
from kafkette.broker.cluster.replica_fetcher import ReplicaFetcher
from kafkette.broker.partitions import Partition
from kafkette.broker.throttled_log import storage_errors
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import BrokerInfo, ClusterMetadata, PartitionState
    from kafkette.broker.cluster.node import ClusterNode
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.replication")

Key = tuple[str, int]


def _now_ms() -> float:
    return trio.current_time() * 1000


@dataclass(slots=True)
class LeaderState:
    """A partition this broker leads, in one leader epoch."""

    partition: Partition
    replication: LeaderReplication
    state: PartitionState  # the state znode as last known (zk_version for conditional writes)
    # Same number while this broker leads without a break, across epoch bumps that keep
    # it leader (the controller removing a dead follower from the ISR): acks=all waits
    # survive those, not a leadership that went elsewhere and came back.
    tenure: int
    changed: trio.Event = field(default_factory=trio.Event)
    isr_update_pending: bool = False
    # The znode version an ISR write lost a race on: no new attempt until a snapshot
    # brings a newer state (otherwise every follower fetch would retry the same write).
    isr_conflict_version: int = -1

    def notify(self) -> None:
        """Wake acks=all waiters: the HW, the ISR or the leadership changed."""
        self.changed.set()
        self.changed = trio.Event()


@dataclass(slots=True)
class _FetcherTask:
    fetcher: ReplicaFetcher
    scope: trio.CancelScope


class ReplicaManager:
    """Roles of the local replicas and the API the Produce/Fetch/ListOffsets handlers use."""

    def __init__(self, broker: Broker, node: ClusterNode) -> None:
        config = broker.config.cluster
        assert config is not None, "the replica manager runs only in cluster mode"
        self._broker = broker
        self._node = node
        assert broker.peer_security is not None, "set in cluster mode"
        self._peer_security = broker.peer_security
        self.config = config
        self.broker_id = config.broker_id
        self._leading: dict[Key, LeaderState] = {}
        # ZooKeeper expired this broker's session: the controller counts it dead and may have
        # moved its leaderships, so what it leads is in doubt until a snapshot read after it
        # registered again (``session_lost`` / ``registered_again`` / ``possibly_stale``).
        self._fenced = False
        self._unfence_on_snapshot = False
        # While cut off from ZooKeeper: since when (``time.monotonic``: leadership is asked
        # from worker threads too), and for how long the session survives that; past it the
        # session is surely gone, whether or not we heard so yet.
        self._suspended_since: float | None = None
        self._session_timeout_s = 0.0
        self._following: dict[Key, int] = {}  # partition -> leader broker id
        self._fetchers: dict[int, _FetcherTask] = {}
        self._replicated: dict[Key, Partition] = {}  # partitions whose HW is explicit
        self._checkpointed_hws: dict[Key, int] = {}
        self._metadata_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self._tenures = 0

    # --- lifecycle -------------------------------------------------------------------

    async def start(self, nursery: trio.Nursery) -> None:
        """Load checkpointed HWs, start the periodic jobs, follow the metadata."""
        self._nursery = nursery
        data_dir = self._broker.data_dir
        if data_dir is not None:
            self._checkpointed_hws = dict(await trio.to_thread.run_sync(data_dir.high_watermarks))
        nursery.start_soon(self._isr_shrink_loop)
        nursery.start_soon(self._checkpoint_loop)
        self._node.add_listener(self.on_metadata)
        metadata = getattr(self._node, "metadata", None)
        if metadata is not None:
            await self.on_metadata(metadata)

    async def stop(self) -> None:
        """Stop fetching and write the high watermarks a last time (clean shutdown)."""
        for task in self._fetchers.values():
            task.scope.cancel()
        self._fetchers.clear()
        for lead in self._leading.values():
            lead.notify()
        await self.checkpoint_high_watermarks()

    # --- roles -----------------------------------------------------------------------

    async def on_metadata(self, metadata: ClusterMetadata) -> None:
        """Apply one snapshot: every local replica becomes leader, follower or neither.

        Partitions change roles concurrently: a new leader epoch is persisted
        (an fsync) before the partition leads, and fifty partitions of
        ``__consumer_offsets`` must not wait for each other's.
        """
        async with self._metadata_lock:
            unfence = self._unfence_on_snapshot
            seen: set[Key] = set()
            async with trio.open_nursery() as nursery:
                for name, topic in metadata.topics.items():
                    for index, replicas in topic.replicas.items():
                        if self.broker_id not in replicas:
                            continue
                        partition = self._broker.topics.partition(name, index)
                        if partition is None:
                            continue  # the local log is not created yet: a later snapshot
                        key = (name, index)
                        seen.add(key)
                        nursery.start_soon(
                            self._apply_role, metadata, key, partition, tuple(replicas)
                        )
            for key in [*self._leading, *self._following]:
                if key not in seen:
                    await self._become_neither(key)
            for key in [k for k in self._replicated if k not in seen]:
                if self._broker.topics.partition(*key) is None:
                    del self._replicated[key]
            for leader_id in [i for i, t in self._fetchers.items() if not t.fetcher.keys()]:
                self._fetchers.pop(leader_id).scope.cancel()
            if unfence and self._unfence_on_snapshot:
                self._fenced = self._unfence_on_snapshot = False
                log.info("leadership no longer in doubt: the cluster re-read after registering")

    async def _apply_role(
        self,
        metadata: ClusterMetadata,
        key: Key,
        partition: Partition,
        replicas: tuple[int, ...],
    ) -> None:
        try:
            self._ensure_replicated(key, partition)
            state = metadata.states.get(key)
            if state is None or state.leader < 0:
                await self._become_neither(key)
            elif state.leader == self.broker_id:
                await self._become_leader(key, partition, replicas, state)
            elif (leader := metadata.brokers.get(state.leader)) is None:
                await self._become_neither(key)
            else:
                await self._become_follower(key, partition, state, leader)
        except OSError as exc:  # a full or failed disk: one throttled line, retried
            storage_errors.failure("role change of", f"{key[0]}-{key[1]}", exc)
        except Exception:  # a closed log or a bug: this partition only
            log.exception("role change of %s-%d failed", key[0], key[1])

    def _ensure_replicated(self, key: Key, partition: Partition) -> None:
        """Make the HW explicit (from the checkpoint) the first time we see the partition
        (a new ``Partition`` comes with a new log: the topics never wrap one log twice)."""
        if self._replicated.get(key) is partition:
            return
        partition.start_replication(self, self._checkpointed_hws.pop(key, 0))
        self._replicated[key] = partition

    async def _become_leader(
        self, key: Key, partition: Partition, replicas: tuple[int, ...], state: PartitionState
    ) -> None:
        current = self._leading.get(key)
        if (
            current is not None
            and current.partition is partition
            and current.replication.leader_epoch == state.leader_epoch
        ):
            # The same epoch: the ISR we wrote, or replicas changed. A snapshot read
            # before our own ISR write carries an older znode version: ignore it.
            if state.zk_version >= current.state.zk_version:
                current.state = state
                current.replication.set_assignment(replicas, state.isr, _now_ms())
                self._advance_high_watermark(current)
                current.notify()
            return
        self._stop_following(key)

        def install() -> tuple[LeaderState, LeaderState | None, int]:
            # Under the partition's append lock: the log end is where the epoch starts.
            old = self._leading.get(key)
            if old is not None and old.partition is partition:
                tenure = old.tenure
            else:
                self._tenures += 1
                tenure = self._tenures
            leo = partition.log_end_offset
            replication = LeaderReplication(
                self.broker_id,
                replicas,
                state.isr,
                state.leader_epoch,
                leo,
                partition.high_watermark,
                _now_ms(),
            )
            lead = LeaderState(partition, replication, state, tenure)
            self._leading[key] = lead
            partition.on_append = self.on_leader_append
            return lead, old, leo

        lead, old, leo = await partition.become_leader(state.leader_epoch, install)
        if old is not None:
            old.notify()
        log.info(
            "leader of %s-%d in epoch %d (ISR %s, LEO %d, HW %d)",
            key[0],
            key[1],
            state.leader_epoch,
            list(state.isr),
            leo,
            partition.high_watermark,
        )
        self._advance_high_watermark(lead)

    async def _become_follower(
        self, key: Key, partition: Partition, state: PartitionState, leader: BrokerInfo
    ) -> None:
        old = self._leading.pop(key, None)
        partition.on_append = None
        if old is not None or partition.leader_epoch != state.leader_epoch:
            await partition.become_follower(state.leader_epoch)
        if old is not None:
            old.notify()
        previous = self._following.get(key)
        if previous is not None and previous != leader.id:
            self._stop_following(key)
        fetcher = self._fetcher_for(leader)
        if previous != leader.id or old is not None:
            log.info(
                "follower of %s-%d in epoch %d (leader %d, LEO %d)",
                key[0],
                key[1],
                state.leader_epoch,
                leader.id,
                partition.log_end_offset,
            )
        fetcher.assign(partition, state.leader_epoch)
        self._following[key] = leader.id

    async def _become_neither(self, key: Key) -> None:
        old = self._leading.pop(key, None)
        if old is not None:
            old.partition.on_append = None
            old.notify()
            log.info("no longer leader of %s-%d", key[0], key[1])
        self._stop_following(key)

    def _stop_following(self, key: Key) -> None:
        leader_id = self._following.pop(key, None)
        if leader_id is not None and (task := self._fetchers.get(leader_id)) is not None:
            task.fetcher.remove(key)

    def _fetcher_for(self, leader: BrokerInfo) -> ReplicaFetcher:
        task = self._fetchers.get(leader.id)
        if task is not None and task.fetcher.address == (leader.host, leader.port):
            return task.fetcher
        fetcher = ReplicaFetcher(
            leader.id,
            leader.host,
            leader.port,
            self.broker_id,
            self.config,
            self._on_follower_append,
            security=self._peer_security,
        )
        if task is not None:  # the leader moved to another address: start over there
            task.scope.cancel()
            for key in task.fetcher.keys():
                partition = self._broker.topics.partition(*key)
                if partition is not None:
                    fetcher.assign(partition, partition.leader_epoch)
        scope = trio.CancelScope()
        self._fetchers[leader.id] = _FetcherTask(fetcher, scope)
        assert self._nursery is not None, "start() first"
        self._nursery.start_soon(self._run_fetcher, fetcher, scope)
        return fetcher

    async def _run_fetcher(self, fetcher: ReplicaFetcher, scope: trio.CancelScope) -> None:
        with scope:
            await fetcher.run()

    def _on_follower_append(self, partition: Partition) -> None:
        partition.notify_appended()

    # --- what the handlers use ---------------------------------------------------------

    def session_lost(self) -> None:
        """What this broker leads is in doubt until it has re-read the cluster: it keeps
        serving (as Kafka's ZooKeeper-era broker), but a sequence gap is then answered
        NOT_LEADER_OR_FOLLOWER (append.py): seen, a rejoining old leader telling an
        idempotent producer whose later batches went to the new leader
        OUT_OF_ORDER_SEQUENCE_NUMBER, which librdkafka takes as fatal."""
        if not self._fenced:
            log.warning("ZooKeeper session lost: leadership in doubt until the cluster is re-read")
        self._fenced = True
        self._unfence_on_snapshot = False

    def registered_again(self) -> None:
        """Registered with a new session: the next snapshot decides what this broker leads."""
        self._unfence_on_snapshot = True

    def connection_suspended(self, session_timeout_s: float) -> None:
        """Cut off from ZooKeeper: past the session timeout the session is surely gone and the
        controller may have moved these leaderships, heard of it or not (``possibly_stale``);
        before it, nothing is in doubt (the session may live)."""
        if self._suspended_since is None:
            self._suspended_since = time.monotonic()
        self._session_timeout_s = session_timeout_s

    def connection_restored(self) -> None:
        """Connected again. With the same session (ZooKeeper kept it: nothing was moved) the
        timeout's doubt lifts here; with a new one ``session_lost`` came first and holds."""
        self._suspended_since = None

    @property
    def possibly_stale(self) -> bool:
        """Whether what this broker leads may have moved without its knowing (see
        ``session_lost``, ``connection_suspended``)."""
        if self._fenced:
            return True
        since = self._suspended_since
        return since is not None and time.monotonic() - since > self._session_timeout_s

    def leader_partition(
        self, topic: str, index: int, current_leader_epoch: int = -1
    ) -> Partition | ErrorCode:
        """The partition if this broker leads it in the client's epoch; else Kafka's error."""
        partition = self._broker.topics.partition(topic, index)
        if partition is None:
            # A partition of the topic that has no replica here: not the leader (Kafka).
            if self._broker.topics.has_partition(topic, index):
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        key = (topic, index)
        lead = self._leading.get(key)
        leading = lead is not None and lead.partition is partition
        # The epoch is checked where this broker has one (leader or follower, as Kafka);
        # a broker with no replica of the partition just is not its leader.
        if current_leader_epoch >= 0 and (leading or key in self._following):
            if current_leader_epoch < partition.leader_epoch:
                return ErrorCode.FENCED_LEADER_EPOCH
            if current_leader_epoch > partition.leader_epoch:
                return ErrorCode.UNKNOWN_LEADER_EPOCH
        if not leading:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return partition

    def is_leader(self, partition: Partition, leader_epoch: int) -> bool:
        """Still the leader in ``leader_epoch``? (checked under the append lock)."""
        lead = self._leading.get((partition.topic, partition.index))
        return (
            lead is not None
            and lead.partition is partition
            and lead.replication.leader_epoch == leader_epoch
        )

    def leader_tenure(self, partition: Partition) -> int | None:
        """The leadership tenure of ``partition`` now (None if this broker does not lead
        it): taken under the append lock at append time and given to ``wait_for_acks``,
        so an ack never counts a leadership that went away and came back meanwhile."""
        lead = self._leading.get((partition.topic, partition.index))
        if lead is None or lead.partition is not partition:
            return None
        return lead.tenure

    def min_insync_replicas(self, topic: str) -> int:
        raw = self._broker.topics.topic_configs(topic).get("min.insync.replicas")
        return int(raw) if raw is not None else self.config.min_insync_replicas

    def check_min_isr(self, partition: Partition) -> ErrorCode:
        """NOT_ENOUGH_REPLICAS when the ISR is smaller than min.insync.replicas (acks=all)."""
        lead = self._leading.get((partition.topic, partition.index))
        if lead is None or lead.partition is not partition:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if len(lead.replication.isr) < self.min_insync_replicas(partition.topic):
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    async def wait_for_acks(
        self, partition: Partition, last_offset: int, timeout_s: float, tenure: int | None
    ) -> ErrorCode:
        """Hold an acks=all answer until the HW passes ``last_offset`` (Kafka's
        DelayedProduce): NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank
        below min.insync.replicas meanwhile, NOT_LEADER_OR_FOLLOWER if leadership
        moved, REQUEST_TIMED_OUT when ``timeout_s`` runs out.

        ``tenure`` is ``leader_tenure`` taken when the records were appended (under the
        append lock): if leadership left and came back since, the records may have been
        truncated and others written at the same offsets, so the answer is
        NOT_LEADER_OR_FOLLOWER even though this broker leads again."""
        key = (partition.topic, partition.index)
        if tenure is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        with trio.move_on_after(max(timeout_s, 0)):
            while True:
                lead = self._leading.get(key)
                if lead is None or lead.partition is not partition or lead.tenure != tenure:
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER
                if lead.replication.high_watermark > last_offset:
                    if len(lead.replication.isr) < self.min_insync_replicas(partition.topic):
                        return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                    return ErrorCode.NONE
                await lead.changed.wait()
        return ErrorCode.REQUEST_TIMED_OUT

    def on_leader_append(self, partition: Partition) -> None:
        """``Partition.on_append`` while leading: after any append the HW may move now
        (at once when the leader is alone in the ISR)."""
        lead = self._leading.get((partition.topic, partition.index))
        if lead is not None and lead.partition is partition:
            self._advance_high_watermark(lead)

    def record_follower_fetch(
        self, partition: Partition, replica_id: int, fetch_offset: int
    ) -> None:
        """A follower's Fetch: its LEO, the HW, and whether it rejoins the ISR."""
        lead = self._leading.get((partition.topic, partition.index))
        if lead is None or lead.partition is not partition:
            return
        replication = lead.replication
        replication.record_fetch(replica_id, fetch_offset, partition.log_end_offset, _now_ms())
        self._advance_high_watermark(lead)
        if not lead.isr_update_pending:
            joining = replication.expand_candidates()
            if joining:
                self._change_isr(lead, (*replication.isr, *joining), "expanding", joining)

    # --- HW and ISR ----------------------------------------------------------------------

    def _advance_high_watermark(self, lead: LeaderState) -> None:
        partition = lead.partition
        if lead.replication.advance_high_watermark(partition.log_end_offset):
            partition.set_high_watermark(lead.replication.high_watermark)
            partition.notify_high_watermark()  # consumers long-polling below it
            lead.notify()

    def _change_isr(
        self,
        lead: LeaderState,
        new_isr: Iterable[int],
        verb: str,
        joining: tuple[int, ...] = (),
    ) -> None:
        """Start the ISR write. ``joining`` (an expansion) counts for the HW from now
        until ZooKeeper has answered (KIP-497's maximal ISR): ZooKeeper may list them as
        soon as the write is sent, and then any of them may be elected."""
        assert self._nursery is not None, "start() first"
        if lead.state.zk_version == lead.isr_conflict_version:
            return
        lead.isr_update_pending = True
        lead.replication.pending_joiners = joining
        self._nursery.start_soon(self._write_isr, lead, tuple(new_isr), verb)

    async def _write_isr(self, lead: LeaderState, new_isr: tuple[int, ...], verb: str) -> None:
        """Write the ISR change, conditional on the znode version it was decided on.

        A conflict (BadVersion) waits for the newer snapshot that must come. ZooKeeper
        unreachable decides nothing (the write may even have been applied), so the same
        write is retried every ``replica.fetch.backoff.ms`` while this broker leads in
        the same state, the joiners of an expansion still counting for the HW; it stops
        when a snapshot brings a newer state (ours, or the controller's) or another epoch.
        """
        partition = lead.partition
        key = (partition.topic, partition.index)
        base = lead.state
        try:
            log.info(
                "%s ISR of %s-%d from %s to %s (epoch %d)",
                verb.capitalize(),
                key[0],
                key[1],
                list(lead.replication.isr),
                list(new_isr),
                lead.replication.leader_epoch,
            )
            failures = 0
            while True:
                try:
                    written = await self._node.admin.update_isr(key[0], key[1], base, list(new_isr))
                    break
                except KazooException as exc:
                    if failures == 0:
                        log.warning(
                            "ISR update of %s-%d not written (%r): retrying every %d ms",
                            key[0],
                            key[1],
                            exc,
                            self.config.replica_fetch_backoff_ms,
                        )
                    failures += 1
                await trio.sleep(self.config.replica_fetch_backoff_ms / 1000)
                if self._leading.get(key) is not lead or lead.state is not base:
                    return  # a newer snapshot decides
            if written is None:
                log.info("ISR update of %s-%d lost a race: waiting for new metadata", *key)
                lead.isr_conflict_version = base.zk_version
                return
            if self._leading.get(key) is lead:
                lead.state = written
                lead.replication.isr = tuple(written.isr)
                lead.replication.pending_joiners = ()
                self._advance_high_watermark(lead)
                lead.notify()
        except Exception as exc:  # not ZooKeeper's answer: the next fetch or check retries
            log.warning("ISR update of %s-%d failed: %s", key[0], key[1], exc)
        finally:
            # Written (and applied above) or not written: the joiners count no more.
            lead.replication.pending_joiners = ()
            lead.isr_update_pending = False

    async def _isr_shrink_loop(self) -> None:
        """Kafka's isr-expiration task: every replica.lag.time.max.ms / 2."""
        lag = self.config.replica_lag_time_max_ms
        while True:
            await trio.sleep(lag / 2 / 1000)
            now = _now_ms()
            for lead in list(self._leading.values()):
                if lead.isr_update_pending:
                    continue
                out = lead.replication.shrink_candidates(now, lag)
                if out:
                    keep = [r for r in lead.replication.isr if r not in out]
                    self._change_isr(lead, keep, "shrinking")

    # --- HW checkpoint -----------------------------------------------------------------

    async def checkpoint_high_watermarks(self) -> None:
        data_dir = self._broker.data_dir
        if data_dir is None:
            return
        hws = {
            key: partition.high_watermark
            for key, partition in self._replicated.items()
            if not partition.is_closed
        }
        try:
            await trio.to_thread.run_sync(data_dir.checkpoint_high_watermarks, hws)
        except OSError as exc:
            log.warning("writing replication-offset-checkpoint failed: %s", exc)

    async def _checkpoint_loop(self) -> None:
        interval = self.config.replica_high_watermark_checkpoint_interval_ms / 1000
        while True:
            await trio.sleep(interval)
            await self.checkpoint_high_watermarks()
