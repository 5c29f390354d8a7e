"""The broker: storage, listeners, background jobs and graceful shutdown.

``Broker.run`` starts in an order that never touches a data dir it does not
own: lock the data dir (``log/dir_lock.py``), bind the listener, open the
data dir (recovering it if the last stop was not clean), then accept
connections, report the bound address through ``task_status.started`` and
serve until ``request_stop``. Binding before opening the logs (Kafka opens
them first) makes a busy port cost nothing: no recovery is run and nothing is
written for a start that cannot serve. Clients that connect meanwhile wait in
the listen backlog. Whatever stops a start is raised as one ``StartupError``
whose message is the one line ``kafkette serve`` prints.

Listeners (``broker/security/listeners.py``): ``--listen`` is one PLAINTEXT listener;
``listeners=`` binds each named listener, SSL and SASL_SSL ones with TLS
(``broker/security/tls.py``: the handshake runs in the connection's own task, bounded
by ``TLS_HANDSHAKE_TIMEOUT_S``; a failed one is one log line and a closed connection).
Every connection's ``Session`` names its listener and protocol, and Metadata tells a
client the endpoints of the listener it came in on (``endpoint_for``).

Shutdown goes in steps, as a Kafka broker does: in a cluster, first move this
broker's partition leaderships to other brokers (controlled shutdown,
``broker/cluster/node.py``), then stop accepting, let in-flight
requests finish within a grace period (long-polling fetches are woken to
answer at once), close connections, then flush every log, write the
clean-shutdown marker and release the data dir's lock.
"""

from __future__ import annotations

import errno
import functools
import gc
import logging
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.config import BrokerConfig, advertised_listener
from kafkette.broker.durable_store import StoreFileError, StoreUnavailable
from kafkette.broker.groups.coordinator import GroupCoordinator
from kafkette.broker.identity import load_or_create_cluster_id
from kafkette.broker.network.connection import serve_connection
from kafkette.broker.network.connection_limits import (
    ConnectionLimits,
    normalised_ip,
    resolve_overrides,
)
from kafkette.broker.network.request_memory import RequestMemoryPool
from kafkette.broker.observability.request_log import RequestObserver
from kafkette.broker.partitions import Partition
from kafkette.broker.producer_ids import ProducerIdAllocator
from kafkette.broker.quotas import QuotaManager, QuotaStore, open_quota_store
from kafkette.broker.security.authorizer.startup import open_authorizer
from kafkette.broker.security.listeners import ListenerSpec, plan_listeners
from kafkette.broker.security.session import Session
from kafkette.broker.security.tls_receive import drain_tls_receives
from kafkette.broker.single_node import SingleNodeTopology
from kafkette.broker.throttled_log import ThrottledLog, describe_error, storage_errors
from kafkette.broker.topics import TopicRegistry
from kafkette.broker.transactions.coordinator import TransactionCoordinator
from kafkette.log.cleaner_manager import LogCleanerManager
from kafkette.log.data_dir import DataDir
from kafkette.log.dir_lock import DataDirError, DirLock, os_reason
from kafkette.log.errors import CleanAborted

if TYPE_CHECKING:
    from kafkette.broker.cluster.node import ClusterNode
    from kafkette.broker.cluster.peer_client import PeerSecurity
    from kafkette.broker.cluster.producer_id_blocks import ZkProducerIdAllocator
    from kafkette.broker.fetch_sessions.cache import FetchSessionCache
    from kafkette.broker.schema_registry.http_server import RegistryListener
    from kafkette.broker.schema_registry.registry import SchemaRegistry
    from kafkette.broker.security.authorizer.authorizer import Authorizer
    from kafkette.broker.security.tls import ListenerTls
    from kafkette.broker.share_groups.coordinator import ShareCoordinator
    from kafkette.broker.share_groups.manager import SharePartitionManager
    from kafkette.broker.topology import Topology
    from kafkette.log.cleaner import CleanStats
    from kafkette.log.partition_log import PartitionLog

log = logging.getLogger("kafkette.server")

SHUTDOWN_GRACE_SECONDS = 10.0
FLUSH_CHECK_MAX_MS = 60_000
# Connection refusals and accept failures: at most one line per kind this often.
CONNECTION_LOG_INTERVAL_SECONDS = 10.0
# accept() failing for want of descriptors or memory: wait, retry, as trio's serve_listeners does.
ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
ACCEPT_RETRY_SECONDS = 0.1
# The GIL's switch interval in kafkette serve (Python's default is 5 ms): _tune_interpreter.
GIL_SWITCH_INTERVAL_S = 0.0005
# A TLS client has this long to finish its handshake (Kafka has no such bound; its idle
# timeout of 10 minutes is far too long to hold a connection slot for a silent peer).
TLS_HANDSHAKE_TIMEOUT_S = 10.0


class StartupError(Exception):
    """The broker cannot start. The message is one line, for the operator."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A host and port: one to listen on, or one advertised to clients."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


class BoundListener:
    """One configured listener once bound: its sockets, what it advertises, its TLS.
    A plain class, not a dataclass: each dataclass made at import costs a start ~1 ms."""

    __slots__ = ("advertised", "sockets", "spec", "tls")

    def __init__(
        self,
        spec: ListenerSpec,
        sockets: list[trio.SocketListener],
        advertised: Endpoint,
        tls: ListenerTls | None = None,
    ) -> None:
        self.spec = spec
        self.sockets = sockets
        self.advertised = advertised
        self.tls = tls

    @property
    def port(self) -> int:
        return int(self.sockets[0].socket.getsockname()[1])


def parse_endpoint(text: str) -> Endpoint:
    """``HOST:PORT`` (``[v6]:PORT`` too), port 0-65535; raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    if int(port) > 65535:
        raise ValueError(f"port {port} of {text!r} is outside 0-65535")
    return Endpoint(host.strip("[]") or "0.0.0.0", int(port))


class Broker:
    """One kafkette node. Create it, then ``await run()`` inside trio."""

    def __init__(
        self,
        config: BrokerConfig,
        listen: Endpoint | None = None,
        advertised: Endpoint | None = None,
    ) -> None:
        """``listen``: the simple form (one PLAINTEXT listener, ``--listen``); None: the
        config's ``listeners`` (127.0.0.1:9092 when it has none). Raises ``ValueError``
        (one line) for listener or TLS settings the broker cannot start with."""
        self.config = config
        self.listener_plan = plan_listeners(
            config.explicit,
            clustered=config.cluster is not None,
            listen=(listen.host, listen.port) if listen is not None else None,
        )
        if listen is not None and config.explicit.get("listeners", "").strip():
            log.info("--listen %s replaces listeners=%s", listen, config.explicit["listeners"])
        first = self.listener_plan.listeners[0]
        self.listen = Endpoint(first.host, first.port)
        if self.listener_plan.simple:
            if advertised is None and (configured := advertised_listener(config)) is not None:
                advertised = Endpoint(*configured)  # advertised.listeners; the flag wins
        elif advertised is None:
            # No host or a wildcard: resolved once bound (_advertised_for); a port kept.
            advertised = Endpoint(
                *self.listener_plan.advertised.get(first.name, (first.host, first.port))
            )
        self._advertised_request = advertised
        self.advertised: Endpoint = advertised or self.listen
        # Listener name -> advertised endpoint, once bound (endpoint_for).
        self.endpoints: dict[str, Endpoint] = {}
        self._tls = _server_tls(config, self.listener_plan.listeners)
        # How this broker reaches the others (cluster mode): the inter-broker listener's
        # protocol, TLS client context and SASL credentials (peer_client.py).
        self.peer_security = _peer_security(config, self.listener_plan.inter_broker)
        self.node_id = config.node_id
        self.cluster_id = ""
        self.closing = False
        self.requests_in_flight = 0
        # Client quotas (broker/quotas/): the store is opened with the data dir; until a
        # produce/fetch/request quota exists the manager is inactive and costs nothing.
        self.client_quotas = QuotaManager(
            int(config.value_of("quota.window.num")),
            int(config.value_of("quota.window.size.seconds")),
        )
        self.quota_store: QuotaStore | None = None
        # The request log, and the request counters once metrics are on (observability/).
        self.request_observer = RequestObserver()
        # Fetch answers' records are counted (a scan of their batch headers) only while
        # something reads Partition.records_out: metrics or the console (broker/cli.py).
        self.count_records_out = False
        self.data_dir: DataDir | None = None
        self._dir_lock: DirLock | None = None
        self.request_memory = RequestMemoryPool(config.request_memory_bytes)
        # Read now, so a bad value stops the start; the cache itself is made on first use.
        self._fetch_session_slots = int(
            config.value_of("max.incremental.fetch.session.cache.slots")
        )
        self.connection_limits = ConnectionLimits(
            config.max_connections, config.max_connections_per_ip
        )
        self._throttled = ThrottledLog(log, interval_s=CONNECTION_LOG_INTERVAL_SECONDS)
        self.topics: TopicRegistry
        self.groups: GroupCoordinator
        self.transactions: TransactionCoordinator
        # The nursery of the broker's background tasks while it serves (None before).
        self.background_nursery: trio.Nursery | None = None
        self.producer_ids: ProducerIdAllocator | ZkProducerIdAllocator
        self.cleaner: LogCleanerManager
        # Cluster mode (zookeeper.connect): this broker's part in the cluster; None on one node.
        self.cluster: ClusterNode | None = None
        # What the metadata and admin handlers ask about brokers, leaders and the controller
        # (broker/topology.py): this node alone, or in cluster mode the cluster's, set
        # when it connects (_connect_cluster).
        self.topology: Topology
        if config.cluster is None:
            self.topology = SingleNodeTopology(self)
        # authorizer.class.name: ACL checks in the handlers; None (the default): none.
        self.authorizer: Authorizer | None = None
        # The schema registry (broker/schema_registry/, schema.registry.listeners): its
        # bound listener (_bind), the URL other brokers forward to (published in the
        # cluster registration), and the facade once it serves. None when off.
        self._registry_listener: RegistryListener | None = None
        self.schema_registry_url: str | None = None
        self.schema_registry: SchemaRegistry | None = None
        self._stop = trio.Event()

    # Lifecycle ---------------------------------------------------------------

    @functools.cached_property
    def fetch_sessions(self) -> FetchSessionCache:
        """KIP-227 incremental fetch sessions (handlers/fetch.py, broker/fetch_sessions/):
        made on the first Fetch, so a start does not load the package."""
        from kafkette.broker.fetch_sessions.cache import FetchSessionCache

        return FetchSessionCache(self._fetch_session_slots)

    @functools.cached_property
    def share_partitions(self) -> SharePartitionManager:
        """KIP-932 share partitions (broker/share_groups/manager.py): made on the first
        ShareFetch, so a start does not load the package."""
        from kafkette.broker.share_groups.manager import SharePartitionManager

        return SharePartitionManager(self)

    @functools.cached_property
    def share_coordinator(self) -> ShareCoordinator:
        """KIP-932's share coordinator (broker/share_groups/coordinator.py): started with
        the broker in a cluster, made on first use on a single node."""
        from kafkette.broker.share_groups.coordinator import ShareCoordinator

        return ShareCoordinator(self)

    @property
    def share_partitions_started(self) -> SharePartitionManager | None:
        """The share partition manager if a share fetch made it, else None."""
        return self.__dict__.get("share_partitions")

    def request_stop(self) -> None:
        """Begin graceful shutdown (call from the event loop)."""
        self._stop.set()

    async def run(
        self, *, task_status: trio.TaskStatus[Endpoint] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self._resolve_connection_overrides()
        self._dir_lock = await self._lock_data_dir()
        try:
            listeners = await self._bind()
            try:
                self._advertise(listeners)
                try:
                    # Cluster mode's tasks (metadata watcher, controller) live here: they
                    # stop after serving and before the logs close.
                    async with trio.open_nursery() as cluster_tasks:
                        try:
                            await self._open_storage(cluster_tasks)
                            _tune_interpreter()
                            await self._serve_until_stopped(listeners, task_status)
                        finally:
                            with trio.CancelScope(shield=True):
                                await self._leave_cluster()
                            cluster_tasks.cancel_scope.cancel()
                finally:
                    with trio.CancelScope(shield=True):
                        await self._close_storage()
            finally:
                for bound in listeners:
                    for listener in bound.sockets:
                        listener.socket.close()
                if self._registry_listener is not None:
                    self._registry_listener.sock.close()
        finally:
            self._dir_lock.release()

    async def _resolve_connection_overrides(self) -> None:
        overrides = self.config.max_connections_per_ip_overrides
        if overrides:
            try:
                resolved = await trio.to_thread.run_sync(resolve_overrides, overrides)
            except ValueError as exc:
                raise StartupError(str(exc)) from None
            self.connection_limits.overrides = resolved

    async def _lock_data_dir(self) -> DirLock:
        """Own the data dir before anything in it is read or written."""
        try:
            return await trio.to_thread.run_sync(DirLock.acquire, self.config.data_dir)
        except DataDirError as exc:
            raise StartupError(str(exc)) from None

    async def _bind(self) -> list[BoundListener]:
        bound: list[BoundListener] = []
        try:
            for spec in self.listener_plan.listeners:
                where = Endpoint(spec.host, spec.port) if self.listener_plan.simple else spec
                # No host: every interface (Kafka's default); with port 0, IPv4's only, so
                # that the listener has one port.
                host = spec.host or (None if spec.port else "0.0.0.0")
                try:
                    sockets = await trio.open_tcp_listeners(spec.port, host=host)
                except OSError as exc:
                    raise StartupError(f"cannot listen on {where}: {os_reason(exc)}") from None
                bound.append(
                    BoundListener(spec, sockets, Endpoint(spec.host, 0), self._tls.get(spec.name))
                )
            if self.config.schema_registry.enabled:
                # Here, before the logs open: a busy port fails the start first, and the URL
                # is known when the broker registers in a cluster.
                from kafkette.broker.schema_registry.http_server import bind_registry_listener

                self._registry_listener = bind_registry_listener(self.config)
        except BaseException:
            for done in bound:
                for listener in done.sockets:
                    listener.socket.close()
            raise
        return bound

    def _advertise(self, listeners: list[BoundListener]) -> None:
        """Each listener's advertised endpoint: advertised.listeners' (port 0: the bound
        port; no host or a wildcard: this machine's name); the first is ``advertised``."""
        plan = self.listener_plan
        for index, bound in enumerate(listeners):
            if index == 0:
                bound.advertised = self._advertised_for(bound.port)
                self.advertised = bound.advertised
            else:
                host, port = plan.advertised.get(bound.spec.name, (bound.spec.host, 0))
                bound.advertised = Endpoint(_advertised_host(host), port or bound.port)
            self.endpoints[bound.spec.name] = bound.advertised
        if self._registry_listener is not None:
            self.schema_registry_url = _registry_url(
                self.config.schema_registry.schema_registry_advertised_url,
                self._registry_listener.url,
                self.advertised.host,
            )

    async def _serve_until_stopped(
        self, listeners: list[BoundListener], task_status: trio.TaskStatus[Endpoint]
    ) -> None:
        for bound in listeners:
            address = bound.sockets[0].socket.getsockname()
            name = "" if self.listener_plan.simple else f"{bound.spec.name}://"
            log.info(
                "listening on %s%s:%d, advertising %s", name, address[0], address[1],
                bound.advertised,
            )
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as background:
                for bound in listeners:
                    for listener in bound.sockets:
                        background.start_soon(self._accept, listener, bound, connections)
                background.start_soon(self._housekeeping)
                if self.config.cleaner.enable:
                    for _ in range(self.config.cleaner.threads):
                        background.start_soon(self._run_cleaner)
                self.background_nursery = background
                await self.groups.start(background)
                await self.transactions.start(background)
                if self.cluster is not None:
                    from kafkette.broker.share_groups.group_configs import (
                        open_cluster_group_configs,
                    )

                    await open_cluster_group_configs(self, background)
                    await self.share_coordinator.start(background)
                if self._registry_listener is not None:
                    await self._start_schema_registry(background, self._registry_listener)
                task_status.started(Endpoint(self.listen.host, listeners[0].port))
                await self._stop.wait()
                if self.cluster is not None:
                    # Still serving: clients are told NOT_LEADER_OR_FOLLOWER and find
                    # the new leaders while this broker's leaderships move away.
                    await self.cluster.controlled_shutdown()
                background.cancel_scope.cancel()
            await self._drain(connections)

    async def _start_schema_registry(
        self, background: trio.Nursery, listener: RegistryListener
    ) -> None:
        """The registry's topic, state and leadership, then its HTTP server: all before the
        broker reports started, so its first answer already sees the whole topic."""
        from kafkette.broker.schema_registry.http_server import serve_registry
        from kafkette.broker.schema_registry.registry import SchemaRegistry

        assert self.schema_registry_url is not None
        registry = SchemaRegistry(self, self.config.schema_registry, self.schema_registry_url)
        await registry.start(background)
        self.schema_registry = registry
        await background.start(serve_registry, registry, listener)  # logs "schema registry on"

    async def _accept(
        self, listener: trio.SocketListener, bound: BoundListener, connections: trio.Nursery
    ) -> None:
        """Kafka's acceptor: wait for a slot under ``max.connections``, accept, close at
        once a connection whose address is at ``max.connections.per.ip``."""
        limits = self.connection_limits
        while True:
            if limits.open >= limits.max_connections:
                self._throttled.log(
                    "max.connections",
                    logging.WARNING,
                    f"max.connections={limits.max_connections} reached:"
                    " not accepting until a connection closes",
                )
            await limits.wait_for_slot()
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                    raise
                self._throttled.log(
                    ("accept", exc.errno), logging.WARNING,
                    f"accept failed: {os_reason(exc)}; retrying",
                )
                await trio.sleep(ACCEPT_RETRY_SECONDS)
                continue
            ip = _peer_ip(stream)
            if not limits.admit(ip):
                self._throttled.log(
                    "max.connections.per.ip",
                    logging.WARNING,
                    f"refused a connection from {ip}: the address already has"
                    f" {limits.limit_for(ip)} connections",
                )
                await trio.aclose_forcefully(stream)
                continue
            if self.client_quotas.ip_active:  # connection_creation_rate (broker/quotas/)
                delay_ms = self.client_quotas.connection_throttle_ms(ip, _monotonic_ms())
                if delay_ms > 0:
                    limits.release(ip)
                    connections.start_soon(_close_after, stream, delay_ms / 1000)
                    continue
            connections.start_soon(self._serve_connection, stream, ip, bound)

    async def _serve_connection(
        self, stream: trio.SocketStream, ip: str, bound: BoundListener
    ) -> None:
        session = Session(bound.spec.name, bound.spec.security_protocol, ip)
        try:
            if bound.tls is None:
                await serve_connection(self, stream, session)
                return
            secured = await self._tls_handshake(stream, bound, session)
            if secured is not None:
                await serve_connection(self, secured, session)
        finally:
            self.connection_limits.release(ip)

    async def _tls_handshake(
        self, stream: trio.SocketStream, bound: BoundListener, session: Session
    ) -> trio.SSLStream[trio.SocketStream] | None:
        """The TLS handshake of one connection, and on an SSL listener the principal of
        its client certificate. A failure (a plaintext client, an untrusted certificate, a
        peer that says nothing): one log line, the connection closed, None."""
        from kafkette.broker.security.tls import peer_principal

        tls = bound.tls
        assert tls is not None
        secured = trio.SSLStream(stream, tls.context, server_side=True)
        drain_tls_receives(secured)
        peer = _peer_address(stream)
        try:
            with trio.fail_after(TLS_HANDSHAKE_TIMEOUT_S):
                await secured.do_handshake()
            if bound.spec.security_protocol == "SSL":
                principal = peer_principal(tls, secured.getpeercert(binary_form=True))
                if principal is not None:
                    session.principal = principal
            if log.isEnabledFor(logging.DEBUG):
                cipher = secured.cipher()
                log.debug(
                    "TLS connection from %s on listener %s: %s %s, principal %s",
                    peer, bound.spec.name, secured.version(), cipher[0] if cipher else "-",
                    session.principal,
                )
            return secured
        except trio.TooSlowError:
            reason = f"no handshake within {TLS_HANDSHAKE_TIMEOUT_S:g}s"
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            reason = _tls_failure(exc)
        except ValueError as exc:  # no ssl.principal.mapping.rules rule applies
            reason = str(exc)
        except Exception:  # a bug here must cost one connection, never the broker
            log.exception(
                "closing connection from %s on listener %s: TLS handshake failed",
                peer, bound.spec.name,
            )
            await trio.aclose_forcefully(stream)
            return None
        except BaseException:  # cancelled (the broker stops): the socket goes at once
            await trio.aclose_forcefully(stream)
            raise
        log.warning(
            "closing connection from %s on listener %s: TLS handshake failed: %s",
            peer, bound.spec.name, reason,
        )
        await trio.aclose_forcefully(stream)
        return None

    async def _drain(self, connections: trio.Nursery) -> None:
        """Let in-flight requests finish (long-polls answer at once), then close every
        connection, idle ones included, as Kafka does."""
        self.closing = True
        for partition in self.topics.all_partitions():
            partition.notify_appended()
        self.groups.release_waiters()
        with trio.move_on_after(SHUTDOWN_GRACE_SECONDS):
            while self.requests_in_flight:
                await trio.sleep(0.01)
        connections.cancel_scope.cancel()

    def endpoint_for(self, listener_name: str) -> Endpoint:
        """The advertised endpoint of one of this broker's listeners (Metadata and
        FindCoordinator answer a client with its own listener's); the first listener's
        for a name it does not have (a request the broker made itself)."""
        return self.endpoints.get(listener_name, self.advertised)

    def _advertised_for(self, bound_port: int) -> Endpoint:
        requested = self._advertised_request
        host = requested.host if requested is not None else self.listen.host
        port = (requested.port if requested is not None else 0) or bound_port
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
            log.info("listening on all interfaces: advertising host name %s", host)
        return Endpoint(host, port)

    async def _open_storage(self, cluster_tasks: trio.Nursery) -> None:
        clustered = self.config.cluster is not None
        if clustered:
            await self._connect_cluster()

        def open_all() -> DataDir:
            self.config.data_dir.mkdir(parents=True, exist_ok=True)
            if not clustered:  # in a cluster the id comes from ZooKeeper's /cluster/id
                self.cluster_id = load_or_create_cluster_id(self.config.data_dir, self.node_id)
            self.producer_ids = ProducerIdAllocator(self.config.data_dir)
            self.cleaner = LogCleanerManager(self.config.data_dir, self.config.cleaner, now_ms)
            return DataDir.open(self.config.data_dir, self.config.log, now_ms)

        started = time.perf_counter()
        try:
            self.data_dir = await trio.to_thread.run_sync(open_all)
        except OSError as exc:
            raise StartupError(
                f"cannot open data dir {self.config.data_dir}: {os_reason(exc)}"
            ) from None
        if not clustered:  # SCRAM credentials: a damaged file stops the start (sasl/)
            await self._open_scram_credentials()
        await self._open_client_quotas()
        await self._open_client_metrics()
        self.topics = TopicRegistry(self.data_dir, self.config)
        try:
            self.authorizer = await open_authorizer(self)
        except ValueError as exc:
            raise StartupError(str(exc)) from None
        if clustered:
            assert self.cluster is not None
            self.producer_ids = self.cluster.producer_id_allocator()
            await self._join_cluster(cluster_tasks)
        self.groups = GroupCoordinator(self)
        await self.groups.load()
        # After the groups: their load keeps transactional offsets pending until the
        # markers this coordinator (re)writes for prepared transactions at start.
        self.transactions = TransactionCoordinator(self)
        await self.transactions.load()
        await self._load_share_groups()
        log.info(
            "data dir %s open: %d topics in %.3fs",
            self.config.data_dir,
            len(self.topics.names),
            time.perf_counter() - started,
        )

    async def _load_share_groups(self) -> None:
        """A single node whose share groups left state in ``__share_group_state`` knows
        those groups again (empty) after a restart, as Kafka does; nothing is read (nor
        the package loaded) when no share group was ever used."""
        from kafkette.broker.internal_topics import SHARE_STATE_TOPIC

        if self.cluster is not None or self.topics.metadata(SHARE_STATE_TOPIC) is None:
            return
        for group_id in await self.share_partitions.load():
            self.groups.state.share_groups.ensure(group_id)

    async def _open_client_quotas(self) -> None:
        """The data dir's quotas (a damaged file stops the start), or a cluster's."""
        try:
            self.quota_store = await open_quota_store(self)
        except (StoreFileError, StoreUnavailable) as exc:
            raise StartupError(str(exc)) from None
        self.quota_store.on_change(self.client_quotas.update)

    async def _open_client_metrics(self) -> None:
        """A damaged client-metrics.json stops the start (broker/telemetry/); a single node
        with none (no subscription ever made, the usual case) loads the package on first use."""
        # The name is file_store.FILE_NAME (not imported: it would load the package).
        if self.cluster is None and not (self.config.data_dir / "client-metrics.json").exists():
            return
        from kafkette.broker.telemetry.subscriptions import open_client_metrics

        try:
            await open_client_metrics(self)
        except StoreFileError as exc:
            raise StartupError(str(exc)) from None

    def _has_scram_credentials_file(self) -> bool:
        # The name is scram_store.FILE_NAME (not imported: it would load the package).
        return (self.config.data_dir / "scram-credentials.json").exists()

    async def _open_scram_credentials(self) -> None:
        """A damaged credentials file stops the start; with none (no SCRAM user ever
        created, the usual case) nothing of the SASL package is loaded now."""
        if not self._has_scram_credentials_file():
            return
        from kafkette.broker.security.sasl.broker_sasl import open_broker_sasl

        try:
            await open_broker_sasl(self)
        except StoreFileError as exc:
            raise StartupError(str(exc)) from None

    async def _connect_cluster(self) -> None:
        """Cluster mode: reach ZooKeeper and take the cluster id from it (before any
        log is opened); broker/cluster/node.py."""
        from kafkette.broker.cluster.node import ClusterNode, ClusterStartError
        from kafkette.broker.cluster.topology import ClusterTopology

        self.cluster = ClusterNode(self)
        self.topology = ClusterTopology(self.cluster)
        try:
            await self.cluster.connect()
        except ClusterStartError as exc:
            raise StartupError(str(exc)) from None

    async def _join_cluster(self, cluster_tasks: trio.Nursery) -> None:
        """Make the local logs follow the cluster, register, run the watcher and the
        controller election."""
        from kafkette.broker.cluster.node import ClusterStartError

        assert self.cluster is not None
        self.topics.cluster = self.cluster
        try:
            await self.cluster.start(cluster_tasks)
        except ClusterStartError as exc:
            raise StartupError(str(exc)) from None

    async def _leave_cluster(self) -> None:
        if self.cluster is not None:
            with trio.move_on_after(10):
                await self.cluster.stop()

    async def _close_storage(self) -> None:
        """Flush and mark a clean shutdown: only a data dir this broker locked and opened."""
        cleaner = getattr(self, "cleaner", None)
        if cleaner is not None:  # the cleaners have stopped: their processes go now
            await trio.to_thread.run_sync(cleaner.close)
        if self.data_dir is not None:
            with trio.move_on_after(30):
                try:
                    await trio.to_thread.run_sync(self.data_dir.close)
                except OSError as exc:
                    log.warning(
                        "data dir not closed cleanly (%s): the next start recovers the logs",
                        describe_error(exc),
                    )
                    return
            log.info("data dir closed cleanly")

    async def _housekeeping(self) -> None:
        """Retention at ``log.retention.check.interval.ms``; flush checks more often.

        The flush pass applies ``log.flush.interval.ms``, fsyncs rolled segments
        and moves the recovery point, so a crash rescans little. It runs at
        least every minute, as Kafka checkpoints its recovery points.
        """
        retention_every = self.config.retention_check_interval_ms / 1000
        flush_every = min(self.config.flush_scheduler_interval_ms, FLUSH_CHECK_MAX_MS) / 1000
        next_retention = trio.current_time() + retention_every
        while True:
            await trio.sleep(min(flush_every, max(0.0, next_retention - trio.current_time())))
            retention_due = trio.current_time() >= next_retention
            if retention_due:
                next_retention = trio.current_time() + retention_every
            partitions = self.topics.all_partitions()  # snapshot on the event loop
            await trio.to_thread.run_sync(_run_log_jobs, partitions, retention_due)


    async def _run_cleaner(self) -> None:
        """One ``log.cleaner.threads`` worker: clean the dirtiest log, else back off.

        Each clean runs in a worker thread, which hands the reading, decoding
        and writing to a cleaner process (log/cleaner_process.py) so they never
        hold this process's GIL. On cancellation (shutdown) the abort flag
        makes the thread kill that process; the group being written is
        discarded and nothing already swapped is undone, so the data dir closes
        with every log whole. The event loop never waits on the cleaner: the
        only lock it shares with it is taken by worker threads.
        """
        manager = self.cleaner
        backoff = self.config.cleaner.backoff_ms / 1000
        while True:
            logs = [p.cleaner_entry() for p in self.topics.all_partitions()]
            try:
                stats = await _abortable_in_thread(manager.clean_one, logs)
            except CleanAborted:
                return
            except Exception as exc:  # a full disk, an unreadable segment: log, back off
                storage_errors.failure("log cleaning of", "a partition", exc)
                stats = None
            if stats is None:
                await trio.sleep(backoff)
            else:
                await trio.sleep(0)


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


async def _close_after(stream: trio.SocketStream, seconds: float) -> None:
    """A connection over its ip's connection_creation_rate: held unread, then closed
    (Kafka's delayed close of a throttled connection)."""
    await trio.sleep(seconds)
    await trio.aclose_forcefully(stream)


async def _abortable_in_thread(
    fn: Callable[[list[tuple[str, int, PartitionLog]], threading.Event], CleanStats | None],
    logs: list[tuple[str, int, PartitionLog]],
) -> CleanStats | None:
    """Run ``fn(logs, abort)`` in a worker thread; cancellation sets ``abort`` and waits.

    The thread cannot be abandoned (it may be renaming files); it notices the
    flag within ``ABORT_POLL_S`` (it kills the cleaner process) and raises
    CleanAborted.
    """
    abort = threading.Event()
    result: list[CleanStats | None] = []
    failure: list[BaseException] = []

    done = trio.Event()

    async def runner() -> None:
        with trio.CancelScope(shield=True):
            try:
                result.append(await trio.to_thread.run_sync(fn, logs, abort))
            except Exception as exc:  # handed back to the caller below
                failure.append(exc)
            finally:
                done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(runner)
        try:
            await done.wait()
        finally:
            abort.set()  # on cancellation: the worker stops at its next step
    if failure:
        raise failure[0]
    return result[0]


def _run_log_jobs(partitions: list[Partition], retention: bool) -> None:
    """Worker thread: retention (when due) and the flush check on every partition."""
    for partition in partitions:
        try:
            partition.housekeeping(retention)
        except Exception as exc:  # a full disk fails every checkpoint: one line a minute
            storage_errors.failure("housekeeping of", f"{partition.topic}-{partition.index}", exc)


def _tune_interpreter() -> None:
    """``kafkette serve`` only (the process's main thread): the interpreter settings
    a latency-sensitive server wants, which a program embedding a broker in one of
    its threads (a test suite) keeps to itself.

    * Everything alive after start (modules, configs, every partition's log and
      index objects) leaves the cyclic garbage collector's reach (``gc.freeze``):
      it lives as long as the broker, but each full collection would walk it all,
      tens of milliseconds with thousands of partitions, a pause every request in
      flight waits out.
    * The GIL's switch interval goes from 5 ms to ``GIL_SWITCH_INTERVAL_S``: when a
      worker thread (a large append, a cold read) holds the GIL, the event loop
      waits that long to get it back after each of its system calls, and those
      waits made most of the latency tail under a mixed load (issue 16).
    """
    if threading.current_thread() is not threading.main_thread():
        return
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    # No gc.collect() first: it would add ~10-30 ms to the start time for the few dozen
    # unreachable objects imports leave, which stay frozen (kept) instead.
    gc.freeze()


def _registry_url(configured: str, bound_url: str, advertised_host: str) -> str:
    """``schema.registry.advertised.url``, else the bound listener's scheme and port with
    the broker's advertised host."""
    if configured:
        return configured.rstrip("/")
    from urllib.parse import urlsplit

    parts = urlsplit(bound_url)
    host = f"[{advertised_host}]" if ":" in advertised_host else advertised_host
    return f"{parts.scheme}://{host}:{parts.port}"


def _advertised_host(host: str) -> str:
    return socket.gethostname() if host in ("", "0.0.0.0", "::") else host


def _server_tls(
    config: BrokerConfig, listeners: tuple[ListenerSpec, ...]
) -> dict[str, ListenerTls]:
    """The TLS context of every SSL / SASL_SSL listener (``tls.py`` only loads then)."""
    secured = [spec for spec in listeners if spec.security_protocol in ("SSL", "SASL_SSL")]
    if not secured:
        return {}
    from kafkette.broker.security.tls import server_tls

    return {spec.name: server_tls(config.explicit, spec) for spec in secured}


def _peer_security(config: BrokerConfig, inter_broker: ListenerSpec) -> PeerSecurity | None:
    """Cluster mode: how to reach the other brokers' inter-broker listener."""
    if config.cluster is None:
        return None
    from kafkette.broker.cluster.peer_client import PeerSecurity

    return PeerSecurity.for_listener(config, inter_broker)


def _tls_failure(exc: BaseException) -> str:
    """The OpenSSL reason of a failed handshake (``WRONG_VERSION_NUMBER`` for a plaintext
    client, ``TLSV1_ALERT_UNKNOWN_CA``, ...), else the error itself."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLError):
            reason = str(cause.reason or cause)
            if reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL"):
                reason += " (not a TLS client: one configured for PLAINTEXT?)"
            return reason
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def _peer_address(stream: trio.SocketStream) -> str:
    try:
        host, port = stream.socket.getpeername()[:2]
    except OSError:
        return "unknown peer"
    return f"{host}:{port}"


def _peer_ip(stream: trio.SocketStream) -> str:
    try:
        return normalised_ip(stream.socket.getpeername()[0])
    except OSError:
        return "unknown"
