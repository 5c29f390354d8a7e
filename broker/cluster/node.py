"""This broker as a member of the cluster: session, registration, snapshots, controller.

``ClusterNode.connect`` (before any log is opened) and ``start`` bring the
broker into the cluster in Kafka's order: connect to ZooKeeper (creating the
chroot and Kafka's top-level znodes), take the cluster id from ``/cluster/id``
(creating it if this is the first broker), then, with the logs open, read the
whole cluster once and make the local logs follow it
(topics in ZooKeeper get local logs, with ZooKeeper's topic id and configs;
local topics ZooKeeper no longer has are deleted), register
``/brokers/ids/<id>``, then run the metadata watcher and the controller
election. A stale registration of the same id (this broker killed a moment
ago: its session has not expired yet) is waited for up to
``zookeeper.session.timeout.ms``; an id held by a live broker stops the
start with Kafka's message.

Each snapshot is first applied to the local logs, then handed to the
listeners (the replica manager, the controller) in order, then published
(``metadata``, what the handlers answer from), on the trio loop.

Stopping: ``controlled_shutdown`` (SIGTERM, while still serving) hands the
leaderships over; ``stop`` ends the session. See docs/cluster.md.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from kafkette.broker.clock import now_ms
from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.controller import Controller
from kafkette.broker.cluster.metadata import EMPTY, ClusterMetadata
from kafkette.broker.cluster.metadata_watcher import BROKERS, CONTROLLER, MetadataWatcher
from kafkette.broker.cluster.producer_id_blocks import ZkProducerIdAllocator
from kafkette.broker.cluster.zk_admin import ZkAdmin
from kafkette.broker.cluster.zk_session import LOST, SUSPENDED, ZkSession, ZkUnavailable
from kafkette.broker.identity import META_FILE, new_cluster_id
from kafkette.log.checkpoint import atomic_write

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafkette.broker.cluster.config import ClusterConfig
    from kafkette.broker.cluster.replica_manager import ReplicaManager
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.cluster")

Listener = Callable[[ClusterMetadata], Awaitable[None]]

# How long a stopping broker waits for its leaderships to move (Kafka retries its
# ControlledShutdown request controlled.shutdown.max.retries=3 times).
CONTROLLED_SHUTDOWN_TIMEOUT_S = 15.0


class ClusterStartError(Exception):
    """The broker cannot join the cluster; the message is one line for the operator."""


class ClusterNode:
    """One broker's view of, and part in, the cluster."""

    def __init__(self, broker: Broker) -> None:
        config = broker.config.cluster
        assert config is not None
        self.broker = broker
        self.config: ClusterConfig = config
        self.broker_id = config.broker_id
        self.session = ZkSession(
            config.zookeeper_connect, config.session_timeout_s, config.connection_timeout_s
        )
        self.metadata: ClusterMetadata = EMPTY
        self.admin = ZkAdmin(self.session, lambda: self.metadata)
        self.controller = Controller(
            self.session, self.broker_id, config.unclean_leader_election_enable,
            config.leader_imbalance_per_broker_percentage,
        )
        # Replication (helper ``replica``'s ReplicaManager): the roles of the local replicas
        # and the leader's duties; the Produce/Fetch/ListOffsets handlers use it.
        self.replicas: ReplicaManager | None = None
        self._listeners: list[Listener] = []
        self._changed = trio.Event()
        self._watcher: MetadataWatcher | None = None
        self._registered = False
        self._leaving = False  # controlled shutdown: never register again
        self._reregister = trio.Event()

    # Listeners -----------------------------------------------------------------

    def add_listener(self, listener: Listener) -> None:
        """``await listener(snapshot)`` for every snapshot from now on (after the local
        logs follow it, before ``metadata`` shows it). A listener must not block for long:
        snapshots queue behind it."""
        self._listeners.append(listener)

    async def wait_for(
        self, predicate: Callable[[ClusterMetadata], bool], timeout_s: float
    ) -> bool:
        """Wait until a published snapshot satisfies ``predicate``; False on timeout."""
        with trio.move_on_after(max(0.0, timeout_s)):
            while not predicate(self.metadata):
                await self._changed.wait()
            return True
        return predicate(self.metadata)

    # Lifecycle -----------------------------------------------------------------

    async def connect(self) -> None:
        """Connect to ZooKeeper and learn the cluster id, before any log is opened
        (Kafka's order: a broker that cannot join recovers nothing)."""
        try:
            await self.session.start()
        except ZkUnavailable as exc:
            raise ClusterStartError(str(exc)) from None
        self.session.on_state(self._on_session_state)
        cluster_id = await self.session.run(_ensure_cluster)
        await trio.to_thread.run_sync(
            check_meta_properties, self.broker.config.data_dir, cluster_id, self.broker_id
        )
        self.broker.cluster_id = cluster_id

    def producer_id_allocator(self) -> ZkProducerIdAllocator:
        """Producer ids unique across the cluster (blocks from ZooKeeper, as Kafka)."""
        return ZkProducerIdAllocator(self.session, self.broker_id)

    async def start(self, nursery: trio.Nursery) -> None:
        """Join the cluster (see the module docstring) once ``connect`` has and the
        local logs are open; tasks run in ``nursery``."""
        cluster_id = self.broker.cluster_id
        self._watcher = MetadataWatcher(
            self.session, cluster_id, self._publish,
            self.broker.listener_plan.inter_broker_listener,
        )
        await self._publish(await self._watcher.refresh())
        manager = _replica_manager_class()
        if manager is not None:
            # Before registering: the local replicas take their roles before anyone is told
            # this broker is alive.
            self.replicas = manager(self.broker, self)
            await self.replicas.start(nursery)
            # After the replica manager: a replica removed by a reassignment has stopped
            # following before its data goes (Kafka's StopReplica with delete).
            self.add_listener(self._drop_stray_replicas)
        await self._register()
        # Ready only once this broker's view has itself and a controller (racing for it
        # if there is none), so its first Metadata answers already name both.
        self._watcher.mark(BROKERS)
        self._watcher.mark(CONTROLLER)
        await self._publish(await self._watcher.refresh())
        if self.metadata.controller_id < 0:
            await self.controller.elect()
            self._watcher.mark(CONTROLLER)
            await self._publish(await self._watcher.refresh())
        self.add_listener(self._offer_to_controller)
        nursery.start_soon(self._watcher.run)
        nursery.start_soon(self.controller.run)
        if self.config.auto_leader_rebalance_enable:
            nursery.start_soon(
                self.controller.rebalance_leaders,
                self.config.leader_imbalance_check_interval_seconds,
            )
        nursery.start_soon(self._keep_registered)
        self.controller.offer(self.metadata)
        log.info(
            "broker %d joined cluster %s (ZooKeeper %s%s)", self.broker_id, cluster_id,
            self.session.hosts, self.session.chroot,
        )

    async def controlled_shutdown(self) -> None:
        """Move this broker's leaderships away before it stops (``controlled.shutdown.enable``).

        Kafka's broker asks the controller (ControlledShutdown); here the broker
        leaves ``/brokers/ids`` while it keeps serving (resigning first if it is the
        controller, so another broker takes over): the controller treats it as gone and
        elects, from each ISR, new leaders for the partitions it led (leader epoch + 1)
        and removes it from the ISRs, as Kafka's controller does for a broker shutting
        down. It then waits, at most ``CONTROLLED_SHUTDOWN_TIMEOUT_S``, until its view shows
        it leads nothing; partitions with no other ISR member go offline, as they would
        when it stops.
        """
        if not self.config.controlled_shutdown_enable or self.session.closed:
            return
        self._leaving = True
        self.controller.retired = True
        await self._tell_listeners(self.metadata)  # stop following at once
        try:
            await self.session.run(self._deregister)
        except Exception as exc:  # ZooKeeper away: the session's end does it later
            log.warning("controlled shutdown: could not leave /brokers/ids: %r", exc)
            return
        moved = await self.wait_for(self._nothing_to_hand_over, CONTROLLED_SHUTDOWN_TIMEOUT_S)
        log.info(
            "controlled shutdown: %s",
            "leaderships moved" if moved else "some leaderships did not move in time",
        )

    def _without_following(self, metadata: ClusterMetadata) -> ClusterMetadata:
        """A stopping broker's view for the listeners: it is no replica of what it does
        not lead (Kafka's StopReplica to a broker in controlled shutdown), so it stops
        fetching and no leader takes it back into an ISR; what it still leads it leads
        until the controller moves it."""
        me = self.broker_id
        topics = {}
        for name, topic in metadata.topics.items():
            replicas = {}
            for p, brokers in topic.replicas.items():
                state = metadata.states.get((name, p))
                led = state is not None and state.leader == me
                replicas[p] = brokers if led else tuple(b for b in brokers if b != me)
            topics[name] = replace(topic, replicas=replicas)
        return replace(metadata, topics=topics)

    def _nothing_to_hand_over(self, metadata: ClusterMetadata) -> bool:
        """Done: it leads nothing, or no other broker is left to lead (the whole
        cluster stopping: the last ones have nobody to hand over to)."""
        if not any(b != self.broker_id for b in metadata.brokers):
            return True
        return not any(s.leader == self.broker_id for s in metadata.states.values())

    def _deregister(self, client: KazooClient) -> None:
        """Delete ``/controller`` (if ours) and ``/brokers/ids/<id>``, only if this
        session made them."""
        owner = self.session.session_id
        for path in (znodes.CONTROLLER, znodes.broker_path(self.broker_id)):
            stat = client.exists(path)
            if stat is None or stat.ephemeralOwner != owner:
                continue
            if path == znodes.CONTROLLER:
                data, _ = client.get(path)
                if znodes.decode_controller(data) != self.broker_id:
                    continue
            try:
                client.delete(path, version=stat.version)
            except (NoNodeError, BadVersionError):
                pass

    async def stop(self) -> None:
        """Leave the cluster: closing the session removes the registration (and
        ``/controller`` if held) at once, so the others elect new leaders now."""
        self.controller.active = False
        if self.replicas is not None:
            await self.replicas.stop()
        await self.session.close()

    async def _drop_stray_replicas(self, metadata: ClusterMetadata) -> None:
        if self._leaving:
            return  # the listeners' view hides what this broker still holds (see above)
        from kafkette.broker.cluster.stray_replicas import drop_stray_replicas

        await drop_stray_replicas(self.broker, metadata, self.broker_id)

    async def _offer_to_controller(self, metadata: ClusterMetadata) -> None:
        self.controller.offer(metadata)

    def _on_session_state(self, state: str) -> None:
        if self.session.closed:
            return  # our own stop ends the session: nothing to recover
        if state == LOST:
            log.warning("ZooKeeper session expired: registering again when reconnected")
            self.controller.session_lost()
            if self.replicas is not None:
                self.replicas.session_lost()
            self._registered = False
            return
        if state == SUSPENDED:
            log.warning("ZooKeeper connection suspended")
            if self.replicas is not None:
                self.replicas.connection_suspended(self.config.session_timeout_s)
            return
        if self.replicas is not None:
            self.replicas.connection_restored()
        if not self._registered and not self._leaving and self._watcher is not None:
            # A new session: watches and ephemeral znodes are gone.
            self._reregister.set()
            self._watcher.mark_all()

    async def _keep_registered(self) -> None:
        while True:
            await self._reregister.wait()
            self._reregister = trio.Event()
            if self._leaving:
                return
            try:
                await self._register()
                if self.replicas is not None:
                    self.replicas.registered_again()
            except (ClusterStartError, Exception) as exc:
                log.warning("registering broker %d again failed: %s", self.broker_id, exc)
                await trio.sleep(1.0)
                self._reregister.set()

    async def _register(self) -> None:
        advertised = self.broker.advertised
        # Every listener, the inter-broker one first: where the other brokers dial.
        inter = self.broker.listener_plan.inter_broker_listener
        listeners = sorted(
            self.broker.listener_plan.listeners, key=lambda spec: spec.name != inter
        )
        endpoints = [
            (spec.name, spec.security_protocol, endpoint.host, endpoint.port)
            for spec in listeners
            if (endpoint := self.broker.endpoints.get(spec.name)) is not None
        ]
        data = znodes.encode_broker(
            advertised.host, advertised.port, self.config.broker_rack, now_ms(),
            endpoints or None, self.broker.schema_registry_url,
        )
        path = znodes.broker_path(self.broker_id)
        deadline = trio.current_time() + self.config.session_timeout_s + 2
        while True:
            owner = await self.session.run(_create_ephemeral, path, data)
            if owner is None:
                break
            if owner == self.session.session_id:
                break  # made by this session (a retried call): ours
            if trio.current_time() > deadline:
                raise ClusterStartError(
                    f"Error while creating ephemeral at {path}, node already exists and owner"
                    f" '{owner}' does not match current session '{self.session.session_id}'"
                    f" (is broker.id={self.broker_id} used by another broker?)"
                )
            log.info("%s still held by an earlier session: waiting for it to expire", path)
            await trio.sleep(0.5)
        self._registered = True
        log.info("registered %s at %s", path, advertised)

    async def _tell_listeners(self, snapshot: ClusterMetadata) -> None:
        if self._leaving:
            snapshot = self._without_following(snapshot)
        for listener in list(self._listeners):
            try:
                await listener(snapshot)
            except Exception:  # one listener's bug must not stop the cluster view
                log.exception("metadata listener %r failed", listener)

    async def _publish(self, snapshot: ClusterMetadata) -> None:
        # Logs first, then the listeners (a new leader takes its role), then the handlers
        # see it: like Kafka's LeaderAndIsr before UpdateMetadata, a client told "this
        # broker leads" finds it leading, and an admin request waiting for the change
        # answers once this broker acts on it.
        stale = self.broker.topics.stale_topics(snapshot)
        if stale:
            # Topics whose local logs go (deleted, or re-created under a new id): the
            # listeners first see them gone and stop using them (Kafka's StopReplica
            # before the deletion), then the logs are deleted.
            await self._tell_listeners(
                replace(
                    snapshot,
                    topics={n: t for n, t in snapshot.topics.items() if n not in stale},
                    states={k: v for k, v in snapshot.states.items() if k[0] not in stale},
                )
            )
        await self.broker.topics.follow_cluster(snapshot)
        await self._tell_listeners(snapshot)
        self.metadata = snapshot
        self._changed.set()
        self._changed = trio.Event()


def check_meta_properties(data_dir: Path, cluster_id: str, broker_id: int) -> None:
    """Kafka's guard against a data dir joining the wrong cluster or under another id:
    ``meta.properties`` must name this cluster and broker; written on the first join."""
    path = data_dir / META_FILE
    stored: dict[str, str] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                stored[key.strip()] = value.strip()
    # version=0 is what a broker of a ZooKeeper cluster writes (as Kafka's did); a
    # single node's own file (version=1) may join a cluster once and adopt its id.
    joined = stored.get("version") == "0"
    if joined and stored.get("cluster.id") not in (None, cluster_id):
        raise ClusterStartError(
            f"The Cluster ID {cluster_id} doesn't match stored clusterId"
            f" Some({stored['cluster.id']}) in meta.properties. The broker is trying to"
            " join the wrong cluster. Configured zookeeper.connect may be wrong."
        )
    stored_id = stored.get("broker.id") or stored.get("node.id")
    if joined and stored_id is not None and stored_id != str(broker_id):
        raise ClusterStartError(
            f"Configured broker.id {broker_id} doesn't match stored broker.id Some({stored_id})"
            " in meta.properties. If you moved your data, make sure your configured broker.id"
            " matches. If you intend to create a new broker, you should remove all data in"
            " your data directories (log.dirs)."
        )
    if not joined or stored.get("cluster.id") != cluster_id:
        data_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(
            path, f"version=0\ncluster.id={cluster_id}\nbroker.id={broker_id}\n".encode()
        )


def _replica_manager_class() -> type[ReplicaManager] | None:
    """The replication runtime, when installed: it lands separately (helper ``replica``),
    and the ZooKeeper side works (and is tested) without it."""
    try:
        from kafkette.broker.cluster.replica_manager import ReplicaManager
    except ModuleNotFoundError as exc:
        if exc.name != "kafkette.broker.cluster.replica_manager":
            raise
        return None
    return ReplicaManager


def _ensure_cluster(client: KazooClient) -> str:
    """Kafka's top-level znodes, and the cluster id (created by the first broker)."""
    for path in znodes.PERSISTENT_PATHS:
        client.ensure_path(path)
    try:
        data, _ = client.get(znodes.CLUSTER_ID)
        return znodes.decode_cluster_id(data)
    except NoNodeError:
        pass
    cluster_id = new_cluster_id()
    try:
        client.create(znodes.CLUSTER_ID, znodes.encode_cluster_id(cluster_id))
        return cluster_id
    except NodeExistsError:
        data, _ = client.get(znodes.CLUSTER_ID)
        return znodes.decode_cluster_id(data)


def _create_ephemeral(client: KazooClient, path: str, data: bytes) -> int | None:
    """Create; None when made, else the session id owning the existing znode (0: gone)."""
    try:
        client.create(path, data, ephemeral=True)
        return None
    except NodeExistsError:
        stat = client.exists(path)
        return 0 if stat is None else stat.ephemeralOwner
