"""``broker.authorizer``: Kafka's StandardAuthorizer for one broker.

Made from ``authorizer.class.name`` (Kafka's class names are accepted; empty, the
default, means no authorizer: ``broker.authorizer`` is None, every request is
allowed, and the handlers' only cost is that ``is None`` test). With one:

* ``super.users`` (``User:a;User:b``) may do everything, whatever the ACLs say;
* otherwise the bindings decide (matcher.py), and a resource no binding covers is
  allowed only with ``allow.everyone.if.no.acl.found=true``;
* every decision is cached per (principal, host, operation, resource) until the ACLs
  change, so Produce and Fetch pay a dict lookup per topic, not a walk of the ACLs
  (names over 249 characters are not cached; authorized-operations masks have their
  own smaller cache, so they never flush the hot decisions).

Changes (CreateAcls, DeleteAcls) are made one at a time and written to the ACL store
(a file on one node, ZooKeeper in a cluster: store.py) before they are answered. A
denial is logged once per cached decision, like Kafka's ``kafka.authorizer.logger`` at
INFO.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.authorizer.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    ResourceType,
)
from kafkette.broker.security.authorizer.matcher import AclIndex
from kafkette.broker.security.authorizer.store import AclChange

if TYPE_CHECKING:
    from kafkette.broker.config import BrokerConfig
    from kafkette.broker.security.authorizer.store import AclFileStore
    from kafkette.broker.security.authorizer.zk_store import ZkAclStore
    from kafkette.broker.security.session import Session

log = logging.getLogger("kafkette.authorizer")

# The class names Kafka's brokers take; all mean the same authorizer here.
KAFKA_AUTHORIZERS = (
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
    "kafka.security.auth.SimpleAclAuthorizer",
)
CACHE_LIMIT = 100_000  # decisions kept before the cache starts over
# Names longer than Kafka's longest topic name are decided each time, not cached:
# the cache is bounded by entries, and 100,000 hostile 32 KiB names would be GBs.
CACHEABLE_NAME_MAX = 249
# The authorized-operations masks (Metadata, DescribeGroups/Cluster) have their own
# small cache, so a client listing many resources cannot flush the decisions that
# Produce and Fetch look up.
OPERATIONS_CACHE_LIMIT = 10_000
# A cached denial not logged yet (it only filtered): the first check that logs says it.
QUIET_DENIAL = object()


class AclStoreError(Exception):
    """A change could not be made durable (disk, ZooKeeper). Nothing changed, unless
    ``outcome_unknown``: a ZooKeeper write had been sent when it failed, so part of
    the change (or all of it) may be stored."""

    def __init__(self, message: str, *, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


class AuthorizerConfigError(ValueError):
    """An authorizer config the broker cannot start with (one line for the operator)."""


def authorizer_from_config(config: BrokerConfig) -> Authorizer | None:
    """The configured authorizer, or None when ``authorizer.class.name`` is empty."""
    props = config.explicit
    class_name = props.get("authorizer.class.name", "").strip()
    if not class_name:
        return None
    if class_name not in KAFKA_AUTHORIZERS:
        raise AuthorizerConfigError(
            f"authorizer.class.name={class_name}: kafkette has Kafka's StandardAuthorizer"
            f" only ({KAFKA_AUTHORIZERS[0]}, or leave it empty for none)"
        )
    return Authorizer(
        super_users=parse_super_users(props.get("super.users", "")),
        allow_if_no_acl=_bool(props, "allow.everyone.if.no.acl.found"),
    )


def parse_super_users(text: str) -> frozenset[str]:
    """Kafka's ``super.users``: principals separated by ``;`` (``User:admin;User:ops``)."""
    users = set()
    for entry in text.split(";"):
        entry = entry.strip()
        if not entry:
            continue
        kind, sep, name = entry.partition(":")
        if not sep or not kind or not name:
            raise AuthorizerConfigError(
                f"super.users: expected principals as TYPE:NAME separated by ';', got {entry!r}"
            )
        users.add(entry)
    return frozenset(users)


def _bool(props: Mapping[str, str], name: str) -> bool:
    return props.get(name, "false").strip().lower() == "true"


class Authorizer:
    def __init__(self, *, super_users: frozenset[str], allow_if_no_acl: bool) -> None:
        self.super_users = super_users
        self.allow_if_no_acl = allow_if_no_acl
        self.index = AclIndex()
        self._cache: dict[tuple, bool | object] = {}
        self._operations_cache: dict[tuple, int] = {}
        # The data dir's file on a single node, ZooKeeper in a cluster (keep_in).
        self._store: AclFileStore | ZkAclStore | None = None
        self._changing = trio.Lock()

    # Start ---------------------------------------------------------------------

    def keep_in(self, store: AclFileStore | ZkAclStore) -> None:
        """Serve the ACLs ``store`` holds (now, and as they change) and make every change
        there."""
        self._store = store
        store.on_change(self.replace_all)

    def replace_all(self, bindings: list[AclBinding]) -> None:
        """Make ``bindings`` the ACLs (a load, or a change seen in ZooKeeper)."""
        self.index = AclIndex(bindings)
        self._cache = {}
        self._operations_cache = {}

    # Decisions -----------------------------------------------------------------

    def allowed(
        self,
        session: Session,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        log_denied: bool = True,
    ) -> bool:
        """The decision. ``log_denied=False`` where a denial only filters (Kafka's
        ``logIfDenied=false``: the topics Metadata leaves out, authorized operations):
        a principal seeing 10 of 1,000 topics must not write 990 lines."""
        # Strings and (from checks.py) plain ints: hashing the principal dataclass or an
        # IntEnum runs Python code, which would triple the cost of a cached check.
        who = session.principal
        key = (who.name, who.type, session.client_host, operation, resource_type, name)
        cached = self._cache.get(key)
        if cached is not None:
            if cached is QUIET_DENIAL:  # denied before without a line: this one logs
                if not log_denied:
                    return False
                self._cache[key] = False
                self._log_denial(str(who), session.client_host, operation, resource_type, name)
                return False
            return cached
        principal = str(who)
        if principal in self.super_users:
            decision: bool | object = True
        else:
            decision = self.index.decide(
                principal, session.client_host, operation, resource_type, name,
                self.allow_if_no_acl,
            )
            if not decision:
                if log_denied:
                    self._log_denial(principal, session.client_host, operation,
                                     resource_type, name)
                else:
                    decision = QUIET_DENIAL
        if len(name) > CACHEABLE_NAME_MAX or len(who.name) > CACHEABLE_NAME_MAX:
            return decision is True
        if len(self._cache) >= CACHE_LIMIT:
            self._cache = {}
        self._cache[key] = decision
        return decision is True

    @staticmethod
    def _log_denial(principal: str, host: str, operation, resource_type, name: str) -> None:
        log.info(
            "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
            principal, AclOperation(operation).name, host, ResourceType(resource_type).name,
            name,
        )

    def allowed_cluster(self, session: Session, operation: AclOperation) -> bool:
        return self.allowed(session, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def allows_some(
        self, session: Session, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: may the principal do ``operation`` to
        at least one resource of the type (InitProducerId: WRITE on some topic)?"""
        # Kafka first asks about a made-up name: super users and the no-ACL rule pass.
        if self.allowed(session, operation, resource_type, "hardcode", log_denied=False):
            return True
        return self.index.allows_some(
            str(session.principal), session.client_host, operation, resource_type
        )

    def authorized_operations(
        self, session: Session, resource_type: ResourceType, name: str
    ) -> int:
        """The bitmask of the resource type's operations the principal may do (bit n =
        operation code n), what the ``*_authorized_operations`` fields carry. Cached
        apart from the decisions (see OPERATIONS_CACHE_LIMIT); nothing here is logged."""
        who = session.principal
        key = (who.name, who.type, session.client_host, int(resource_type), name)
        mask = self._operations_cache.get(key)
        if mask is not None:
            return mask
        principal = str(who)
        mask = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if principal in self.super_users or self.index.decide(
                principal, session.client_host, op, resource_type, name,
                self.allow_if_no_acl,
            ):
                mask |= 1 << op
        if len(name) <= CACHEABLE_NAME_MAX and len(who.name) <= CACHEABLE_NAME_MAX:
            if len(self._operations_cache) >= OPERATIONS_CACHE_LIMIT:
                self._operations_cache = {}
            self._operations_cache[key] = mask
        return mask

    # Changes -------------------------------------------------------------------

    def unstorable(self, binding: AclBinding) -> str | None:
        """Why the store cannot keep ``binding`` (a ZooKeeper path rule), or None."""
        return None if self._store is None else self._store.unstorable(binding)

    def describe(self, selection: AclBindingFilter) -> list[AclBinding]:
        return [b for b in self.index if selection.matches(b)]

    async def create(self, bindings: list[AclBinding]) -> None:
        """Add ``bindings`` (ones already there are no change) and make them durable
        before returning; raises AclStoreError when they cannot be. The store decides
        what is new: in a cluster ZooKeeper does (each znode is read as it is changed),
        as the ACLs held may not have seen another broker's change yet."""
        async with self._changing:
            await self._commit(AclChange(added=list(dict.fromkeys(bindings)), removed=[]))

    async def delete(self, filters: list[AclBindingFilter]) -> list[list[AclBinding]]:
        """Remove every binding each filter matches; per filter, the ones it removed
        (a binding two filters match is reported under the first)."""
        async with self._changing:
            assert self._store is not None
            # Match against what the store has now (in a cluster, ZooKeeper, not what
            # the last notification brought): a binding another broker just made is
            # deleted too. Reading installs it here.
            try:
                await self._store.read()
            except Exception as exc:  # ZooKeeper away: nothing changed
                raise AclStoreError(f"{type(exc).__name__}: {exc}") from exc
            removed: list[list[AclBinding]] = []
            gone: set[AclBinding] = set()
            for selection in filters:
                matched = [b for b in self.index if b not in gone and selection.matches(b)]
                gone.update(matched)
                removed.append(matched)
            if gone:
                await self._commit(AclChange(added=[], removed=list(gone)))
            return removed

    async def _commit(self, change: AclChange) -> None:
        """Make the change durable; the store then installs it here (``keep_in``). In a
        cluster the ACLs are read back: other brokers' changes come with them, and once
        stored the change is not reported failed, whatever reading it back does."""
        assert self._store is not None
        try:
            await self._store.apply(change)
        except AclStoreError:
            raise
        except Exception as exc:  # a full disk, ZooKeeper away: the caller answers it
            raise AclStoreError(f"{type(exc).__name__}: {exc}") from exc
