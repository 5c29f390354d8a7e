"""SASL PLAIN without a user database: a dev broker accepts any credentials.

Clients configured for ``SASL_PLAINTEXT``/``PLAIN`` (as they would be against
a secured cluster) connect unchanged. Other mechanisms are refused with
UNSUPPORTED_SASL_MECHANISM listing what we have, as Kafka does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.sasl")
MECHANISMS = ["PLAIN"]


async def handle_sasl_handshake(broker: Broker, request: Request) -> dict:
    mechanism = request.body["mechanism"]
    if mechanism not in MECHANISMS:
        log.warning("%s asked for SASL mechanism %s", request.peer, mechanism)
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": MECHANISMS}
    return {"error_code": 0, "mechanisms": MECHANISMS}


async def handle_sasl_authenticate(broker: Broker, request: Request) -> dict:
    token: bytes = request.body["auth_bytes"] or b""
    parts = token.split(b"\0")
    if len(parts) != 3 or not parts[1]:
        return {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "error_message": "malformed SASL/PLAIN token",
            "auth_bytes": b"",
        }
    log.info(
        "%s authenticated as %r (PLAIN, not checked)",
        request.peer,
        parts[1].decode(errors="replace"),
    )
    return {"error_code": 0, "auth_bytes": b"", "session_lifetime_ms": 0}
