"""A ZooKeeper session for trio, over kazoo.

kazoo is a blocking client with its own threads. Calls run in trio worker
threads (``trio.to_thread.run_sync``; a call is one round trip, or a batch of
them); a watch fires on kazoo's thread and is handed to the trio loop with
``TrioToken.run_sync_soon``, which never blocks kazoo's thread. Session state
changes (lost, suspended, connected again) reach trio the same way.

``zookeeper.connect`` may end with a chroot (``h1:2181,h2:2181/kafka``):
like Kafka, the session creates the chroot when it is missing, then works
inside it. kazoo is imported here only, and this module only in cluster mode.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import trio

if TYPE_CHECKING:
    from kazoo.client import KazooClient

log = logging.getLogger("kafkette.zookeeper")

T = TypeVar("T")

# What ``on_state`` callbacks receive (kazoo's KazooState names).
LOST, SUSPENDED, CONNECTED = "LOST", "SUSPENDED", "CONNECTED"


class ZkUnavailable(Exception):
    """ZooKeeper could not be reached within zookeeper.connection.timeout.ms."""


def split_chroot(connect: str) -> tuple[str, str]:
    """``"h:p,h2:p/chroot"`` -> (``"h:p,h2:p"``, ``"/chroot"``); no chroot -> ``""``."""
    slash = connect.find("/")
    if slash < 0:
        return connect, ""
    chroot = connect[slash:].rstrip("/")
    return connect[:slash], chroot


class ZkSession:
    """One ZooKeeper session. Create and use on the trio loop."""

    def __init__(self, connect: str, session_timeout_s: float, connection_timeout_s: float) -> None:
        self.hosts, self.chroot = split_chroot(connect)
        self.session_timeout_s = session_timeout_s
        self.connection_timeout_s = connection_timeout_s
        self._client: KazooClient | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._state_callbacks: list[Callable[[str], None]] = []
        self.closed = False

    @property
    def client(self) -> KazooClient:
        assert self._client is not None, "ZkSession.start first"
        return self._client

    @property
    def session_id(self) -> int:
        """The current session's id (ephemeral znodes name it as their owner)."""
        sid = self.client.client_id
        return sid[0] if sid else 0

    async def start(self) -> None:
        """Connect (bounded by the connection timeout) and enter the chroot."""
        from kazoo.client import KazooClient

        self._token = trio.lowlevel.current_trio_token()
        client = KazooClient(hosts=self.hosts, timeout=self.session_timeout_s)
        client.add_listener(self._on_kazoo_state)

        def connect() -> None:
            try:
                client.start(timeout=self.connection_timeout_s)
            except Exception as exc:  # kazoo's timeout is a bare handler exception
                client.close()
                raise ZkUnavailable(
                    f"cannot reach ZooKeeper at {self.hosts} within"
                    f" {self.connection_timeout_s:g}s ({type(exc).__name__}: {exc})"
                ) from None
            if self.chroot:
                client.ensure_path(self.chroot)
                client.chroot = self.chroot

        await trio.to_thread.run_sync(connect, abandon_on_cancel=True)
        self._client = client

    def on_state(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(LOST | SUSPENDED | CONNECTED)`` on the trio loop."""
        self._state_callbacks.append(callback)

    def _on_kazoo_state(self, state: str) -> None:
        # kazoo's thread: never block it, never call kazoo from it.
        for callback in self._state_callbacks:
            self.deliver(callback, str(state))

    def deliver(self, fn: Callable[..., object], *args: Any) -> None:
        """From any thread: run ``fn(*args)`` soon on the trio loop (dropped once it ended)."""
        token = self._token
        if token is None:
            return
        try:
            token.run_sync_soon(fn, *args)
        except trio.RunFinishedError:
            pass

    def watcher(self, fn: Callable[[], None]) -> Callable[[object], None]:
        """A kazoo watch function that calls ``fn()`` on the trio loop when it fires."""

        def fire(_event: object) -> None:
            self.deliver(fn)

        return fire

    async def run(
        self, fn: Callable[..., T], *args: Any, limiter: trio.CapacityLimiter | None = None
    ) -> T:
        """``fn(client, *args)`` in a worker thread: one call, or a batch of calls.

        ``limiter``: callers a client can trigger at will (logins, ACL changes) bring their
        own, so that a ZooKeeper outage holds their threads, not those of trio's default
        limiter that log I/O needs."""
        client = self.client
        return await trio.to_thread.run_sync(
            partial(fn, client, *args), abandon_on_cancel=True, limiter=limiter
        )

    # One-call helpers -------------------------------------------------------------

    async def get(self, path: str) -> tuple[bytes, Any]:
        return await self.run(lambda c: c.get(path))

    async def get_children(self, path: str) -> list[str]:
        return await self.run(lambda c: c.get_children(path))

    async def create(
        self, path: str, value: bytes = b"", *, ephemeral: bool = False, makepath: bool = False
    ) -> str:
        return await self.run(
            lambda c: c.create(path, value, ephemeral=ephemeral, makepath=makepath)
        )

    async def set(self, path: str, value: bytes, version: int = -1) -> Any:
        return await self.run(lambda c: c.set(path, value, version=version))

    async def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> None:
        await self.run(lambda c: c.delete(path, version=version, recursive=recursive))

    async def exists(self, path: str) -> Any:
        return await self.run(lambda c: c.exists(path))

    async def close(self) -> None:
        """End the session: its ephemeral znodes (registration, controller) go at once."""
        if self.closed or self._client is None:
            return
        self.closed = True
        client = self._client

        def stop() -> None:
            try:
                client.stop()
            finally:
                client.close()

        with trio.move_on_after(10):
            await trio.to_thread.run_sync(stop, abandon_on_cancel=True)
