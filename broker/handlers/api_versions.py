"""ApiVersions: the advertised ranges, straight from the wire package's table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.wire.apis import api_versions_entries

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


async def handle_api_versions(broker: Broker, request: Request) -> dict:
    return {"error_code": 0, "api_keys": api_versions_entries(), "throttle_time_ms": 0}
