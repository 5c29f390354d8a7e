"""The checks handlers make, one line each: ``True`` when the request's principal may
NOT do the operation. With no authorizer (``broker.authorizer is None``) nothing is
denied and the test costs one attribute read and an ``is None``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
)

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

# Plain ints, not the IntEnums: they key the authorizer's decision cache, and an
# IntEnum's hash runs Python code (see Authorizer.allowed).
READ = int(AclOperation.READ)
WRITE = int(AclOperation.WRITE)
CREATE = int(AclOperation.CREATE)
DELETE = int(AclOperation.DELETE)
ALTER = int(AclOperation.ALTER)
DESCRIBE = int(AclOperation.DESCRIBE)
CLUSTER_ACTION = int(AclOperation.CLUSTER_ACTION)
DESCRIBE_CONFIGS = int(AclOperation.DESCRIBE_CONFIGS)
ALTER_CONFIGS = int(AclOperation.ALTER_CONFIGS)
IDEMPOTENT_WRITE = int(AclOperation.IDEMPOTENT_WRITE)

TOPIC = int(ResourceType.TOPIC)
GROUP = int(ResourceType.GROUP)
CLUSTER = int(ResourceType.CLUSTER)
TRANSACTIONAL_ID = int(ResourceType.TRANSACTIONAL_ID)

# The bitmasks the authorized-operations fields carry when there is no authorizer:
# every operation of the resource type (today's answers, unchanged).
ALL_OPERATIONS = {
    rtype: sum(1 << op for op in ops) for rtype, ops in SUPPORTED_OPERATIONS.items()
}


def denied(
    broker: Broker, request: Request, op: int, rtype: int, name: str, *, quiet: bool = False
) -> bool:
    authorizer = broker.authorizer
    return authorizer is not None and not authorizer.allowed(
        request.session, op, rtype, name, not quiet
    )


def topic_denied(
    broker: Broker, request: Request, op: int, name: str, *, quiet: bool = False
) -> bool:
    """``quiet``: a denial that only filters what is shown is not logged (Kafka's
    ``logIfDenied=false``). Produce and Fetch check every topic: with no authorizer
    this stays one attribute read, no further call."""
    return broker.authorizer is not None and denied(broker, request, op, TOPIC, name, quiet=quiet)


def group_denied(
    broker: Broker, request: Request, op: int, name: str, *, quiet: bool = False
) -> bool:
    return denied(broker, request, op, GROUP, name, quiet=quiet)


def cluster_denied(broker: Broker, request: Request, op: int, *, quiet: bool = False) -> bool:
    authorizer = broker.authorizer
    return authorizer is not None and not authorizer.allowed(
        request.session, op, CLUSTER, CLUSTER_NAME, not quiet
    )


def transactional_id_denied(
    broker: Broker, request: Request, op: int, name: str
) -> bool:
    authorizer = broker.authorizer
    return authorizer is not None and not authorizer.allowed(
        request.session, op, TRANSACTIONAL_ID, name
    )


def authorized_operations(
    broker: Broker, request: Request, rtype: int, name: str = CLUSTER_NAME
) -> int:
    """The ``*_authorized_operations`` bitmask: the truth with an authorizer, every
    operation of the type without."""
    authorizer = broker.authorizer
    if authorizer is None:
        return ALL_OPERATIONS[rtype]
    return authorizer.authorized_operations(request.session, rtype, name)
