"""FindCoordinator: which broker coordinates a group or a transactional id.

The key type picks the internal topic whose partition leaders coordinate the keys
(``__consumer_offsets`` for groups, ``__transaction_state`` for transactional ids,
``__share_group_state`` for share partitions' "group:topicId:partition"); the
topology answers for each key, on a single node and in a cluster alike
(``Topology.coordinators``). Versions 0-3 ask for one key, 4+ for many.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.internal_topics import (
    OFFSETS_TOPIC,
    SHARE_STATE_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafkette.broker.security.authorizer.checks import (
    CLUSTER_ACTION,
    DESCRIBE,
    TRANSACTIONAL_ID,
    cluster_denied,
    denied,
    group_denied,
)
from kafkette.broker.security.session import listener_of
from kafkette.broker.topology import NO_COORDINATOR
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.groups")


KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_TYPE_SHARE = 2  # KIP-932: "group:topicId:partition", the share coordinator
# FindCoordinator's key types: whose internal topic's leaders coordinate the keys.
COORDINATOR_TOPICS = {
    KEY_TYPE_GROUP: OFFSETS_TOPIC,
    KEY_TYPE_TRANSACTION: TRANSACTION_STATE_TOPIC,
    KEY_TYPE_SHARE: SHARE_STATE_TOPIC,
}


def _host(request: Request) -> str:
    return "/" + request.peer.rpartition(":")[0] if request.peer else ""


async def handle_find_coordinator(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
    if broker.authorizer is not None:
        # Kafka: DESCRIBE on the group or transactional id, checked before anything.
        if body["key_type"] == KEY_TYPE_GROUP:
            refused = {k: ErrorCode.GROUP_AUTHORIZATION_FAILED for k in keys
                       if group_denied(broker, request, DESCRIBE, k)}
        elif body["key_type"] == KEY_TYPE_TRANSACTION:
            refused = {k: int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED) for k in keys
                       if denied(broker, request, DESCRIBE, TRANSACTIONAL_ID, k)}
        elif body["key_type"] == KEY_TYPE_SHARE:  # Kafka: an inter-broker lookup
            refused = ({k: int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for k in keys}
                       if cluster_denied(broker, request, CLUSTER_ACTION) else {})
        else:
            refused = {}
        if refused:
            return await _find_some_coordinators(broker, request, keys, refused)
    if body["key_type"] == KEY_TYPE_SHARE:
        malformed = {k: int(ErrorCode.INVALID_REQUEST) for k in keys if not _share_key_ok(k)}
        if malformed:
            return await _find_some_coordinators(broker, request, keys, malformed)
    return await _find_coordinators(broker, request, keys)


def _share_key_ok(key: str) -> bool:
    """Kafka's check of a share coordinator key: "group:topicId:partition"."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[1]:
        return False
    return parts[2].isdigit()


async def _find_some_coordinators(
    broker: Broker, request: Request, keys: list[str], refused: dict[str, int]
) -> dict:
    """The refused keys answered with their error, the others looked up as usual."""
    allowed = [k for k in keys if k not in refused]
    found = (await _find_coordinators(broker, request, allowed))["coordinators"] if allowed else []
    by_key = {entry["key"]: entry for entry in found}
    coordinators = [
        by_key.get(k)
        or {"key": k, "node_id": -1, "host": "", "port": -1, "error_code": refused[k],
            "error_message": ErrorCode(refused[k]).name}
        for k in keys
    ]
    first = coordinators[0]
    return {
        "throttle_time_ms": 0,
        "error_code": first["error_code"],
        "error_message": first["error_message"],
        "node_id": first["node_id"],
        "host": first["host"],
        "port": first["port"],
        "coordinators": coordinators,
    }


async def _find_coordinators(broker: Broker, request: Request, keys: list[str]) -> dict:
    """Each key's coordinator as the topology names it (this broker, another one, or
    not available now), the first one also at the top for v0-3's single key."""
    key_type = request.body["key_type"]
    topic = COORDINATOR_TOPICS.get(key_type)
    if topic is None:
        found = [NO_COORDINATOR for _ in keys]
    else:
        found = await broker.topology.coordinators(topic, keys, listener_of(request))
    coordinators = [
        {
            "key": key,
            "node_id": c.node_id,
            "host": c.host,
            "port": c.port,
            "error_code": int(c.error),
            "error_message": c.error.name if c.error else None,
        }
        for key, c in zip(keys, found, strict=True)
    ]
    if topic is None:
        for entry in coordinators:
            entry["error_message"] = f"unsupported coordinator key type {key_type}"
    first = coordinators[0] if coordinators else {}
    return {
        "throttle_time_ms": 0,
        "error_code": first.get("error_code", ErrorCode.NONE),
        "error_message": first.get("error_message"),
        "node_id": first.get("node_id", -1),
        "host": first.get("host", ""),
        "port": first.get("port", -1),
        "coordinators": coordinators,
    }
