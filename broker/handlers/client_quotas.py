"""DescribeClientQuotas / AlterClientQuotas: the quota configs of users, client ids, ips.

Checks, error codes and texts are Kafka 4.0's (compared with the reference broker):
a bad entity, key or value fails its own entry with INVALID_REQUEST (42) and the
others still apply; a bad Describe filter fails the whole answer (42, or 35
UNSUPPORTED_VERSION for an unknown entity type). The valid entries of an Alter are
made durable together before the answer (the broker's quota store, a file or ZooKeeper), and
are enforced from then on (broker/quotas/manager.py). Kafka checks ALTER_CONFIGS /
DESCRIBE_CONFIGS on the CLUSTER, and so does this (through the authorizer, if any).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.quotas.entities import (
    CLIENT_ID,
    ENTITY_TYPES,
    IP,
    USER,
    Entity,
    QuotaRequestError,
    check_value,
    entity_text,
    is_ip_entity,
    is_ip_literal,
    make_entity,
)
from kafkette.broker.security.authorizer.checks import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    cluster_denied,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.quotas")

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
RESOLVE_TIMEOUT_S = 5.0
STORE_TIMEOUT_S = 30.0  # a store (a cluster's ZooKeeper) that does not answer
CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's default text for 31


class _FilterError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _check_filter(components: list[dict]) -> list[tuple[str, int, str | None]]:
    seen: set[str] = set()
    checked = []
    for component in components:
        entity_type, match_type, match = (
            component["entity_type"], component["match_type"], component["match"]
        )
        if entity_type not in ENTITY_TYPES:
            raise _FilterError(
                ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}"
            )
        if entity_type in seen:
            raise _FilterError(
                ErrorCode.INVALID_REQUEST,
                f"Entity type {entity_type} cannot appear more than once in the filter.",
            )
        seen.add(entity_type)
        if match_type == MATCH_EXACT and match is None:
            raise _FilterError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            )
        if match_type == MATCH_DEFAULT and match is not None:
            raise _FilterError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            )
        if match_type == MATCH_SPECIFIED and match is not None:
            raise _FilterError(
                ErrorCode.INVALID_REQUEST,
                "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            )
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise _FilterError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        checked.append((entity_type, match_type, match))
    if IP in seen and (USER in seen or CLIENT_ID in seen):
        raise _FilterError(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination. IP filter component should not "
            "be used with user or clientId filter component.",
        )
    return checked


def matches(entity: Entity, components: list[tuple[str, int, str | None]], strict: bool) -> bool:
    """Kafka 4.0's filter: every component names a type the entity has (exact name,
    default, or any name - the default included); strict: no other type."""
    names = dict(entity)
    for entity_type, match_type, match in components:
        if entity_type not in names:
            return False
        name = names[entity_type]
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name is not None:
            return False
    return not strict or len(names) == len(components)


def _entity_out(entity: Entity) -> list[dict]:
    return [{"entity_type": t, "entity_name": n} for t, n in entity]


async def handle_describe_client_quotas(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE_CONFIGS):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": CLUSTER_DENIED,
            "entries": None,
        }
    body = request.body
    try:
        components = _check_filter(body["components"])
    except _FilterError as exc:
        return {"error_code": exc.code, "error_message": str(exc), "entries": None}
    assert broker.quota_store is not None
    try:
        with trio.fail_after(STORE_TIMEOUT_S):
            quotas = await broker.quota_store.read()
    except (trio.TooSlowError, OSError, StoreUnavailable) as exc:
        log.warning("DescribeClientQuotas: quotas unavailable: %s", exc)
        return {
            "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
            "error_message": "The client quotas could not be read.",
            "entries": None,
        }
    entries = [
        {
            "entity": _entity_out(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in sorted(quotas.items(), key=lambda item: repr(item[0]))
        if matches(entity, components, body["strict"])
    ]
    return {"error_code": ErrorCode.NONE, "error_message": "", "entries": entries}


async def _resolvable(host: str) -> bool:
    """Kafka takes an ip entity's name as an IP address or a host name it can resolve."""
    if is_ip_literal(host):
        return True
    with trio.move_on_after(RESOLVE_TIMEOUT_S):
        try:
            return bool(await trio.socket.getaddrinfo(host, None))
        except (OSError, UnicodeError):
            return False
    return False


async def _check_entry(
    entry: dict, seen: set[Entity]
) -> tuple[Entity | None, dict[str, float | None], str | None]:
    """(entity, changes, None) or (entity or None, {}, error message)."""
    pairs = [(e["entity_type"], e["entity_name"]) for e in entry["entity"]]
    try:
        entity = make_entity(pairs)
    except QuotaRequestError as exc:
        return None, {}, str(exc)
    if entity in seen:
        return entity, {}, f"Ignoring duplicate entity {entity_text(entity)}"
    seen.add(entity)
    if is_ip_entity(entity) and entity[0][1] is not None and not await _resolvable(entity[0][1]):
        return entity, {}, f"{entity[0][1]} is not a valid IP or resolvable host."
    changes: dict[str, float | None] = {}
    for op in entry["ops"]:
        key = op["key"]
        if key in changes:
            return entity, {}, f"Ignoring duplicate entity {entity_text(entity)}"
        if op["remove"]:
            changes[key] = None  # a removal is not checked (Kafka 4.0)
            continue
        try:
            check_value(entity, key, op["value"])
        except QuotaRequestError as exc:
            return entity, {}, str(exc)
        changes[key] = float(op["value"])
    return entity, changes, None


# The order Kafka 4.0 answers an entity's parts in.
_ECHO_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}


def _echo(entry: dict) -> list[dict]:
    """A request entry's entity as given (it may be invalid), in Kafka's answer order."""
    parts = {e["entity_type"]: e["entity_name"] for e in entry["entity"]}
    return [
        {"entity_type": t, "entity_name": n}
        for t, n in sorted(parts.items(), key=lambda p: (_ECHO_ORDER.get(p[0], 3), p[0]))
    ]


async def handle_alter_client_quotas(broker: Broker, request: Request) -> dict:
    body = request.body
    denied = cluster_denied(broker, request, ALTER_CONFIGS)
    results: list[tuple[list[dict], int, str | None]] = []
    all_changes: dict[Entity, dict[str, float | None]] = {}
    seen: set[Entity] = set()
    for entry in body["entries"]:
        if denied:
            echoed = _echo(entry)
            results.append((echoed, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, CLUSTER_DENIED))
            continue
        entity, changes, error = await _check_entry(entry, seen)
        echoed = _entity_out(entity) if entity is not None else _echo(entry)
        if error is not None:
            results.append((echoed, ErrorCode.INVALID_REQUEST, error))
            continue
        assert entity is not None
        if changes:
            all_changes[entity] = changes
        results.append((echoed, 0, None))
    if all_changes and not body["validate_only"]:
        assert broker.quota_store is not None
        try:
            with trio.fail_after(STORE_TIMEOUT_S):
                await broker.quota_store.apply(all_changes)
        except (trio.TooSlowError, OSError, StoreUnavailable) as exc:
            log.warning("AlterClientQuotas: not stored (%s)", exc)
            message = "The client quotas could not be stored; the outcome is unknown."
            results = [
                (echoed, code, error) if code else
                (echoed, ErrorCode.UNKNOWN_SERVER_ERROR, message)
                for echoed, code, error in results
            ]
    return {
        "entries": [
            {"error_code": code, "error_message": error, "entity": echoed}
            for echoed, code, error in results
        ]
    }

