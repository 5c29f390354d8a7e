"""SaslHandshake and SaslAuthenticate where no authentication is under way.

On a SASL listener the connection's authenticator (broker/security/sasl/authenticator.py)
answers these two APIs itself until the client has authenticated, and again when it
re-authenticates. They reach these handlers only otherwise: on a PLAINTEXT or SSL
listener, or on an authenticated connection that may not re-authenticate now. Kafka's
KafkaApis answers ILLEGAL_SASL_STATE then, and so do we.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


async def handle_sasl_handshake(broker: Broker, request: Request) -> dict:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}


async def handle_sasl_authenticate(broker: Broker, request: Request) -> dict:
    return {
        "error_code": ErrorCode.ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
    }
