"""Client metrics subscriptions (KIP-714): the CLIENT_METRICS config resources.

``kafka-client-metrics.sh`` manages named subscriptions with three configs:
``metrics`` (metric name prefixes to collect), ``interval.ms`` (push interval,
100 to 3,600,000; Kafka's default 300,000) and ``match`` (``key=regex`` pairs on
the client's identity). They are config resources of type 16, set with
(Incremental)AlterConfigs, read with DescribeConfigs, listed with
ListClientMetricsResources; a subscription whose last config is deleted is gone.

Checks and messages are Kafka 4.0's. The subscriptions are durable like topic
configs: ``client-metrics.json`` in the data dir, read at start (a damaged file
stops the start) and replaced atomically on every change before the change is
acknowledged. A cluster keeps them in ZooKeeper, shared by every broker as Kafka
shares them in its metadata (``client_metrics_zk.py``).
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkette.log.checkpoint import atomic_write
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.client_metrics_zk import ZkSubscriptionStore
    from kafkette.broker.server import Broker

FILE_NAME = "client-metrics.json"
METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_NAMES = (INTERVAL_MS, MATCH, METRICS)
INTERVAL_MIN_MS, INTERVAL_MAX_MS = 100, 3_600_000
MATCH_KEYS = frozenset({
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
})
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}


class SubscriptionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_name(name: str) -> None:
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")


def _check_value(name: str, value: str) -> None:
    if name not in CONFIG_NAMES:
        raise SubscriptionError(
            ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {name}"
        )
    if name == INTERVAL_MS:
        try:
            interval = int(value.strip())
        except ValueError:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {value} for configuration {name}: Not a number of type INT",
            ) from None
        if not INTERVAL_MIN_MS <= interval <= INTERVAL_MAX_MS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {interval} for interval.ms, interval must be between "
                f"{INTERVAL_MIN_MS} and {INTERVAL_MAX_MS} (1 hour)",
            )
    elif name == MATCH:
        _check_match(value)


def _check_match(value: str) -> None:
    """``key=regex`` items, comma separated, as Kafka parses them: an empty value is no
    pattern, an empty item is refused, and an item must split on ``=`` into exactly a
    known key and a regex (Java's split, trailing empty parts dropped). The regex is
    compiled by Python's ``re``, which differs from Java's in corner cases."""
    if not value.strip():
        return
    for pattern in (p.strip() for p in value.split(",")):
        parts = pattern.split("=")
        while parts and not parts[-1]:
            parts.pop()
        if len(parts) != 2 or parts[0].strip() not in MATCH_KEYS:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
            )
        try:
            re.compile(parts[1].strip())
        except re.error:
            raise SubscriptionError(  # Kafka 4.0's answer for a bad regex too (measured)
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
            ) from None


def _check_set(configs: dict[str, str]) -> None:
    """The final config set, as Kafka validates it: names first, then values."""
    for name in configs:
        if name not in CONFIG_NAMES:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {name}"
            )
    for name, value in configs.items():
        _check_value(name, value)


def apply_changes(current: dict[str, str], changes: list[dict]) -> dict[str, str]:
    """IncrementalAlterConfigs on one subscription: the new config set, or raises.

    Kafka 4.0's order (measured): a null value for anything but DELETE, then APPEND /
    SUBTRACT (refused for every client metrics config, known or not), then the final
    set is validated, so a DELETE of a key that is not set, or not known, passes."""
    names = [change["name"] for change in changes]
    if len(set(names)) != len(names):
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    for change in changes:
        name, op, value = change["name"], change["config_operation"], change["value"]
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
        if op != OP_DELETE and value is None:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}"
            )
    for change in changes:
        op, name = change["config_operation"], change["name"]
        if op in _OP_NAMES:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.",
            )
    configs = dict(current)
    for change in changes:
        if change["config_operation"] == OP_SET:
            configs[change["name"]] = change["value"]
        else:
            configs.pop(change["name"], None)
    _check_set(configs)
    return configs


def replace_all(entries: list[dict]) -> dict[str, str]:
    """AlterConfigs on one subscription: the request's entries become its whole set."""
    configs = {e["name"]: e["value"] for e in entries if e["value"] is not None}
    _check_set(configs)
    return configs


class ClientMetricsFileError(ValueError):
    """``client-metrics.json`` cannot be read: the broker refuses to start (one line)
    rather than fail every client metrics request with it."""


class SubscriptionStore:
    """The subscriptions, in memory and in ``client-metrics.json``.

    Read once at start (``open_client_metrics``). Changes are serialized by a trio
    lock and written in a worker thread (an fsync), and the in-memory view changes
    only once the file holds the change.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._subscriptions: dict[str, dict[str, str]] | None = None
        self._lock = trio.Lock()

    async def load(self) -> None:
        """Read the file (in a worker thread) unless already read: under the lock, so
        a read that ends after an alteration can never install the older set."""
        async with self._lock:
            await self._load_locked()

    async def _load_locked(self) -> dict[str, dict[str, str]]:
        if self._subscriptions is None:
            self._subscriptions = await trio.to_thread.run_sync(self._read)
        return self._subscriptions

    async def _loaded(self) -> dict[str, dict[str, str]]:
        if self._subscriptions is None:
            await self.load()
        assert self._subscriptions is not None
        return self._subscriptions

    def _read(self) -> dict[str, dict[str, str]]:
        try:
            raw = json.loads(self._path.read_text())
            return {
                str(name): {str(k): str(v) for k, v in configs.items()}
                for name, configs in raw["subscriptions"].items()
            }
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ClientMetricsFileError(
                f"cannot read client metrics subscriptions {self._path}: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    async def names(self) -> list[str]:
        return sorted(await self._loaded())

    async def configs(self, name: str) -> dict[str, str]:
        return dict((await self._loaded()).get(name, {}))

    async def update(
        self,
        name: str,
        change: Callable[[dict[str, str]], dict[str, str]],
        *,
        validate_only: bool = False,
    ) -> dict[str, str]:
        """Apply ``change`` to the subscription's configs (it may raise) and, unless
        ``validate_only``, make the result its set durably (an empty set removes it).

        Read, change and write happen under one lock, so two concurrent alterations
        of a subscription never lose one another's change."""
        async with self._lock:
            current = await self._load_locked()
            configs = change(dict(current.get(name, {})))
            if validate_only:
                return configs
            updated = {k: v for k, v in current.items() if k != name}
            if configs:
                updated[name] = dict(configs)
            data = json.dumps({"version": 1, "subscriptions": updated}, indent=1, sort_keys=True)
            await trio.to_thread.run_sync(atomic_write, self._path, data.encode())
            self._subscriptions = updated
            return configs


_stores: weakref.WeakKeyDictionary[Broker, SubscriptionStore | ZkSubscriptionStore] = (
    weakref.WeakKeyDictionary()
)


def store_of(broker: Broker) -> SubscriptionStore | ZkSubscriptionStore:
    """The broker's subscription store: a cluster's in ZooKeeper (client_metrics_zk.py),
    else the data dir's file. Kept beside the broker, so that the broker itself needs
    no field for a feature most deployments never use."""
    store = _stores.get(broker)
    if store is None:
        if broker.cluster is not None:
            from kafkette.broker.client_metrics_zk import ZkSubscriptionStore

            store = ZkSubscriptionStore(broker.cluster.session)
        else:
            store = SubscriptionStore(Path(broker.config.data_dir) / FILE_NAME)
        _stores[broker] = store
    return store


async def open_client_metrics(broker: Broker) -> None:
    """Read the broker's subscriptions at start: a damaged file raises
    ``ClientMetricsFileError`` and the start stops, as for the quotas file."""
    await store_of(broker).load()
