"""Consumer group APIs (placeholder: FindCoordinator only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


async def handle_find_coordinator(broker: Broker, request: Request) -> dict:
    keys = request.body.get("coordinator_keys") or [request.body.get("key")]
    coordinators = [
        {
            "key": k,
            "node_id": broker.node_id,
            "host": broker.advertised.host,
            "port": broker.advertised.port,
            "error_code": 0,
            "error_message": None,
        }
        for k in keys
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "node_id": broker.node_id,
        "host": broker.advertised.host,
        "port": broker.advertised.port,
        "coordinators": coordinators,
    }


async def _unavailable(broker: Broker, request: Request) -> dict:
    return {"error_code": int(ErrorCode.COORDINATOR_NOT_AVAILABLE)}


handle_join_group = handle_sync_group = handle_heartbeat = handle_leave_group = _unavailable
handle_offset_commit = handle_offset_fetch = handle_list_groups = _unavailable
handle_describe_groups = handle_delete_groups = handle_offset_delete = _unavailable
