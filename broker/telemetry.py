"""Client telemetry (KIP-714) as a Kafka 4.0 broker without a metrics plugin answers it.

A client asks GetTelemetrySubscriptions for what to collect (the metrics of every
client-metrics subscription whose ``match`` fits it, the shortest of their push
intervals) and then pushes them with PushTelemetry. With no ClientTelemetryReceiver
plugin Kafka 4.0 leaves both APIs out of ApiVersions, yet still serves them: it
assigns instance ids, computes subscription ids, throttles, checks and decompresses
the payload, and then hands it to no one. kafkette does the same and keeps nothing
of a payload.

What a client is, per instance id, lives here in memory (as in Kafka: lost at a
restart, after which a client's next push gets UNKNOWN_SUBSCRIPTION_ID or is throttled
and it asks again). Every behaviour below was measured against Kafka 4.0.0:

- the subscription id is CRC32C of Java's ``HashSet.toString()`` of the requested
  metrics followed by the push interval, XORed with the instance id's Java hash, so
  the metrics are listed in Java's HashSet order and a client sees exactly the ids a
  Kafka broker would give it;
- a subscription with ``*`` among its metrics asks for everything: the list is ``["*"]``;
- any change to the subscriptions re-evaluates an instance at its next request (with
  the identity recorded at its first), and that re-evaluation resets its throttling;
- GetTelemetrySubscriptions is throttled (THROTTLING_QUOTA_EXCEEDED) until a push
  interval has passed since the instance's last accepted get or push;
- PushTelemetry checks, in this order: a terminating instance (INVALID_REQUEST), the
  terminating flag is then recorded, throttling unless terminating (a push right after
  a get is always accepted), the subscription id (UNKNOWN_SUBSCRIPTION_ID), the
  compression (UNSUPPORTED_COMPRESSION_TYPE), the size (TELEMETRY_TOO_LARGE), and that
  the payload decompresses (INVALID_RECORD).
"""

from __future__ import annotations

import re
import uuid
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkette.wire.checksum import crc32c
from kafkette.wire.compression import CompressionType

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

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
MAX_SOFTWARE_ENTRIES = 65_536  # connections whose ApiVersions software name is remembered
RESERVED_INSTANCE_IDS = frozenset({uuid.UUID(int=0), uuid.UUID(int=1)})  # Kafka's Uuid.RESERVED

_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _java_string_hash(text: str) -> int:
    encoded = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(encoded), 2):
        h = (31 * h + int.from_bytes(encoded[i : i + 2], "big")) & 0xFFFFFFFF
    return h


def java_hash_set_order(items: list[str]) -> list[str]:
    """``items`` (distinct, in insertion order) as a ``java.util.HashSet`` built by adding
    them one by one iterates them: by bucket of the spread String hash in a table that
    starts at 16 and doubles past a 0.75 load, ties in insertion order."""
    capacity = 16
    while len(items) > capacity * 3 // 4:
        capacity *= 2

    def bucket(text: str) -> int:
        h = _java_string_hash(text)
        return (h ^ (h >> 16)) & (capacity - 1)

    return [text for _, _, text in sorted((bucket(t), i, t) for i, t in enumerate(items))]


def java_uuid_hash(instance_id: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode()``: the two halves XORed, then folded to 32 bits."""
    h = (instance_id.int >> 64) ^ (instance_id.int & 0xFFFF_FFFF_FFFF_FFFF)
    return _int32((h >> 32) ^ (h & 0xFFFFFFFF))


def subscription_id(metrics: list[str], push_interval_ms: int, instance_id: uuid.UUID) -> int:
    """The id Kafka 4.0 gives this subscription of this instance (see the module doc)."""
    text = "[" + ", ".join(metrics) + "]" + str(push_interval_ms)
    return _int32(crc32c(text.encode()) ^ java_uuid_hash(instance_id))


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


@dataclass
class TelemetryState:
    """The broker's client instances and the software names connections announced."""

    instances: OrderedDict[uuid.UUID, Subscription] = field(default_factory=OrderedDict)
    # peer ("host:port") -> (software name, version) from its ApiVersions v3+
    software: OrderedDict[str, tuple[str, str]] = field(default_factory=OrderedDict)
    # The subscriptions' content last seen, and a version bumped whenever it changes.
    seen_subscriptions: dict[str, dict[str, str]] = field(default_factory=dict)
    subscriptions_version: int = 0

    def remember_software(self, peer: str, name: str | None, version: str | None) -> None:
        self.software[peer] = (name or UNKNOWN_SOFTWARE, version or UNKNOWN_SOFTWARE)
        self.software.move_to_end(peer)
        while len(self.software) > MAX_SOFTWARE_ENTRIES:
            self.software.popitem(last=False)

    def identity(self, peer: str, client_id: str | None) -> ClientIdentity:
        name, version = self.software.get(peer, (UNKNOWN_SOFTWARE, UNKNOWN_SOFTWARE))
        host, _, port = peer.rpartition(":")
        return ClientIdentity(client_id or "", name, version, host.strip("[]"), port)

    def note_subscriptions(self, subscriptions: dict[str, dict[str, str]]) -> None:
        if subscriptions != self.seen_subscriptions:
            self.seen_subscriptions = subscriptions
            self.subscriptions_version += 1

    def instance(self, instance_id: uuid.UUID, identity: ClientIdentity) -> Subscription:
        """The instance, made at its first request and re-evaluated (throttling reset)
        after the subscriptions changed."""
        current = self.instances.get(instance_id)
        if current is None or current.version != self.subscriptions_version:
            keep = identity if current is None else current.identity
            current = evaluate(
                instance_id, keep, self.seen_subscriptions, self.subscriptions_version
            )
            self.instances[instance_id] = current
        self.instances.move_to_end(instance_id)
        while len(self.instances) > MAX_INSTANCES:
            self.instances.popitem(last=False)
        return current

    def accept_get(self, instance: Subscription, now_ms: float) -> bool:
        """A get is accepted once a push interval has passed since the last accepted
        get or push (and then counts as the last get)."""
        last = max(instance.last_get_ms, instance.last_push_ms)
        if now_ms - last < instance.push_interval_ms:
            return False
        instance.last_get_ms = now_ms
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


def state_of(broker: Broker) -> TelemetryState:
    """The broker's telemetry state, made at first use (kept beside the broker, as the
    client metrics store is, so the broker needs no field for it)."""
    state = _states.get(broker)
    if state is None:
        state = _states[broker] = TelemetryState()
    return state
