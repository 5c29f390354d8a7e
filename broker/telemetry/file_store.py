"""A single node's client metrics subscriptions: ``client-metrics.json`` in the data dir.

Durable like topic configs: read at start (a damaged file raises StoreFileError and
stops the start) and replaced atomically on every change before the change is
acknowledged. ``{"version": 1, "subscriptions": {"<name>": {"metrics": "...", ...}}}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import trio

from kafkette.broker.durable_store import StoreFileError
from kafkette.broker.telemetry.subscriptions import SubscriptionChange, Subscriptions
from kafkette.log.checkpoint import atomic_write

FILE_NAME = "client-metrics.json"


class SubscriptionStore:
    """The subscriptions, in memory and in ``client-metrics.json``.

    Read once at start (``load``). Changes are serialized by a trio lock and written
    in a worker thread (an fsync), and the in-memory view changes only once the file
    holds the change.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._subscriptions: dict[str, dict[str, str]] | None = None
        self._lock = trio.Lock()
        self._listeners: list[Callable[[Subscriptions], None]] = []

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
            raise StoreFileError(
                f"cannot read client metrics subscriptions {self._path}: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    async def names(self) -> list[str]:
        return sorted(await self._loaded())

    async def configs(self, name: str) -> dict[str, str]:
        return dict((await self._loaded()).get(name, {}))

    async def read(self) -> Subscriptions:
        return {name: dict(configs) for name, configs in (await self._loaded()).items()}

    def on_change(self, listener: Callable[[Subscriptions], None]) -> None:
        """``listener(subscriptions)`` after every change this store makes."""
        self._listeners.append(listener)

    async def apply(self, change: SubscriptionChange) -> dict[str, str]:
        """The subscription's configs after ``change`` (its edit may raise), made its
        set durably unless ``validate_only`` (an empty set removes it).

        Read, change and write happen under one lock, so two concurrent alterations
        of a subscription never lose one another's change."""
        name = change.name
        async with self._lock:
            current = await self._load_locked()
            configs = change.edit(dict(current.get(name, {})))
            if change.validate_only:
                return configs
            updated = {k: v for k, v in current.items() if k != name}
            if configs:
                updated[name] = dict(configs)
            data = json.dumps({"version": 1, "subscriptions": updated}, indent=1, sort_keys=True)
            await trio.to_thread.run_sync(atomic_write, self._path, data.encode())
            self._subscriptions = updated
        if self._listeners:
            subscriptions = await self.read()
            for listener in self._listeners:
                listener(subscriptions)
        return configs
