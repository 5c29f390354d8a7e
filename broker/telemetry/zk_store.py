"""A cluster's client metrics subscriptions, in ZooKeeper: ``/config/client-metrics/<name>``.

Kafka keeps subscriptions in its cluster metadata, so every broker answers the same
``kafka-client-metrics.sh --list/--describe`` whichever it is asked; a cluster of
kafkette brokers shares them the same way, in ZooKeeper beside the other entity
configs (``/config/topics``, ``/config/clients``, ...), one znode per subscription
holding ``{"version":1,"config":{"metrics":"...","interval.ms":"..."}}`` as Kafka's
ZooKeeper mode writes entity configs; the name is sanitized as Kafka's Sanitizer
does (URL-encoded). Nothing is cached: each admin and telemetry request
(GetTelemetrySubscriptions matches clients against them) reads ZooKeeper, so a change
made through any broker is seen by all at once. Changes are versioned read-modify-writes, so two
concurrent alterations never lose one another's change; a subscription whose last
config is deleted loses its znode. kazoo calls run in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.durable_store.entity_znode import ATTEMPTS, config_of, encode_config, sanitize
from kafkette.broker.telemetry.subscriptions import SubscriptionChange, Subscriptions

if TYPE_CHECKING:
    from kafkette.broker.cluster.zk_session import ZkSession

ROOT = "/config/client-metrics"
THREADS = 2


def _names(client: Any) -> list[str]:
    from kazoo.exceptions import NoNodeError

    try:
        return sorted(unquote(child) for child in client.get_children(ROOT))
    except NoNodeError:
        return []


def _read(client: Any, name: str) -> tuple[dict[str, str], Any]:
    from kazoo.exceptions import NoNodeError

    try:
        data, stat = client.get(f"{ROOT}/{sanitize(name)}")
    except NoNodeError:
        return {}, None
    return config_of(data), stat


def _write(client: Any, name: str, configs: dict[str, str], stat: Any) -> bool:
    """Replace the subscription if it is still at ``stat`` (None: absent); False if it
    changed meanwhile."""
    from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

    path = f"{ROOT}/{sanitize(name)}"
    document = encode_config(configs)
    try:
        if not configs:
            if stat is not None:
                client.delete(path, version=stat.version)
        elif stat is None:
            client.create(path, document, makepath=True)
        else:
            client.set(path, document, version=stat.version)
    except (BadVersionError, NodeExistsError, NoNodeError):
        return False
    return True


class ZkSubscriptionStore:
    """Same interface as ``file_store.SubscriptionStore``, kept in ZooKeeper; its errors
    raise StoreUnavailable."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._threads = trio.CapacityLimiter(THREADS)
        self._listeners: list[Callable[[Subscriptions], None]] = []

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            return await self._session.run(fn, *args, limiter=self._threads)
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(
                f"ZooKeeper error on client metrics subscriptions: {exc!r}"
            ) from None

    async def names(self) -> list[str]:
        return await self._run(_names)

    async def configs(self, name: str) -> dict[str, str]:
        configs, _ = await self._run(_read, name)
        return configs

    async def read(self) -> Subscriptions:
        return {name: await self.configs(name) for name in await self.names()}

    def on_change(self, listener: Callable[[Subscriptions], None]) -> None:
        """``listener(subscriptions)`` after every change this broker makes (nothing
        watches other brokers' changes: every reader asks ZooKeeper)."""
        self._listeners.append(listener)

    async def apply(self, change: SubscriptionChange) -> dict[str, str]:
        name = change.name
        for _ in range(ATTEMPTS):
            current, stat = await self._run(_read, name)
            configs = change.edit(dict(current))
            if change.validate_only:
                return configs
            if await self._run(_write, name, dict(configs), stat):
                if self._listeners:
                    subscriptions = await self.read()
                    for listener in self._listeners:
                        listener(subscriptions)
                return configs
        raise StoreUnavailable(
            f"could not update client metrics subscription {name}: it keeps changing"
        )
