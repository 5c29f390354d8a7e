"""SCRAM credentials of a cluster, in ZooKeeper where Kafka's ZooKeeper mode keeps them.

``/config/users/<user>`` holds ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,
stored_key=...,server_key=...,iterations=4096", ...}}`` (the user name sanitized as
Kafka's Sanitizer does: URL-encoded); other keys of that node (client quotas) are kept
as they are. Kafka's ``/config/changes`` notifications are not written (no broker here
needs them, and they would pile up). kazoo calls run in worker threads.

Logins read a broker's in-memory copy of the users it has seen: the first login of a
user reads its node and sets a ZooKeeper watch; the watch (any broker changed or
deleted the node) drops the copy, so the next login reads the node again. A credential
altered through any broker is thus used by all at once, and a login costs no ZooKeeper
round trip. Unknown users are not remembered (no node, no watch: a client trying random
names costs ZooKeeper reads, bounded by a few threads and the caller's deadline, not
memory). The copies are dropped when the ZooKeeper session is lost (its watches with it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.durable_store.entity_znode import config_of, sanitize, update_config
from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.broker.security.sasl.scram_store import (
    CredentialChanges,
    Credentials,
    credential_from_text,
    credential_to_text,
)

if TYPE_CHECKING:
    from kafkette.broker.cluster.zk_session import ZkSession

USERS = "/config/users"
LOST = "LOST"  # zk_session.LOST (that module is imported only in cluster mode)
LOOKUP_THREADS = 4  # worker threads logins may hold reading ZooKeeper at once


def user_path(user: str) -> str:
    return f"{USERS}/{sanitize(user)}"


def _scram_of(config: Mapping[str, str]) -> dict[str, sf.ScramCredential]:
    found = {}
    for mechanism in sf.MECHANISMS:
        if mechanism in config:
            try:
                found[mechanism] = credential_from_text(config[mechanism])
            except ValueError:
                continue  # a damaged entry authenticates no one
    return found


def _read_user(client: Any, user: str) -> dict[str, str]:
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = client.get(user_path(user))
    except NoNodeError:
        return {}
    return config_of(data)


def _read_all(client: Any) -> dict[str, dict[str, str]]:
    from kazoo.exceptions import NoNodeError

    try:
        names = client.get_children(USERS)
    except NoNodeError:
        return {}
    configs = {}
    for name in names:
        try:
            data, _ = client.get(f"{USERS}/{name}")
        except NoNodeError:
            continue
        configs[unquote(name)] = config_of(data)
    return configs


class NodeKeepsChanging(Exception):
    """Other writers changed a user's node on every one of our read-modify-write tries."""


def _read_user_watched(client: Any, user: str, watch: Any) -> dict[str, str] | None:
    """The user's config with a watch on its node; None (and no watch) when there is no node."""
    from kazoo.exceptions import NoNodeError

    try:
        data, _ = client.get(user_path(user), watch=watch)
    except NoNodeError:
        return None
    return config_of(data)


def _write_user(client: Any, user: str, changes: Mapping[str, str | None]) -> None:
    """Apply ``changes`` (mechanism -> credential text, None to delete) to the user's node."""
    path = user_path(user)
    if not update_config(client, path, changes):
        raise NodeKeepsChanging(f"could not update {path}: it keeps changing")


class ZkScramCredentialStore:
    """A cluster's credentials (the file store's interface); ZooKeeper errors raise
    StoreUnavailable: a login is refused, an admin request answered, the broker goes on."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._listeners: list[Callable[[Credentials], None]] = []
        # Logins and the admin APIs use ZooKeeper in their own few threads: a hung
        # ZooKeeper cannot take trio's default thread pool (the log's I/O) with it. The
        # caller bounds the wait.
        self._threads = trio.CapacityLimiter(LOOKUP_THREADS)
        # user -> mechanism -> credential, for users whose node is watched.
        self._known: dict[str, dict[str, sf.ScramCredential]] = {}
        # Bumped by every invalidation: a read that overlapped one is not remembered.
        self._invalidations = 0
        session.on_state(self._on_session_state)

    def _on_session_state(self, state: str) -> None:
        if state == LOST:  # the session's watches are gone: nothing known stays true
            self._known.clear()
            self._invalidations += 1

    def _forget(self, user: str) -> None:
        self._known.pop(user, None)
        self._invalidations += 1

    async def lookup(self, mechanism: str, user: str) -> sf.ScramCredential | None:
        """The user's credential; raises StoreUnavailable on a ZooKeeper error
        (the caller's deadline, trio.fail_after, covers a ZooKeeper that does not answer)."""
        known = self._known.get(user)
        if known is not None:
            return known.get(mechanism)
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        before = self._invalidations
        watch = self._session.watcher(partial(self._forget, user))
        try:
            config = await self._session.run(
                _read_user_watched, user, watch, limiter=self._threads
            )
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(
                f"ZooKeeper error reading {user_path(user)}: {type(exc).__name__} {exc}"
            ) from None
        if config is None:
            return None
        credentials = _scram_of(config)
        if before == self._invalidations:
            self._known[user] = credentials
        return credentials.get(mechanism)

    async def users(self) -> list[str]:
        return sorted(await self.read())

    async def mechanisms_of(self, user: str) -> Mapping[str, sf.ScramCredential]:
        return _scram_of(await self._read(_read_user, user))

    async def _read(self, fn: Any, *args: Any) -> Any:
        """``fn(client, *args)`` in a worker thread; ZooKeeper errors become
        StoreUnavailable (the admin handlers answer them, never crash)."""
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            return await self._session.run(fn, *args, limiter=self._threads)
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(
                f"ZooKeeper error reading {USERS}: {type(exc).__name__} {exc}"
            ) from None

    async def read(self) -> Credentials:
        configs = await self._read(_read_all)
        return {user: found for user, config in configs.items() if (found := _scram_of(config))}

    def on_change(self, listener: Callable[[Credentials], None]) -> None:
        """``listener(credentials)`` after every change this broker makes (logins learn
        of other brokers' changes through their per-user watches, not through this)."""
        self._listeners.append(listener)

    async def apply(self, changes: CredentialChanges) -> None:
        texts = {
            user: {
                mechanism: None if credential is None else credential_to_text(credential)
                for mechanism, credential in user_changes.items()
            }
            for user, user_changes in changes.items()
        }

        def write_all(client: Any) -> None:
            for user, user_changes in texts.items():
                _write_user(client, user, user_changes)

        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            await self._session.run(write_all, limiter=self._threads)
        except (KazooException, KazooTimeoutError, NodeKeepsChanging) as exc:
            for user in texts:  # some may be written: read them again
                self._forget(user)
            raise StoreUnavailable(
                f"ZooKeeper error writing {USERS}: {type(exc).__name__} {exc}"
            ) from None
        for user in texts:  # this broker's next login reads what it wrote (the watch
            self._forget(user)  # would tell it too, a moment later)
        if self._listeners:
            credentials = await self.read()
            for listener in self._listeners:
                listener(credentials)
