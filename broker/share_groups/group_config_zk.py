"""A cluster's group configs in ZooKeeper: ``/config/groups/<group>``.

Kafka keeps group configs in its cluster metadata, so ``kafka-configs.sh --entity-type
groups`` changes a group's configs once, through any broker, for all of them. A cluster
of kafkette brokers shares them the same way: one entity-config znode per group beside
the others (``/config/topics``, ``/config/client-metrics``, ...), holding
``{"version":1,"config":{...}}`` under the sanitized group id (``entity_znode.py``).

Unlike the client-metrics store, share fetches read a group's settings on the event loop
at every fetch, so each broker keeps the znodes in memory, loaded before it serves and
reloaded whenever a watch fires (a change through another broker, a new group, a new
ZooKeeper session). A change through this broker is in its own memory before the answer.
A write replaces the group's whole set, last writer wins (as the single node's file).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.durable_store.entity_znode import config_of, encode_config, sanitize

if TYPE_CHECKING:
    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.share")

ROOT = "/config/groups"
RETRY_S = 1.0  # after ZooKeeper failed a reload


class ZkGroupConfigStore:
    """``get``/``replace`` as ``group_configs.GroupConfigStore``, shared through ZooKeeper."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._configs: dict[str, dict[str, str]] = {}
        self._changed = trio.Event()
        # One watch function for every znode: kazoo keeps a path's watchers in a set, so
        # reloads re-arm each watch once, not once more per reload.
        self._watch = session.watcher(self._mark)

    async def start(self, nursery: trio.Nursery) -> None:
        """Load every group's configs (before the broker serves), then follow changes;
        a ZooKeeper error now is retried by the follower, the broker starts anyway."""
        try:
            await self._reload()
        except StoreUnavailable as exc:
            log.warning("group configs not loaded yet: %s", exc)
            self._mark()
        self._session.on_state(lambda _state: self._mark())
        nursery.start_soon(self._follow)

    def _mark(self) -> None:
        self._changed.set()

    async def _follow(self) -> None:
        failing = False  # one warning per ZooKeeper outage, not one per retry
        while True:
            await self._changed.wait()
            self._changed = trio.Event()
            try:
                await self._reload()
            except StoreUnavailable as exc:
                if not failing:
                    log.warning("group configs not reloaded, retrying: %s", exc)
                failing = True
                await trio.sleep(RETRY_S)
                self._changed.set()
                continue
            if failing:
                log.info("group configs reloaded from ZooKeeper")
            failing = False

    async def _reload(self) -> None:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            self._configs = await self._session.run(self._read_all)
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(f"ZooKeeper error on group configs: {exc!r}") from None

    def _read_all(self, client: Any) -> dict[str, dict[str, str]]:
        from kazoo.exceptions import NoNodeError

        try:
            children = client.get_children(ROOT, watch=self._watch)
        except NoNodeError:
            if client.exists(ROOT, watch=self._watch) is None:
                return {}
            children = client.get_children(ROOT, watch=self._watch)
        configs = {}
        for child in children:
            try:
                data, _ = client.get(f"{ROOT}/{child}", watch=self._watch)
            except NoNodeError:
                continue
            if found := config_of(data):
                configs[unquote(child)] = found
        return configs

    def get(self, group_id: str) -> dict[str, str]:
        return dict(self._configs.get(group_id, {}))

    def replace(self, group_id: str, configs: dict[str, str]) -> None:
        """Worker thread: set the group's whole set (empty: none) in ZooKeeper, then here."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        from kafkette.broker.cluster.zk_admin import set_or_create

        client = self._session.client
        path = f"{ROOT}/{sanitize(group_id)}"
        try:
            if not configs:
                try:
                    client.delete(path)
                except NoNodeError:
                    pass
            else:
                set_or_create(client, path, encode_config(configs))
        except (KazooException, KazooTimeoutError) as exc:
            raise StoreUnavailable(f"ZooKeeper error on group {group_id}'s configs: {exc!r}"
                                   ) from None
        updated = dict(self._configs)  # rebound whole: the event loop reads it meanwhile
        if configs:
            updated[group_id] = dict(configs)
        else:
            updated.pop(group_id, None)
        self._configs = updated
