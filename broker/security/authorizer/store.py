"""ACLs kept durably in the data dir of a single node.

Kafka keeps a KRaft cluster's ACLs in its metadata log; a single kafkette node keeps
them in ``<data dir>/acls.json``, replaced whole and atomically (temporary file,
fsync, rename) on every change before the change is acknowledged, so a crash leaves
the ACLs before or after a CreateAcls/DeleteAcls, never a mix. The file is small
(one line per binding); it is read once at start. A cluster keeps them in ZooKeeper
instead (zk_store.py); ``open_acl_store`` picks one, once, at start.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreFileError
from kafkette.broker.security.authorizer.acl import AclBinding
from kafkette.log.checkpoint import atomic_write

if TYPE_CHECKING:
    from kafkette.broker.security.authorizer.zk_store import ZkAclStore
    from kafkette.broker.server import Broker

ACL_FILE = "acls.json"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class AclChange:
    """Bindings to add (ones already there are no change) and to remove."""

    added: list[AclBinding]
    removed: list[AclBinding]


class AclFileStore:
    """One node's ACLs: held in memory (what the authorizer was last given) and in
    ``acls.json``. A ``DurableStore[list[AclBinding], AclChange]``; an unreadable
    file raises StoreFileError (a missing DENY would open access)."""

    origin = f"from {ACL_FILE}"

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / ACL_FILE
        self._bindings: list[AclBinding] = []
        self._listeners: list[Callable[[list[AclBinding]], None]] = []

    def load(self) -> None:
        """Worker thread: hold every stored binding, none when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        try:
            data = json.loads(text)
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"unknown format version {data.get('version')!r}")
            bindings = [AclBinding.from_json(entry) for entry in data["acls"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreFileError(f"cannot read ACLs from {self.path}: {exc}") from None
        self._bindings = list(dict.fromkeys(bindings))

    def save(self, bindings: list[AclBinding]) -> None:
        """Worker thread: replace the file with ``bindings``, atomically and synced."""
        lines = ",\n".join(
            "  " + json.dumps(b.to_json(), separators=(",", ":")) for b in bindings
        )
        text = f'{{"version":{FORMAT_VERSION},"acls":[\n{lines}\n]}}\n'
        atomic_write(self.path, text.encode("utf-8"))

    def unstorable(self, binding: AclBinding) -> str | None:
        """Why the store cannot keep ``binding``: never, for a file."""
        return None

    async def read(self) -> list[AclBinding]:
        return list(self._bindings)

    def on_change(self, listener: Callable[[list[AclBinding]], None]) -> None:
        """``listener(bindings)`` now and after every change (on the event loop)."""
        self._listeners.append(listener)
        listener(list(self._bindings))

    async def apply(self, change: AclChange) -> None:
        """Written (in a worker thread) before the listeners hear of it; a change that
        changes nothing writes nothing."""
        held = set(self._bindings)
        gone = set(change.removed) & held
        new = [b for b in dict.fromkeys(change.added) if b not in held]
        if not new and not gone:
            return
        bindings = [b for b in self._bindings if b not in gone] + new
        await trio.to_thread.run_sync(self.save, bindings)
        self._bindings = bindings
        for listener in self._listeners:
            listener(list(bindings))


async def open_acl_store(broker: Broker) -> AclFileStore | ZkAclStore:
    """The broker's ACL store, its ACLs read: ZooKeeper's in a cluster, else the data
    dir's file. Raises ValueError with one line for the operator."""
    if broker.cluster is not None:
        from kafkette.broker.security.authorizer.zk_store import open_zk_acl_store

        try:
            return await open_zk_acl_store(broker.cluster.session)
        except Exception as exc:  # ZooKeeper away, or unreadable: no start without ACLs
            raise ValueError(f"cannot read the ACLs from ZooKeeper: {exc}") from exc
    store = AclFileStore(broker.config.data_dir)
    try:
        await trio.to_thread.run_sync(store.load)
    except OSError as exc:
        raise ValueError(f"cannot read the ACLs in {broker.config.data_dir}: {exc}") from exc
    return store
