"""Keeps a ``ClusterMetadata`` snapshot fresh from ZooKeeper watches.

Level-triggered: a watch firing only marks what it covers as dirty and wakes
the one refresh task; that task re-reads the dirty znodes (setting the next
watches as it reads, in one worker-thread batch), builds a new immutable
snapshot and publishes it. A burst of changes (a broker dying leads to many
state znodes being rewritten) is coalesced into few refreshes, and a change
is never missed: the watch is set by the read that sees the current value.

A new ZooKeeper session (after expiry) loses every watch: everything is
marked dirty and read again.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio
from kazoo.exceptions import NoNodeError

from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.metadata import (
    NO_LEADER,
    BrokerInfo,
    ClusterMetadata,
    PartitionState,
    TopicInfo,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.cluster")

# A moment to let a burst of watch events arrive before reading.
COALESCE_SECONDS = 0.005

BROKERS = ("brokers",)
TOPICS = ("topics",)
CONTROLLER = ("controller",)
DELETIONS = ("deletions",)
ROOT_KEYS = (BROKERS, TOPICS, CONTROLLER, DELETIONS)

Key = tuple  # ("brokers",) ("topic", t) ("state", t, p) ("config", t) ...


@dataclass
class _Cache:
    """What the znodes said when last read. Touched by one refresh at a time."""

    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    assignments: dict[str, tuple[znodes.TopicAssignment, int]] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    states: dict[tuple[str, int], PartitionState] = field(default_factory=dict)
    controller_id: int = NO_LEADER
    pending_deletions: frozenset[str] = frozenset()


class MetadataWatcher:
    """Publishes snapshots through ``publish`` (awaited; one at a time, in order)."""

    def __init__(
        self,
        session: ZkSession,
        cluster_id: str,
        publish: Callable[[ClusterMetadata], Awaitable[None]],
        inter_broker_listener: str = "PLAINTEXT",
    ) -> None:
        self.session = session
        # The listener whose endpoint BrokerInfo.host/port name: where brokers dial.
        self.inter_broker_listener = inter_broker_listener
        self.cluster_id = cluster_id
        self._publish = publish
        self._cache = _Cache()
        # The id each topic had when last seen with one: a topic znode rewritten without
        # its id (an old tool) keeps it, rather than vanish from the snapshot (which
        # would delete every broker's local logs of it) and come back as a new topic.
        self._known_topic_ids: dict[str, uuid.UUID] = {}
        self._dirty: set[Key] = set(ROOT_KEYS)
        self._resync = False  # mark_all: add every cached key at the next refresh
        self._wake = trio.Event()
        self._watchers: dict[Key, Callable[[object], None]] = {}

    def mark(self, key: Key) -> None:
        """Trio loop: ``key`` changed; refresh soon."""
        self._dirty.add(key)
        self._wake.set()

    def mark_all(self) -> None:
        """A new session: watches are gone, read everything again.

        Only flags it: a refresh's worker thread may be changing the cache right now (kazoo
        runs queued reads as it reconnects, when this is called), so the cache's keys are
        listed by ``refresh`` on the loop, before its next thread starts."""
        self._dirty.update(ROOT_KEYS)
        self._resync = True
        self._wake.set()

    def _watch(self, key: Key) -> Callable[[object], None]:
        # One function per key, so kazoo (which keeps watchers in a set) holds it once.
        watcher = self._watchers.get(key)
        if watcher is None:
            watcher = self._watchers[key] = self.session.watcher(lambda: self.mark(key))
        return watcher

    async def refresh(self) -> ClusterMetadata:
        """Read what is dirty and return the new snapshot (without publishing it)."""
        if self._resync:  # no read runs now: the cache holds still while listed
            self._resync = False
            for topic in self._cache.assignments:
                self._dirty.update({("topic", topic), ("config", topic)})
            self._dirty.update(("state", t, p) for t, p in self._cache.states)
        dirty, self._dirty = self._dirty, set()
        self._wake = trio.Event()
        try:
            await self.session.run(self._read, dirty)
        except BaseException:
            self._dirty |= dirty  # read again next time
            raise
        return self.snapshot()

    async def run(self) -> None:
        """Refresh and publish whenever something is dirty, forever."""
        while True:
            if not self._dirty:
                await self._wake.wait()
            await trio.sleep(COALESCE_SECONDS)
            try:
                snapshot = await self.refresh()
            except Exception as exc:  # ConnectionLoss while ZooKeeper is away: retry
                log.warning("reading cluster metadata from ZooKeeper failed: %r; retrying", exc)
                await trio.sleep(1.0)
                continue
            await self._publish(snapshot)

    def snapshot(self) -> ClusterMetadata:
        cache = self._cache
        topics = {}
        restore = set()
        for name, (assignment, version) in cache.assignments.items():
            topic_id = assignment.topic_id or self._known_topic_ids.get(name)
            if topic_id is None:
                continue  # written without an id by an old tool: the controller adds one
            if assignment.topic_id is None:
                restore.add(name)
            self._known_topic_ids[name] = topic_id
            topics[name] = TopicInfo(
                name, topic_id, dict(assignment.replicas),
                dict(cache.configs.get(name, {})), version,
                dict(assignment.adding), dict(assignment.removing),
            )
        states = {k: v for k, v in cache.states.items() if k[0] in topics}
        return ClusterMetadata(
            cluster_id=self.cluster_id,
            controller_id=cache.controller_id,
            brokers=dict(cache.brokers),
            topics=topics,
            states=states,
            pending_deletions=cache.pending_deletions,
            ids_to_restore=frozenset(restore),
        )

    # Worker thread ----------------------------------------------------------------

    def _read(self, client: KazooClient, dirty: set[Key]) -> None:
        """Re-read every dirty key, setting its watch; may add keys as it learns of them."""
        cache = self._cache
        work = sorted(dirty, key=_order)
        while work:
            key = work.pop(0)
            kind = key[0]
            if kind == "brokers":
                cache.brokers = self._read_brokers(client)
            elif kind == "topics":
                names = set(client.get_children(znodes.BROKER_TOPICS, watch=self._watch(key)))
                for gone in set(cache.assignments) - names:
                    self._forget_topic(gone)
                for new in sorted(names - set(cache.assignments)):
                    work += [("topic", new), ("config", new)]
            elif kind == "topic":
                work += self._read_topic(client, key[1])
            elif kind == "config":
                cache.configs[key[1]] = self._read_config(client, key[1])
            elif kind == "state":
                self._read_state(client, key[1], key[2])
            elif kind == "controller":
                cache.controller_id = self._read_controller(client)
            elif kind == "deletions":
                cache.pending_deletions = frozenset(
                    client.get_children(znodes.DELETE_TOPICS, watch=self._watch(key))
                )

    def _read_brokers(self, client: KazooClient) -> dict[int, BrokerInfo]:
        brokers = {}
        for child in client.get_children(znodes.BROKER_IDS, watch=self._watch(BROKERS)):
            try:
                data, stat = client.get(znodes.broker_path(int(child)))
                host, port, rack = znodes.decode_broker(data, self.inter_broker_listener)
                endpoints = znodes.decode_broker_endpoints(data)
                registry = znodes.decode_broker_schema_registry(data)
            except NoNodeError:
                continue  # gone meanwhile: the children watch fires again
            except (ValueError, KeyError, TypeError) as exc:  # one broker's bad znode
                log.warning("ignoring broker registration %s: %s", child, exc)
                continue
            brokers[int(child)] = BrokerInfo(
                int(child), host, port, rack, stat.czxid, endpoints, registry
            )
        return brokers

    def _read_topic(self, client: KazooClient, topic: str) -> list[Key]:
        cache = self._cache
        try:
            data, stat = client.get(znodes.topic_path(topic), watch=self._watch(("topic", topic)))
        except NoNodeError:
            self._forget_topic(topic)
            return []
        try:
            assignment = znodes.decode_topic(data)
        except (ValueError, KeyError) as exc:
            log.warning("ignoring topic %s: unreadable assignment (%s)", topic, exc)
            return []
        cache.assignments[topic] = (assignment, stat.version)
        return [
            ("state", topic, p)
            for p in assignment.replicas
            if (topic, p) not in cache.states
        ]

    def _forget_topic(self, topic: str) -> None:
        cache = self._cache
        cache.assignments.pop(topic, None)
        cache.configs.pop(topic, None)
        self._known_topic_ids.pop(topic, None)
        for key in [k for k in cache.states if k[0] == topic]:
            del cache.states[key]

    def _read_config(self, client: KazooClient, topic: str) -> dict[str, str]:
        path = znodes.topic_config_path(topic)
        watch = self._watch(("config", topic))
        while True:
            try:
                data, _ = client.get(path, watch=watch)
                return znodes.decode_topic_config(data)
            except NoNodeError:
                if client.exists(path, watch=watch) is None:
                    return {}
            except (ValueError, KeyError) as exc:
                log.warning("ignoring configs of topic %s: %s", topic, exc)
                return {}

    def _read_state(self, client: KazooClient, topic: str, partition: int) -> None:
        cache = self._cache
        if topic not in cache.assignments:
            cache.states.pop((topic, partition), None)
            return
        path = znodes.state_path(topic, partition)
        watch = self._watch(("state", topic, partition))
        while True:
            try:
                data, stat = client.get(path, watch=watch)
            except NoNodeError:
                cache.states.pop((topic, partition), None)
                if client.exists(path, watch=watch) is None:
                    return
                continue
            try:
                doc = znodes.decode_state(data)
            except (ValueError, KeyError) as exc:
                log.warning("ignoring state of %s-%d: %s", topic, partition, exc)
                return
            cache.states[(topic, partition)] = PartitionState(
                doc.leader, doc.leader_epoch, doc.isr, doc.controller_epoch, stat.version
            )
            return

    def _read_controller(self, client: KazooClient) -> int:
        watch = self._watch(CONTROLLER)
        while True:
            try:
                data, _ = client.get(znodes.CONTROLLER, watch=watch)
                return znodes.decode_controller(data)
            except NoNodeError:
                if client.exists(znodes.CONTROLLER, watch=watch) is None:
                    return NO_LEADER
            except (ValueError, KeyError):
                return NO_LEADER


def _order(key: Key) -> int:
    # Brokers and the topic list first: what follows depends on them.
    return {"brokers": 0, "topics": 1, "controller": 2, "deletions": 3}.get(key[0], 4)
