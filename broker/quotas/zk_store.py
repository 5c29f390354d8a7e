"""A cluster's client quotas, in ZooKeeper where Kafka's ZooKeeper mode keeps them.

``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>``,
``/config/clients/<client-id>`` and ``/config/ips/<ip>`` hold
``{"version":1,"config":{"producer_byte_rate":"1024"}}``; ``<default>`` names a default
entity; names are sanitized as Kafka's Sanitizer does (URL-encoded, the SCRAM store's
``user_path`` rule). A user's node also holds its SCRAM credentials: writes change only
the quota keys (read-modify-write, versioned).

Every change also writes Kafka's notification ``/config/changes/config_change_<seq>``
(``{"version":2,"entity_path":"clients/c1"}``); each broker watches that folder's
children and reads all quotas again when it changes, so a quota altered through any
broker is enforced by all. Notifications older than 15 minutes are deleted by the
writer (Kafka's ``changeExpirationMs``). kazoo calls run in worker threads.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.durable_store.entity_znode import config_of, sanitize, update_config
from kafkette.broker.quotas.entities import CLIENT_ID, CLIENT_KEYS, IP, IP_KEYS, USER, Entity
from kafkette.broker.quotas.store import Changes, Quotas, value_text

if TYPE_CHECKING:
    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.quotas")

CHANGES = "/config/changes"
CHANGE_PREFIX = "config_change_"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000
DEFAULT = "<default>"
_FOLDERS = {USER: "users", CLIENT_ID: "clients", IP: "ips"}
THREADS = 2
QUOTA_KEYS = set(CLIENT_KEYS) | set(IP_KEYS)


def _sanitize(name: str | None) -> str:
    return DEFAULT if name is None else sanitize(name)


def _name_of(node: str) -> str | None:
    return None if node == DEFAULT else unquote(node)


def entity_path(entity: Entity) -> str:
    """``users/alice/clients/c1`` (Kafka's entity path, under /config)."""
    names = dict(entity)
    if USER in names and CLIENT_ID in names:
        return f"users/{_sanitize(names[USER])}/clients/{_sanitize(names[CLIENT_ID])}"
    ((entity_type, name),) = entity
    return f"{_FOLDERS[entity_type]}/{_sanitize(name)}"


def _quota_values(config: dict[str, str]) -> dict[str, float]:
    values = {}
    for key, text in config.items():
        if key in QUOTA_KEYS:
            try:
                values[key] = float(text)
            except ValueError:
                continue  # a damaged value limits no one
    return values


def _read_all(client: Any, watch: Any) -> Quotas:
    from kazoo.exceptions import NoNodeError

    def children(path: str) -> list[str]:
        try:
            return client.get_children(path)
        except NoNodeError:
            return []

    def values(path: str) -> dict[str, float]:
        try:
            data, _ = client.get(path)
        except NoNodeError:
            return {}
        return _quota_values(config_of(data))

    if watch is not None:
        client.ensure_path(CHANGES)
        client.get_children(CHANGES, watch=watch)  # set first: no change slips between
    quotas: Quotas = {}
    for user in children("/config/users"):
        quotas[((USER, _name_of(user)),)] = values(f"/config/users/{user}")
        for client_id in children(f"/config/users/{user}/clients"):
            entity = ((CLIENT_ID, _name_of(client_id)), (USER, _name_of(user)))
            quotas[entity] = values(f"/config/users/{user}/clients/{client_id}")
    for client_id in children("/config/clients"):
        quotas[((CLIENT_ID, _name_of(client_id)),)] = values(f"/config/clients/{client_id}")
    for ip in children("/config/ips"):
        quotas[((IP, _name_of(ip)),)] = values(f"/config/ips/{ip}")
    return {entity: v for entity, v in quotas.items() if v}


def _write(client: Any, changes: Changes) -> None:
    for entity, entity_changes in changes.items():
        path = f"/config/{entity_path(entity)}"
        texts = {
            key: None if value is None else value_text(value)
            for key, value in entity_changes.items()
        }
        if not update_config(client, path, texts):
            raise StoreUnavailable(f"could not update {path}: it keeps changing")
        notification = json.dumps({"version": 2, "entity_path": entity_path(entity)})
        client.create(
            f"{CHANGES}/{CHANGE_PREFIX}", notification.encode(), sequence=True, makepath=True
        )
    _expire_notifications(client)


def _expire_notifications(client: Any) -> None:
    from kazoo.exceptions import NoNodeError

    oldest_kept = time.time() * 1000 - CHANGE_EXPIRATION_MS
    for name in client.get_children(CHANGES):
        if not name.startswith(CHANGE_PREFIX):
            continue
        try:
            stat = client.exists(f"{CHANGES}/{name}")
            if stat is not None and stat.ctime < oldest_kept:
                client.delete(f"{CHANGES}/{name}")
        except NoNodeError:
            continue


class ZkQuotaStore:
    """A cluster's quotas (a ``DurableStore[Quotas, Changes]``): ZooKeeper errors raise
    StoreUnavailable."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._threads = trio.CapacityLimiter(THREADS)
        self._quotas: Quotas = {}
        self._listeners: list[Callable[[Quotas], None]] = []
        self._reloading = False
        self._again = False  # a change came while reading: read once more
        # Reads overlap (the watch's, an admin request's): each is numbered as it starts
        # and installed only if no later-started read was installed before it finished,
        # so an older snapshot never replaces a newer one.
        self._reads_started = 0
        self._read_installed = 0
        session.on_state(self._on_session_state)

    @classmethod
    async def open(cls, session: ZkSession) -> ZkQuotaStore:
        store = cls(session)
        await store._reload(watch=True)
        return store

    async def _reload(self, *, watch: bool) -> None:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        watcher = self._session.watcher(self._changed) if watch else None
        self._reads_started += 1
        read = self._reads_started
        try:
            quotas = await self._session.run(_read_all, watcher, limiter=self._threads)
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(f"ZooKeeper error reading quotas: {exc!r}") from None
        if read < self._read_installed:
            return  # a read that started later already installed what it saw
        self._read_installed = read
        self._quotas = quotas
        for listener in self._listeners:
            listener(quotas)

    def _on_session_state(self, state: str) -> None:
        if state == "CONNECTED":  # after a lost session its watches are gone: set again
            self._changed()

    def _changed(self) -> None:
        """A notification appeared (the watch fired, on the trio loop): read again."""
        if self._reloading:
            self._again = True
            return
        self._reloading = True
        trio.lowlevel.spawn_system_task(self._reload_after_change)

    async def _reload_after_change(self) -> None:
        try:
            while True:
                self._again = False
                try:
                    await self._reload(watch=True)
                except Exception as exc:  # a system task's error would stop the broker
                    log.warning("client quotas not refreshed: %r", exc)
                    return
                if not self._again:
                    return
        finally:
            self._reloading = False

    def on_change(self, listener: Callable[[Quotas], None]) -> None:
        self._listeners.append(listener)
        listener(self._quotas)

    async def read(self) -> Quotas:
        await self._reload(watch=False)  # the admin API reads ZooKeeper itself
        return self._quotas

    async def apply(self, changes: Changes) -> None:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            await self._session.run(_write, changes, limiter=self._threads)
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(f"ZooKeeper error writing quotas: {exc!r}") from None
        await self._reload(watch=False)  # enforced here at once; the others by the watch
