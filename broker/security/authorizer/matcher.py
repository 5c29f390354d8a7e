"""The decision: may this principal, from this host, do this operation to this resource?

Kafka's StandardAuthorizer rules, applied to the bindings that cover the resource
(a literal binding of the same name, the literal wildcard ``*``, every prefixed
binding whose prefix starts the name):

* a binding applies to the principal when it names it or ``User:*``, and to the
  host when it names the client's address or ``*``;
* a DENY for the operation (or ALL) wins over everything;
* otherwise an ALLOW for the operation, for ALL, or for an operation implying it
  (READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS)
  allows;
* a resource no binding covers at all (for anyone) gets the no-ACL rule
  (``allow.everyone.if.no.acl.found``); a covered one with no applicable ALLOW is
  denied.

Hosts are compared in Java's ``InetAddress.getHostAddress()`` form, which is what
Kafka compares a binding's host with: IPv6 as eight uncompressed groups
(``0:0:0:0:0:0:0:1``), IPv4-mapped IPv6 as the IPv4 address. Both the client's
address and the bindings' hosts are put in that form, so an ACL written for Kafka
(``--allow-host 0:0:0:0:0:0:0:1``) matches a client on ``::1``, and so does ``::1``.

Super users are decided before this module is asked (authorizer.py).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from kafkette.broker.security.authorizer.acl import (
    IMPLIED_BY,
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

ALL = AclOperation.ALL
DENY = AclPermissionType.DENY
ALLOW = AclPermissionType.ALLOW


@functools.lru_cache(maxsize=4096)
def java_host(host: str) -> str:
    """``host`` as Java's ``getHostAddress()`` writes it; ``*`` and names that are
    not IP addresses unchanged. Only decisions the cache misses come here."""
    if host == WILDCARD_HOST:
        return host
    address, sep, scope = host.partition("%")
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        text = ":".join(f"{int(g, 16):x}" for g in ip.exploded.split(":"))
        return f"{text}%{scope}" if sep else text
    return str(ip)


class AclIndex:
    """The bindings by resource type, literal ones by name: the lookup for a resource
    is a dict hit plus a walk of the (few) prefixed bindings of its type."""

    def __init__(self, bindings: Iterable[AclBinding] = ()) -> None:
        self._literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        self._all: dict[AclBinding, None] = {}  # insertion-ordered set
        for binding in bindings:
            self.add(binding)

    def __len__(self) -> int:
        return len(self._all)

    def __iter__(self):
        return iter(self._all)

    def __contains__(self, binding: object) -> bool:
        return binding in self._all

    def add(self, binding: AclBinding) -> bool:
        if binding in self._all:
            return False
        self._all[binding] = None
        if binding.pattern_type == PatternType.LITERAL:
            names = self._literal.setdefault(binding.resource_type, {})
            names.setdefault(binding.resource_name, []).append(binding)
        else:
            self._prefixed.setdefault(binding.resource_type, []).append(binding)
        return True

    def remove(self, binding: AclBinding) -> bool:
        if binding not in self._all:
            return False
        del self._all[binding]
        if binding.pattern_type == PatternType.LITERAL:
            names = self._literal[binding.resource_type]
            entries = names[binding.resource_name]
            entries.remove(binding)
            if not entries:
                del names[binding.resource_name]
        else:
            self._prefixed[binding.resource_type].remove(binding)
        return True

    def covering(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        """Every binding whose pattern covers the resource, for any principal."""
        found: list[AclBinding] = []
        names = self._literal.get(resource_type)
        if names:
            found.extend(names.get(name, ()))
            if name != WILDCARD_RESOURCE:
                found.extend(names.get(WILDCARD_RESOURCE, ()))
        for binding in self._prefixed.get(resource_type, ()):
            if name.startswith(binding.resource_name):
                found.append(binding)
        return found

    def decide(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
        allow_if_no_acl: bool,
    ) -> bool:
        bindings = self.covering(resource_type, name)
        if not bindings:
            return allow_if_no_acl
        host = java_host(host)
        implied = IMPLIED_BY.get(operation, ())
        allowed = False
        for acl in bindings:
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.host != WILDCARD_HOST and java_host(acl.host) != host:
                continue
            if acl.permission == DENY:
                if acl.operation == operation or acl.operation == ALL:
                    return False
            elif acl.operation == operation or acl.operation == ALL or acl.operation in implied:
                allowed = True
        return allowed

    def allows_some(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Kafka's ``authorizeByResourceType`` past its first check: does some ALLOW
        binding for ``operation`` on ``resource_type`` give the principal a resource
        that no DENY dominates (the same literal name, or a prefix of it)?"""
        host = java_host(host)
        deny_literal: set[str] = set()
        deny_prefixes: set[str] = set()
        allows: list[AclBinding] = []
        candidates = [
            b for names in self._literal.get(resource_type, {}).values() for b in names
        ] + self._prefixed.get(resource_type, [])
        for acl in candidates:
            if acl.host != WILDCARD_HOST and java_host(acl.host) != host:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != operation and acl.operation != ALL:
                continue
            if acl.permission == DENY:
                if acl.pattern_type == PatternType.LITERAL:
                    if acl.resource_name == WILDCARD_RESOURCE:
                        return False
                    deny_literal.add(acl.resource_name)
                else:
                    deny_prefixes.add(acl.resource_name)
            else:
                allows.append(acl)
        if any(
            a.pattern_type == PatternType.LITERAL and a.resource_name == WILDCARD_RESOURCE
            for a in allows
        ):
            return True
        for acl in allows:
            name = acl.resource_name
            if acl.pattern_type == PatternType.LITERAL and name in deny_literal:
                continue
            if not any(name[:i] in deny_prefixes for i in range(1, len(name) + 1)):
                return True
        return False
