"""The broker: storage, listeners, background jobs and graceful shutdown.

``Broker.run`` opens the data dir (recovering it if the last stop was not
clean), listens, reports its bound address through ``task_status.started``,
and serves until ``request_stop``. Shutdown goes in steps, as a Kafka broker
does: stop accepting, let in-flight requests finish within a grace period
(long-polling fetches are woken to answer at once), close connections, then
flush every log and write the clean-shutdown marker.
"""

from __future__ import annotations

import logging
import socket
import time
from dataclasses import dataclass

import trio

from kafkette.broker.clock import now_ms
from kafkette.broker.config import BrokerConfig
from kafkette.broker.connection import serve_connection
from kafkette.broker.group_coordinator import GroupCoordinator
from kafkette.broker.identity import load_or_create_cluster_id
from kafkette.broker.partition import Partition
from kafkette.broker.producer_ids import ProducerIdAllocator
from kafkette.broker.throttled_log import describe_error, storage_errors
from kafkette.broker.topics import TopicRegistry
from kafkette.log import DataDir

log = logging.getLogger("kafkette.server")

SHUTDOWN_GRACE_SECONDS = 10.0
FLUSH_CHECK_MAX_MS = 60_000


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def parse_endpoint(text: str) -> Endpoint:
    """``HOST:PORT`` (``[v6]:PORT`` too); raises ValueError."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return Endpoint(host.strip("[]") or "0.0.0.0", int(port))


class Broker:
    """One kafkette node. Create it, then ``await run()`` inside trio."""

    def __init__(
        self,
        config: BrokerConfig,
        listen: Endpoint,
        advertised: Endpoint | None = None,
    ) -> None:
        self.config = config
        self.listen = listen
        self._advertised_request = advertised
        self.advertised: Endpoint = advertised or listen
        self.node_id = config.node_id
        self.cluster_id = ""
        self.closing = False
        self.requests_in_flight = 0
        self.data_dir: DataDir | None = None
        self.topics: TopicRegistry
        self.groups: GroupCoordinator
        self.producer_ids: ProducerIdAllocator
        self._stop = trio.Event()

    # Lifecycle ---------------------------------------------------------------

    def request_stop(self) -> None:
        """Begin graceful shutdown (call from the event loop)."""
        self._stop.set()

    async def run(
        self, *, task_status: trio.TaskStatus[Endpoint] = trio.TASK_STATUS_IGNORED
    ) -> None:
        await self._open_storage()
        try:
            listeners = await trio.open_tcp_listeners(self.listen.port, host=self.listen.host)
            bound = listeners[0].socket.getsockname()
            self.advertised = self._advertised_for(bound[1])
            log.info("listening on %s:%d, advertising %s", bound[0], bound[1], self.advertised)
            async with trio.open_nursery() as connections:
                async with trio.open_nursery() as background:
                    background.start_soon(self._serve, listeners, connections)
                    background.start_soon(self._housekeeping)
                    await self.groups.start(background)
                    task_status.started(Endpoint(self.listen.host, bound[1]))
                    await self._stop.wait()
                    background.cancel_scope.cancel()
                await self._drain(connections)
        finally:
            with trio.CancelScope(shield=True):
                await self._close_storage()

    async def _serve(self, listeners: list[trio.SocketListener], nursery: trio.Nursery) -> None:
        async def handler(stream: trio.SocketStream) -> None:
            await serve_connection(self, stream)

        await trio.serve_listeners(handler, listeners, handler_nursery=nursery)

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

    def _advertised_for(self, bound_port: int) -> Endpoint:
        if self._advertised_request is not None:
            port = self._advertised_request.port or bound_port
            return Endpoint(self._advertised_request.host, port)
        host = self.listen.host
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
            log.info("listening on all interfaces: advertising host name %s", host)
        return Endpoint(host, bound_port)

    async def _open_storage(self) -> None:
        def open_all() -> DataDir:
            self.config.data_dir.mkdir(parents=True, exist_ok=True)
            self.cluster_id = load_or_create_cluster_id(self.config.data_dir, self.node_id)
            self.producer_ids = ProducerIdAllocator(self.config.data_dir)
            return DataDir.open(self.config.data_dir, self.config.log, now_ms)

        started = time.perf_counter()
        self.data_dir = await trio.to_thread.run_sync(open_all)
        self.topics = TopicRegistry(self.data_dir, self.config)
        self.groups = GroupCoordinator(self)
        await self.groups.load()
        log.info(
            "data dir %s open: %d topics in %.3fs",
            self.config.data_dir,
            len(self.topics.names),
            time.perf_counter() - started,
        )

    async def _close_storage(self) -> None:
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


def _run_log_jobs(partitions: list[Partition], retention: bool) -> None:
    """Worker thread: retention (when due) and the flush check on every partition."""
    for partition in partitions:
        try:
            if retention:
                partition.log.apply_retention()
            partition.log.maybe_flush()
        except Exception as exc:  # a full disk fails every checkpoint: one line a minute
            storage_errors.failure("housekeeping of", f"{partition.topic}-{partition.index}", exc)
