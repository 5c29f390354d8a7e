"""Who may write the registry: the broker that leads ``_schemas``-0.

No election of its own (Confluent's group ``schema-registry`` would need an in-broker group
client, and its elected member would still not be the partition's leader): the controller
already elects a leader for ``_schemas``-0, and the append path refuses a broker that stopped
leading it. A single node always leads.

Ids never collide after a failover: a broker that becomes leader first applies everything its
log holds from earlier leaders (up to its log end when it took over, once committed), then
appends a NOOP carrying the highest id it knows and waits until that is applied; only then
does it plan writes. Each leadership gets a new ``token``, checked under the partition's append
lock, so a write planned in an earlier leadership is never appended in a later one. A write
whose outcome is unknown (``UncertainWrite``: its batch may be in the log, not yet applied)
makes the leader take over again (``write_uncertain``): the next write is planned only once
the log up to its end is applied, so it cannot plan against a state lacking that write.

``leader_url`` is the registry URL the leader publishes in its ZooKeeper registration
(``kafkette_schema_registry``): where a follower forwards writes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import trio

from kafkette.broker.schema_registry.errors import NotLeader, RegistryError
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.schema_registry.store import SchemaStore
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.schema_registry")

RETRY_S = 0.5


class RegistryLeadership:
    def __init__(self, broker: Broker, store: SchemaStore, url: str) -> None:
        self.broker = broker
        self.store = store
        self.url = url
        self.token: int | None = None  # this leadership, while this broker leads
        self.ready = False  # the takeover is done: writes may be planned
        self._tokens = 0
        self._tenure: int | None = None  # the partition leadership ``token`` was taken in
        self._changed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._creating = False
        self._under_replicated_said = False

    @property
    def is_leader(self) -> bool:
        return self.token is not None and self.ready

    async def start(self, nursery: trio.Nursery) -> None:
        """Single node: take over now (the registry writes as soon as the broker is
        ready). Cluster: follow the cluster's view of ``_schemas``-0's leader."""
        self._nursery = nursery
        cluster = self.broker.cluster
        if cluster is None:
            self._tokens = self.token = 1
            # Done at once, normally; a failing disk does not hold the broker's start (writes
            # then wait in ``writable``, and answer 50004).
            self._start_soon(self._take_over, 1)
            await self._wait_changed(self.store.timeout_s)
            return
        cluster.add_listener(self._on_metadata)
        await self._on_metadata(cluster.metadata)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    # -- who leads ----------------------------------------------------------------------

    def _led_tenure(self, metadata: ClusterMetadata) -> int | None:
        """The replica manager's leadership tenure of ``_schemas``-0 if this broker leads
        it and serves it as leader (as ``ShareCoordinator._led`` decides), else None. A new
        epoch with no other leader between keeps the tenure (and this registry's token)."""
        from kafkette.broker.partitions import Partition

        cluster = self.broker.cluster
        state = metadata.states.get((self.store.topic, 0))
        if cluster is None or state is None or state.leader != cluster.broker_id:
            return None
        partition = self.broker.topics.serving(self.store.topic, 0)
        if not isinstance(partition, Partition):
            return None
        return partition.leader_tenure()

    async def _on_metadata(self, metadata: ClusterMetadata) -> None:
        tenure = self._led_tenure(metadata)
        if tenure is not None and (self.token is None or tenure != self._tenure):
            self._tokens += 1
            self.token, self._tenure, self.ready = self._tokens, tenure, False
            self._start_soon(self._take_over, self.token)
        elif tenure is None and self.token is not None:
            log.info(
                "no longer the schema registry's leader (%s-0 is led elsewhere)", self.store.topic
            )
            self.token, self.ready = None, False
        # Judged by this snapshot: ``cluster.metadata`` shows it only after the listeners.
        if not self._creating and not self.store.exists(metadata):
            if self.store.creatable(metadata):
                self._creating = True
                self._start_soon(self._create_topic, metadata)
        self.store.poke()
        self._notify()

    def _start_soon(self, task: Callable[..., object], *args: object) -> None:
        assert self._nursery is not None
        try:
            self._nursery.start_soon(task, *args)  # type: ignore[arg-type]
        except RuntimeError:  # the broker is stopping
            pass

    async def _create_topic(self, metadata: ClusterMetadata) -> None:
        try:
            await self.store.ensure_topic(metadata=metadata)
        except Exception as exc:  # StartupError, ZooKeeper away: the next write tries again
            log.warning("cannot create %s: %s", self.store.topic, exc)
        finally:
            self._creating = False

    def check(self, token: int) -> Callable[[], ErrorCode]:
        """For the append: is leadership ``token`` still this broker's? (asked under the
        partition's append lock)."""

        def still_leading() -> ErrorCode:
            if self.token != token:
                return ErrorCode.NOT_LEADER_OR_FOLLOWER
            if self.broker.cluster is not None:  # lost and regained since the last snapshot?
                partition = self.broker.topics.partition(self.store.topic, 0)
                if partition is None or partition.leader_tenure() != self._tenure:
                    return ErrorCode.NOT_LEADER_OR_FOLLOWER
            return ErrorCode.NONE

        return still_leading

    # -- taking over --------------------------------------------------------------------

    async def _take_over(self, token: int) -> None:
        """Apply what earlier leaders wrote, append NOOP(max id), wait until it is
        applied, then accept writes; again after a failed attempt while still leading."""
        store = self.store
        while self.token == token:
            partition = self.broker.topics.partition(store.topic, 0)
            if partition is None:
                if self.broker.cluster is None:
                    return  # no topic on a single node: ensure_topic failed the start
                await self._wait_changed(RETRY_S)
                continue
            # Everything this replica holds from earlier leaders is committed once its
            # high watermark passes its log end at takeover: apply it all first, so the
            # NOOP's max id is the true one.
            if not await store.wait_applied(partition.log_end_offset, store.timeout_s):
                continue
            state = store.state
            if self.broker.cluster is None and state.max_id() == 0:
                break  # a fresh single node: nothing to carry
            plan = state.plan_noop()
            try:
                await store.append(
                    plan.records, check=self.check(token),
                    failed="Error while taking over as the schema registry's leader",
                    timed_out="Taking over as the schema registry's leader timed out",
                )  # fmt: skip
            except NotLeader:
                await self._wait_changed(RETRY_S)
                continue
            except RegistryError as exc:
                log.warning("schema registry takeover: %s; retrying", exc.message)
                await trio.sleep(RETRY_S)
                continue
            break
        if self.token == token:
            self.ready = True
            log.info("schema registry leader (max id %d)", store.state.max_id())
            self._notify()

    def write_uncertain(self, token: int) -> None:
        """A write of leadership ``token`` failed with its outcome unknown: no write is
        planned until the log is applied up to its end again (a new takeover)."""
        if self.token != token or not self.ready:
            return
        log.warning(
            "schema registry: a write to %s may still commit; reading the log to its end"
            " before the next write",
            self.store.topic,
        )
        self.ready = False
        self._notify()
        self._start_soon(self._take_over, token)

    async def _wait_changed(self, timeout_s: float) -> None:
        with trio.move_on_after(timeout_s):
            await self._changed.wait()

    # -- what writes ask ----------------------------------------------------------------

    async def writable(self) -> int:
        """This broker's leadership token once it may write (a takeover in progress is
        waited for, at most ``kafkastore.timeout.ms``); else ``NotLeader(url)``: the
        leader's registry URL, None when there is no leader with a registry."""
        with trio.move_on_after(self.store.timeout_s):
            while True:
                if not self.store.exists():  # not made yet (a cluster), or deleted
                    await self._create_for_write()
                if self.token is not None and self.ready:
                    return self.token
                if self.token is None:
                    url = self.other_leader_url()
                    if url is not None:
                        raise NotLeader(url)
                await self._wait_changed(RETRY_S)
        raise NotLeader(self.other_leader_url())

    async def _create_for_write(self) -> None:
        """A write needs the topic: created now even with fewer live brokers than its
        replication factor (said once: it stays under-replicated until reassigned)."""
        from kafkette.broker.server import StartupError

        if not self.store.creatable() and not self._under_replicated_said:
            self._under_replicated_said = True
            log.warning(
                "creating %s for a write with fewer live brokers than"
                " kafkastore.topic.replication.factor (%d): its replication factor stays"
                " lower unless its partition is reassigned",
                self.store.topic,
                self.store.config.kafkastore_topic_replication_factor,
            )
        try:
            await self.store.ensure_topic()
        except StartupError as exc:
            log.warning("cannot create %s: %s", self.store.topic, exc)

    def leader_url(self) -> str | None:
        """The registry URL of ``_schemas``-0's leader (this one's when it leads; a
        single node always does); None when there is none or it has no registry."""
        cluster = self.broker.cluster
        if cluster is None:
            return self.url
        leader = cluster.metadata.leader_of(self.store.topic, 0)
        if leader < 0:
            return None
        if leader == cluster.broker_id:
            return self.url
        info = cluster.metadata.brokers.get(leader)
        return None if info is None else info.schema_registry_url

    def other_leader_url(self) -> str | None:
        """``leader_url`` unless that is this broker's (still taking over, or its view is
        behind): a write is never forwarded to itself."""
        url = self.leader_url()
        return None if url == self.url else url
