"""Kafka's ACL vocabulary: the enums with their wire codes, bindings and filters.

The codes are the ones Kafka's ``ResourceType``, ``PatternType``, ``AclOperation``
and ``AclPermissionType`` put on the wire (CreateAcls, DescribeAcls, DeleteAcls and
the authorized-operations bitmasks, where bit n is operation code n). A filter's
``matches`` follows Kafka's ``AclBindingFilter.matches``, so ``kafka-acls.sh
--list``/``--remove`` select the same bindings here as on Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

WILDCARD_RESOURCE = "*"  # a LITERAL pattern named "*" matches every resource of its type
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
CLUSTER_NAME = "kafka-cluster"  # the one CLUSTER resource's name


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# An ALLOW for any of these operations also allows the key (Kafka's implied operations):
# whoever may read, write, delete or alter a resource may describe it, whoever may
# alter its configs may describe them.
IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}

# The operations each resource type has (Kafka's AclEntry.supportedOperations): the bits
# an authorized-operations field may carry.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}

# The names Kafka's ZooKeeper layout and its JSON use ("Topic", "Read", "Allow").
RESOURCE_TYPE_NAMES = {
    ResourceType.TOPIC: "Topic",
    ResourceType.GROUP: "Group",
    ResourceType.CLUSTER: "Cluster",
    ResourceType.TRANSACTIONAL_ID: "TransactionalId",
    ResourceType.DELEGATION_TOKEN: "DelegationToken",
    ResourceType.USER: "User",
}


def operation_name(op: AclOperation) -> str:
    """Kafka's camel-case JSON name: READ -> "Read", IDEMPOTENT_WRITE -> "IdempotentWrite"."""
    return "".join(part.capitalize() for part in op.name.split("_"))


def permission_name(permission: AclPermissionType) -> str:
    return permission.name.capitalize()


class AclError(ValueError):
    """A binding or filter Kafka refuses (INVALID_REQUEST with this message)."""


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: who (principal, host) may or may not do what (operation) to which
    resources (type + literal or prefixed name)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType  # LITERAL or PREFIXED
    principal: str  # "User:alice", or "User:*"
    host: str  # an IP address, or "*"
    operation: AclOperation
    permission: AclPermissionType  # ALLOW or DENY

    def to_json(self) -> dict:
        return {
            "resource_type": self.resource_type.name,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type.name,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation.name,
            "permission": self.permission.name,
        }

    @classmethod
    def from_json(cls, data: dict) -> AclBinding:
        return cls(
            ResourceType[data["resource_type"]],
            data["resource_name"],
            PatternType[data["pattern_type"]],
            data["principal"],
            data["host"],
            AclOperation[data["operation"]],
            AclPermissionType[data["permission"]],
        )


def _enum(kind: type[IntEnum], code: int, what: str) -> IntEnum:
    try:
        return kind(code)
    except ValueError:
        raise AclError(f"Invalid {what} {code}") from None


def new_binding(
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """A binding from a CreateAcls entry, checked in Kafka's order with Kafka's
    messages (AclError): AclApis.handleCreateAcls first (a CLUSTER resource not named
    kafka-cluster, then an empty name), then AclControlManager.validateNewAcl (the
    codes, the principal, the host)."""
    if resource_type == ResourceType.CLUSTER and resource_name != CLUSTER_NAME:
        raise AclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not resource_name:
        raise AclError("Invalid empty resource name")
    rtype = _enum(ResourceType, resource_type, "resourceType")
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise AclError(f"Invalid resourceType {rtype.name}")
    ptype = _enum(PatternType, pattern_type, "patternType")
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise AclError(f"Invalid patternType {ptype.name}")
    op = _enum(AclOperation, operation, "operation")
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise AclError(f"Invalid operation {op.name}")
    perm = _enum(AclPermissionType, permission, "permissionType")
    if perm in (AclPermissionType.UNKNOWN, AclPermissionType.ANY):
        raise AclError(f"Invalid permissionType {perm.name}")
    kind, sep, name = (principal or "").partition(":")
    if not sep:
        raise AclError(
            f"Could not parse principal from `{principal}` (no colon is present separating"
            " the principal type from the principal name)"
        )
    if not kind or not name:
        raise AclError(f"Invalid principal `{principal}`")
    if not host:
        raise AclError("Host should not be empty")
    return AclBinding(rtype, resource_name, ptype, principal, host, op, perm)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls' and DeleteAcls' selection: None and the ANY codes match anything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, acl: AclBinding) -> bool:
        return self._pattern_matches(acl) and self._entry_matches(acl)

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH) and wanted != acl.pattern_type:
            return False
        name = self.resource_name
        if name is None:
            return True
        if wanted == PatternType.ANY or wanted == acl.pattern_type:
            return name == acl.resource_name
        # MATCH: every binding whose pattern covers the named resource.
        if acl.pattern_type == PatternType.LITERAL:
            return name == acl.resource_name or acl.resource_name == WILDCARD_RESOURCE
        return name.startswith(acl.resource_name)

    def _entry_matches(self, acl: AclBinding) -> bool:
        return (
            (self.principal is None or self.principal == acl.principal)
            and (self.host is None or self.host == acl.host)
            and (self.operation == AclOperation.ANY or self.operation == acl.operation)
            and (self.permission == AclPermissionType.ANY or self.permission == acl.permission)
        )


def new_filter(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclBindingFilter:
    """A filter from DescribeAcls/DeleteAcls; raises AclError for the UNKNOWN codes
    (and codes Kafka has no name for), as Kafka answers INVALID_REQUEST for them."""
    rtype = _enum(ResourceType, resource_type, "resource type")
    ptype = _enum(PatternType, pattern_type, "pattern type")
    op = _enum(AclOperation, operation, "operation")
    perm = _enum(AclPermissionType, permission, "permission type")
    for value, what in ((rtype, "resource type"), (ptype, "pattern type"),
                        (op, "operation"), (perm, "permission type")):
        if value == 0:
            raise AclError(f"Filter contains UNKNOWN {what}")
    return AclBindingFilter(rtype, resource_name, ptype, principal, host, op, perm)
