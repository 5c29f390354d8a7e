"""ACLs shared by the brokers of a cluster, in ZooKeeper with Kafka's layout.

Kafka's ZooKeeper-era authorizer kept one znode per resource pattern:

* ``/kafka-acl/<ResourceType>/<name>`` for LITERAL patterns,
* ``/kafka-acl-extended/prefixed/<ResourceType>/<name>`` for PREFIXED ones,

each holding ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
"operation":"Read","host":"*"}, ...]}``, and announced every change with a sequential
znode under ``/kafka-acl-changes`` (literal: ``Topic:name``) or
``/kafka-acl-extended-changes`` (JSON naming the pattern). kafkette writes the same.

A change is a compare-and-set of each touched resource's znode (retried when another
broker changed it meanwhile), then a change notification. Every broker watches the two
notification folders and, when one fires (or its ZooKeeper session is new), reads all
ACLs again: they are few, and a full read cannot miss anything.

As on a single node (store.py, the same ``DurableStore[list[AclBinding], AclChange]``
interface), an ACL znode that cannot be decoded is never skipped:
a missing DENY would open access. At start the broker refuses to start; later the
broker logs an ERROR and keeps, for that resource only, the ACLs it held, while every
other resource takes what ZooKeeper has: a change made through another broker (a
revoked ALLOW, a new DENY) is enforced here even while one znode waits for repair.
Every read is numbered when it starts, and only a read newer than the installed one
replaces it: a slow reload cannot undo a change committed after it began.

The ZooKeeper calls run in worker threads of their own small CapacityLimiter: kazoo
queues requests while it reconnects, so an outage can hold a thread until ZooKeeper is
back; those threads must not be trio's default ones that log I/O shares.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import trio

from kafkette.broker.security.authorizer.acl import (
    RESOURCE_TYPE_NAMES,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    operation_name,
    permission_name,
)
from kafkette.broker.security.authorizer.authorizer import AclStoreError
from kafkette.broker.security.authorizer.store import AclChange

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafkette.broker.cluster.zk_session import ZkSession

log = logging.getLogger("kafkette.authorizer")

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
RELOAD_RETRY_S = 1.0
KEPT_NOTIFICATIONS = 50
# Worker threads for the ACL store's ZooKeeper calls (the reload and one change at a
# time need two; the rest is headroom for threads an outage holds).
ZK_ACL_THREADS = 4
T = TypeVar("T")

_TYPE_BY_NAME = {name: rtype for rtype, name in RESOURCE_TYPE_NAMES.items()}
_OP_BY_NAME = {operation_name(op): op for op in AclOperation}
_PERMISSION_BY_NAME = {permission_name(p): p for p in AclPermissionType}

Resource = tuple[PatternType, ResourceType, str]
# What a read of every ACL gives: the readable bindings, and why each unreadable
# resource's znode could not be decoded.
Snapshot = tuple[list[AclBinding], dict[Resource, str]]


class AclZnodeError(ValueError):
    """An ACL znode that cannot be decoded: the ACLs are not served incomplete."""


def unstorable_name(name: str) -> str | None:
    """Why ``name`` cannot be one znode under ``/kafka-acl/<type>/``, or None.

    The resource name is the last path element: a ``/`` would make nested znodes that
    ``_read_all`` (direct children only) never reads back, so the ACL would be
    acknowledged and then lost; ``.``/``..`` and the characters ZooKeeper refuses in
    paths cannot be znode names at all. Such ACLs are refused before anything is
    written (INVALID_REQUEST)."""
    if "/" in name:
        return f"ACL resource names with '/' cannot be stored in ZooKeeper: {name!r}"
    if name in (".", ".."):
        return f"ACL resource name {name!r} cannot be stored in ZooKeeper"
    if any(_zk_refused(ch) for ch in name):
        return f"ACL resource name {name!r} has characters ZooKeeper paths cannot hold"
    return None


def _zk_refused(ch: str) -> bool:
    """ZooKeeper's PathUtils.validatePath: no control characters, no surrogates or
    private-use characters, none of U+FFF0..U+FFFF."""
    c = ord(ch)
    return (
        c <= 0x1F or 0x7F <= c <= 0x9F or 0xD800 <= c <= 0xF8FF or 0xFFF0 <= c <= 0xFFFF
    )


def resource_path(pattern: PatternType, rtype: ResourceType, name: str) -> str:
    root = LITERAL_ROOT if pattern == PatternType.LITERAL else PREFIXED_ROOT
    return f"{root}/{RESOURCE_TYPE_NAMES[rtype]}/{name}"


def encode_acls(bindings: list[AclBinding]) -> bytes:
    entries = [
        {"principal": b.principal, "permissionType": permission_name(b.permission),
         "operation": operation_name(b.operation), "host": b.host}
        for b in bindings
    ]
    return json.dumps({"version": 1, "acls": entries}, separators=(",", ":")).encode()


def decode_acls(resource: Resource, data: bytes) -> list[AclBinding]:
    pattern, rtype, name = resource
    if not data:
        return []
    parsed = json.loads(data)
    return [
        AclBinding(rtype, name, pattern, e["principal"], e["host"],
                   _OP_BY_NAME[e["operation"]], _PERMISSION_BY_NAME[e["permissionType"]])
        for e in parsed.get("acls", [])
    ]


class ZkAclStore:
    """A cluster's ACLs: what was last installed is held (and given to the listeners),
    ZooKeeper has the truth. Made and read by ``open_zk_acl_store``."""

    origin = "from ZooKeeper"

    def __init__(self, session: ZkSession) -> None:
        self.session = session
        self._bindings: list[AclBinding] = []  # the ACLs last installed
        self._listeners: list[Callable[[list[AclBinding]], None]] = []
        self._watch = session.watcher(self._changed)
        self._dirty = False
        self._reloading = False
        self._reads_started = 0  # numbers each read as it starts
        self._installed = 0  # the number of the read the authorizer holds
        self._limiter = trio.CapacityLimiter(ZK_ACL_THREADS)

    # Reading -------------------------------------------------------------------

    async def _snapshot(self) -> tuple[int, Snapshot]:
        self._reads_started += 1
        number = self._reads_started
        return number, await self.session.run(self._read_all, limiter=self._limiter)

    def _install(self, number: int, bindings: list[AclBinding],
                 unreadable: dict[Resource, str] | None = None) -> None:
        """Make ``bindings`` current unless a newer read already is. For a resource
        whose znode is unreadable the bindings held stay (never fewer: a DENY would go)."""
        if number <= self._installed:
            return
        self._installed = number
        if unreadable:
            held = [b for b in self._bindings if _resource_of(b) in unreadable]
            log.error("ACLs in ZooKeeper unreadable, keeping the %d held for those"
                      " resources (the others as ZooKeeper has them): %s",
                      len(held), "; ".join(unreadable.values()))
            bindings = bindings + held
        self._bindings = list(dict.fromkeys(bindings))
        for listener in self._listeners:
            listener(list(self._bindings))

    async def load_and_install(self, *, refuse_unreadable: bool = False) -> None:
        """Read every ACL and install them; with ``refuse_unreadable`` (at start, when
        no ACLs are held to fall back on) an unreadable znode raises AclZnodeError."""
        number, (bindings, unreadable) = await self._snapshot()
        if unreadable and refuse_unreadable:
            raise AclZnodeError("; ".join(unreadable.values()))
        self._install(number, bindings, unreadable)

    async def _refresh_after_change(
        self, added: list[AclBinding], removed: list[AclBinding]
    ) -> None:
        """After a change is in ZooKeeper: read all ACLs back (others' changes come with
        them). Never raises: the change is stored, so it is not reported as failed; when
        the read fails it is applied to the ACLs held, and a full read follows."""
        try:
            await self.load_and_install()
        except Exception as exc:  # ZooKeeper away
            log.error("ACL change stored in ZooKeeper but the ACLs could not be read"
                      " back (%s): applying it to the ACLs held, reading again later", exc)
            gone = set(removed)
            current = self._bindings
            held = set(current)
            bindings = [b for b in current if b not in gone]
            bindings += [b for b in dict.fromkeys(added) if b not in held]
            self._reads_started += 1  # newer than any read already under way
            self._install(self._reads_started, bindings)
            self._changed()

    def _read_all(self, client: KazooClient) -> Snapshot:
        """Worker thread: every readable ACL and the unreadable resources, watching the
        change folders for the next change."""
        from kazoo.exceptions import NoNodeError

        for path in (LITERAL_CHANGES, EXTENDED_CHANGES):
            client.ensure_path(path)
            client.get_children(path, watch=self._watch)
        bindings: list[AclBinding] = []
        unreadable: dict[Resource, str] = {}
        for pattern, root in ((PatternType.LITERAL, LITERAL_ROOT),
                              (PatternType.PREFIXED, PREFIXED_ROOT)):
            for type_name, rtype in _TYPE_BY_NAME.items():
                try:
                    names = client.get_children(f"{root}/{type_name}")
                except NoNodeError:
                    continue
                for name in names:
                    try:
                        data, _ = client.get(f"{root}/{type_name}/{name}")
                    except NoNodeError:
                        continue
                    try:
                        bindings.extend(decode_acls((pattern, rtype, name), data))
                    except (ValueError, KeyError, TypeError, AttributeError) as exc:
                        unreadable[(pattern, rtype, name)] = (
                            f"ACLs of {root}/{type_name}/{name} unreadable: {exc!r}"
                        )
        return bindings, unreadable

    def _changed(self) -> None:
        """On the trio loop: a change notification (or a new session): read again."""
        self._dirty = True
        if not self._reloading:
            self._reloading = True
            trio.lowlevel.spawn_system_task(self._reload)

    async def _reload(self) -> None:
        try:
            while self._dirty:
                self._dirty = False
                try:
                    await self.load_and_install()
                except Exception as exc:  # ZooKeeper away: try again shortly
                    log.warning("cannot read the ACLs from ZooKeeper: %s", exc)
                    self._dirty = True
                    await trio.sleep(RELOAD_RETRY_S)
        finally:
            self._reloading = False

    # The store's interface ------------------------------------------------------

    def unstorable(self, binding: AclBinding) -> str | None:
        """Why ``binding`` cannot be one znode (a ZooKeeper path rule), or None."""
        return unstorable_name(binding.resource_name)

    async def read(self) -> list[AclBinding]:
        """What ZooKeeper has now (installed: the listeners hear of it too), not what
        the last notification brought."""
        await self.load_and_install()
        return list(self._bindings)

    def on_change(self, listener: Callable[[list[AclBinding]], None]) -> None:
        """``listener(bindings)`` now and whenever ACLs are installed: after a change
        made here, and after a notification of one made through any broker."""
        self._listeners.append(listener)
        listener(list(self._bindings))

    async def apply(self, change: AclChange) -> None:
        """Store the change, then read all ACLs back (others' changes come with them).
        Raises AclStoreError with ``outcome_unknown`` when it failed after a write was
        sent (part of it, or all, may be in ZooKeeper); once stored it never raises."""
        added, removed = change.added, change.removed
        await self.session.run(self._apply, added, removed, limiter=self._limiter)
        await self._refresh_after_change(added, removed)

    # Writing -------------------------------------------------------------------

    def _apply(self, client: KazooClient, added: list[AclBinding],
               removed: list[AclBinding]) -> None:
        """Worker thread: change each touched resource's znode, then announce it. A
        resource whose znode already says what is wanted is neither written nor
        announced (the ACLs held may lag behind another broker's change)."""
        changes: dict[Resource, tuple[list[AclBinding], list[AclBinding]]] = defaultdict(
            lambda: ([], [])
        )
        for binding in added:
            changes[_resource_of(binding)][0].append(binding)
        for binding in removed:
            changes[_resource_of(binding)][1].append(binding)
        sent = False  # a write went out: after a failure ZooKeeper may hold part of it
        try:
            for resource, (plus, minus) in changes.items():
                if self._change_resource(client, resource, plus, minus):
                    sent = True
                    self._announce(client, resource)
        except AclStoreError:
            raise
        except Exception as exc:
            if sent:
                raise AclStoreError(f"{type(exc).__name__}: {exc}",
                                    outcome_unknown=True) from exc
            raise

    def _change_resource(self, client: KazooClient, resource: Resource,
                         plus: list[AclBinding], minus: list[AclBinding]) -> bool:
        """Worker thread: compare-and-set one resource's znode; False when it already
        held what is wanted (nothing written)."""
        from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

        path = resource_path(*resource)
        while True:
            try:
                data, stat = client.get(path)
                current = decode_acls(resource, data)
                version = stat.version
            except NoNodeError:
                current, version = [], None
            wanted = [b for b in dict.fromkeys(current + plus) if b not in minus]
            if wanted == current:
                return False
            try:
                if version is None:
                    client.create(path, encode_acls(wanted), makepath=True)
                elif wanted:
                    client.set(path, encode_acls(wanted), version=version)
                else:
                    client.delete(path, version=version)
                return True
            except (BadVersionError, NodeExistsError, NoNodeError):
                continue  # another broker changed it meanwhile: read again
            except Exception as exc:  # e.g. the connection lost: it may have landed
                raise AclStoreError(f"{type(exc).__name__} writing {path}: {exc}",
                                    outcome_unknown=True) from exc

    def _announce(self, client: KazooClient, resource: Resource) -> None:
        pattern, rtype, name = resource
        if pattern == PatternType.LITERAL:
            path, data = LITERAL_CHANGES, f"{RESOURCE_TYPE_NAMES[rtype]}:{name}".encode()
        else:
            path = EXTENDED_CHANGES
            data = json.dumps({"version": 1, "resourceType": RESOURCE_TYPE_NAMES[rtype],
                               "name": name, "patternType": "Prefixed"}).encode()
        client.create(f"{path}/{CHANGE_PREFIX}", data, sequence=True, makepath=True)
        # Kafka purges old notifications; here only the children watch matters (every
        # broker reads all ACLs again), so the newest few are kept and the rest go.
        from kazoo.exceptions import NoNodeError

        for old in sorted(client.get_children(path))[:-KEPT_NOTIFICATIONS]:
            try:
                client.delete(f"{path}/{old}")
            except NoNodeError:
                pass  # another broker purged it first


def _resource_of(binding: AclBinding) -> Resource:
    return binding.pattern_type, binding.resource_type, binding.resource_name


async def open_zk_acl_store(session: ZkSession) -> ZkAclStore:
    """Cluster mode: the ACLs come from ZooKeeper and changes go there. Raises when
    ZooKeeper cannot be read or one ACL znode cannot be decoded: no start then."""
    store = ZkAclStore(session)
    session.on_state(lambda state: store._changed() if state == "CONNECTED" else None)
    await store.load_and_install(refuse_unreadable=True)  # no start with one unreadable
    return store
