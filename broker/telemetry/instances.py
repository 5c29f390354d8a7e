"""The broker's client instances (KIP-714), in memory as in Kafka: what each is asked for.

An instance is made at its first request (its identity fixed then), re-evaluated when the
subscriptions change, tied to the connection that last used it and forgotten when that
connection closes or after max(60 s, 3 push intervals) unused; at most MAX_INSTANCES are
kept. A restart loses them all: a client's old subscription id still matches (it derives
only from what it was asked for), so its next push is accepted. The throttling rules of
both APIs are here (``accept_get``, ``accept_push``); the package doc has the rest.
"""

from __future__ import annotations

import logging
import re
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.telemetry.subscription_ids import java_hash_set_order, subscription_id
from kafkette.broker.telemetry.subscriptions import store_of
from kafkette.wire.compression import CompressionType
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.security.session import Session
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.telemetry")

DEFAULT_INTERVAL_MS = 300_000  # interval.ms's default
TELEMETRY_MAX_BYTES = 1_048_576  # telemetry.max.bytes's default
DELTA_TEMPORALITY = True  # Kafka 4.0 always asks for delta temporality
ALL_METRICS = "*"
# Kafka 4.0's order in GetTelemetrySubscriptions' accepted_compression_types.
ACCEPTED_COMPRESSION_TYPES = (
    int(CompressionType.ZSTD),
    int(CompressionType.LZ4),
    int(CompressionType.GZIP),
    int(CompressionType.SNAPPY),
)
# A push may also come uncompressed.
PUSH_COMPRESSION_TYPES = frozenset({int(CompressionType.NONE), *ACCEPTED_COMPRESSION_TYPES})
UNKNOWN_SOFTWARE = "unknown"  # what Kafka records for a client that never said (ApiVersions < 3)
MAX_INSTANCES = 16_384  # instances remembered; the least recently seen is forgotten first
DECOMPRESS_THREADS = 2
MIN_IDLE_MS = 60_000  # an instance unused this long (or 3 push intervals) is forgotten
RESERVED_INSTANCE_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})  # Kafka's Uuid.RESERVED

_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def config_list(value: str | None) -> list[str]:
    """A Kafka LIST config's items (``a, b,c`` -> three), none for an empty value."""
    if value is None or not value.strip():
        return []
    return _LIST_SEPARATOR.split(value.strip())


def match_patterns(value: str | None) -> dict[str, re.Pattern[str]] | None:
    """``match``'s ``key=regex`` pairs; None if one does not compile here (matches no one)."""
    patterns = {}
    for pattern in config_list(value):
        key, _, regex = pattern.partition("=")
        try:
            patterns[key.strip()] = re.compile(regex.strip())
        except re.error:
            return None
    return patterns


@dataclass(frozen=True, slots=True)
class ClientIdentity:
    """What a subscription's ``match`` is tested against, fixed at an instance's first request."""

    client_id: str
    software_name: str
    software_version: str
    source_address: str
    source_port: str

    def attributes(self, instance_id: uuid.UUID) -> dict[str, str]:
        return {
            "client_instance_id": str(instance_id),
            "client_id": self.client_id,
            "client_software_name": self.software_name,
            "client_software_version": self.software_version,
            "client_source_address": self.source_address,
            "client_source_port": self.source_port,
        }


def matches(patterns: dict[str, re.Pattern[str]], attributes: dict[str, str]) -> bool:
    """Every pattern must match its attribute whole (Java's ``Matcher.matches``)."""
    return all(
        key in attributes and pattern.fullmatch(attributes[key]) is not None
        for key, pattern in patterns.items()
    )


@dataclass(slots=True)
class Subscription:
    """One client's view of the subscriptions: what it is asked for, and when it last spoke."""

    instance_id: uuid.UUID
    identity: ClientIdentity
    version: int  # of the subscriptions this was computed from
    metrics: list[str]
    push_interval_ms: int
    subscription_id: int
    last_get_ms: float = float("-inf")  # never: the first get and push are accepted
    last_push_ms: float = float("-inf")
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE  # of the last push (NONE after an accepted get)
    last_seen_ms: float = 0.0
    connection: int = 0  # id() of the Session that last used it (0: none)

    def idle_limit_ms(self) -> float:
        return max(MIN_IDLE_MS, 3 * self.push_interval_ms)


def evaluate(
    instance_id: uuid.UUID,
    identity: ClientIdentity,
    subscriptions: dict[str, dict[str, str]],
    version: int,
) -> Subscription:
    """The instance's subscription from every matching subscription's configs."""
    attributes = identity.attributes(instance_id)
    metrics: list[str] = []
    interval = DEFAULT_INTERVAL_MS
    everything = False
    for name in sorted(subscriptions):
        configs = subscriptions[name]
        patterns = match_patterns(configs.get("match"))
        if patterns is None or not matches(patterns, attributes):
            continue
        wanted = config_list(configs.get("metrics"))
        everything = everything or ALL_METRICS in wanted
        metrics.extend(m for m in wanted if m not in metrics)
        try:
            interval = min(interval, int(configs.get("interval.ms", DEFAULT_INTERVAL_MS)))
        except ValueError:
            pass
    ordered = [ALL_METRICS] if everything else java_hash_set_order(metrics)
    return Subscription(
        instance_id=instance_id,
        identity=identity,
        version=version,
        metrics=ordered,
        push_interval_ms=interval,
        subscription_id=subscription_id(ordered, interval, instance_id),
    )


def identity_of(peer: str, client_id: str | None, session: object) -> ClientIdentity:
    """The client's identity: its software as its connection's ApiVersions v3+ said
    (kept on the connection's Session, "unknown" when it never said)."""
    software = getattr(session, "client_software", None)
    name, version = software or (UNKNOWN_SOFTWARE, UNKNOWN_SOFTWARE)
    host, _, port = peer.rpartition(":")
    return ClientIdentity(client_id or "", name, version, host.strip("[]"), port)


@dataclass
class TelemetryState:
    """The broker's client instances, by instance id, least recently seen first."""

    instances: OrderedDict[uuid.UUID, Subscription] = field(default_factory=OrderedDict)
    # The subscriptions' content last seen, and a version bumped whenever it changes.
    seen_subscriptions: dict[str, dict[str, str]] = field(default_factory=dict)
    subscriptions_version: int = 0
    # id(Session) -> the instances that connection last used, dropped when it closes.
    by_connection: dict[int, set[uuid.UUID]] = field(default_factory=dict)
    # Payloads are decompressed (to check them) in at most this many worker threads,
    # not in trio's default limiter that other blocking work shares.
    decompress_limiter: trio.CapacityLimiter = field(
        default_factory=lambda: trio.CapacityLimiter(DECOMPRESS_THREADS)
    )

    def note_subscriptions(self, subscriptions: dict[str, dict[str, str]]) -> None:
        if subscriptions != self.seen_subscriptions:
            self.seen_subscriptions = subscriptions
            self.subscriptions_version += 1

    def instance(
        self,
        instance_id: uuid.UUID,
        identity: ClientIdentity,
        now_ms: float,
        session: Session | None = None,
    ) -> Subscription:
        """The instance, made at its first request and re-evaluated (throttling reset)
        after the subscriptions changed; tied to ``session``, the connection using it."""
        self.expire(now_ms)
        current = self.instances.get(instance_id)
        if current is None or current.version != self.subscriptions_version:
            keep = identity if current is None else current.identity
            current = evaluate(
                instance_id, keep, self.seen_subscriptions, self.subscriptions_version
            )
            self.instances[instance_id] = current
        current.last_seen_ms = now_ms
        self.instances.move_to_end(instance_id)
        if session is not None:
            self._tie(current, session)
        while len(self.instances) > MAX_INSTANCES:
            self._drop(next(iter(self.instances)))
        return current

    def _tie(self, instance: Subscription, session: Session) -> None:
        key = id(session)
        if instance.connection == key:
            return
        self._untie(instance)
        instance.connection = key
        tied = self.by_connection.get(key)
        if tied is None:
            tied = self.by_connection[key] = set()
            session.on_close.append(lambda: self.connection_closed(key))
        tied.add(instance.instance_id)

    def _untie(self, instance: Subscription) -> None:
        tied = self.by_connection.get(instance.connection)
        if tied is not None:
            tied.discard(instance.instance_id)
        instance.connection = 0

    def _drop(self, instance_id: uuid.UUID) -> None:
        instance = self.instances.pop(instance_id, None)
        if instance is not None:
            self._untie(instance)

    def connection_closed(self, key: int) -> None:
        """The instances the closed connection used last are forgotten (as Kafka's
        ClientConnectionDisconnectListener does); ``key`` is its Session's id()."""
        for instance_id in self.by_connection.pop(key, ()):
            instance = self.instances.pop(instance_id, None)
            if instance is not None:
                instance.connection = 0

    def expire(self, now_ms: float) -> None:
        """Forget instances unused for max(60 s, 3 push intervals), oldest first
        (stopping at the first one still fresh: the order is by last use)."""
        while self.instances:
            oldest = next(iter(self.instances.values()))
            if now_ms - oldest.last_seen_ms < oldest.idle_limit_ms():
                return
            self._drop(oldest.instance_id)

    def accept_get(self, instance: Subscription, now_ms: float) -> bool:
        """A get is accepted once a push interval has passed since the last accepted
        get or push (and then counts as the last get).

        Kafka 4.0's validateGetRequest means to let a get through after a push that
        failed with UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE, but its
        test (``error != A || error != B``) is always true: measured, such a get is
        throttled like any other, and so it is here. The last error is still kept."""
        last = max(instance.last_get_ms, instance.last_push_ms)
        if now_ms - last < instance.push_interval_ms:
            return False
        instance.last_get_ms = now_ms
        instance.last_error = ErrorCode.NONE
        return True

    def accept_push(self, instance: Subscription, now_ms: float) -> bool:
        """A push right after a get is accepted whenever it comes (clients jitter their
        interval), else once a push interval has passed since the last accepted push."""
        if instance.last_get_ms <= instance.last_push_ms:
            if now_ms - instance.last_push_ms < instance.push_interval_ms:
                return False
        instance.last_push_ms = now_ms
        return True


_states: weakref.WeakKeyDictionary[Broker, TelemetryState] = weakref.WeakKeyDictionary()


async def current_state(broker: Broker) -> TelemetryState:
    """The broker's telemetry state (made at first use and kept beside the broker, as
    its subscription store is), told the subscriptions as they are now.

    In a cluster they are read from ZooKeeper; when it cannot be reached the
    subscriptions last seen stand (one log line), so clients keep their answers."""
    state = _states.get(broker)
    if state is None:
        state = _states[broker] = TelemetryState()
    try:
        subscriptions = await store_of(broker).read()
    except StoreUnavailable as exc:
        log.warning("client metrics subscriptions not read (%s): the last seen stand", exc)
        return state
    state.note_subscriptions(subscriptions)
    return state
