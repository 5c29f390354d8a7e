"""ApiVersions: the advertised ranges, straight from the wire package's table.

From v3 the answer also carries the features kafkette serves and their finalized
levels (KIP-584, ``broker/features.py``), as tagged fields: clients such as the
Java producer read ``transaction.version`` and ``group.version`` from them. A v3
request gets no feature supported from level 0 (Kafka 4.0, KAFKA-17011).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.features import (
    FINALIZED_FEATURES_EPOCH,
    finalized_features,
    supported_features,
)
from kafkette.broker.telemetry import state_of as telemetry_state_of
from kafkette.wire.apis import api_versions_entries

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

# Per request version: v3 leaves out the features supported from level 0.
_SUPPORTED = {3: supported_features(3), 4: supported_features(4)}
_FINALIZED = finalized_features()


async def handle_api_versions(broker: Broker, request: Request) -> dict:
    response = {"error_code": 0, "api_keys": api_versions_entries(), "throttle_time_ms": 0}
    # KIP-714 subscriptions match on the software a connection announces (v3+).
    telemetry_state_of(broker).remember_software(
        request.peer,
        request.body.get("client_software_name"),
        request.body.get("client_software_version"),
    )
    if request.header.api_version >= 3:
        response["supported_features"] = _SUPPORTED[min(request.header.api_version, 4)]
        response["finalized_features_epoch"] = FINALIZED_FEATURES_EPOCH
        response["finalized_features"] = _FINALIZED
    return response
