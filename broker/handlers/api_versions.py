"""ApiVersions: the advertised ranges, straight from the wire package's table.

From v3 the answer also carries the features kafkette serves and their finalized
levels (KIP-584, ``broker/features.py``), as tagged fields: clients such as the
Java producer read ``transaction.version`` and ``group.version`` from them. A v3
request gets no feature supported from level 0 (Kafka 4.0, KAFKA-17011).

A v3+ request whose client software name or version does not match Kafka's pattern
gets INVALID_REQUEST (ApiVersionsRequest.isValid); a valid one is kept on the
connection's Session for KIP-714 subscriptions to match on.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from kafkette.broker.features import (
    FINALIZED_FEATURES_EPOCH,
    finalized_features,
    supported_features,
)
from kafkette.broker.security.session import Session
from kafkette.wire.apis import api_versions_entries
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

# Per (request version, share groups served): v3 leaves out the features supported
# from level 0; share.version is there only where share groups are served.
_SUPPORTED = {
    (version, share): supported_features(version, share)
    for version in (3, 4) for share in (True, False)
}
_FINALIZED = {share: finalized_features(share) for share in (True, False)}
_API_KEYS = {share: api_versions_entries(share) for share in (True, False)}
# Kafka's ApiVersionsRequest.isValid for client_software_name/_version (v3+).
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _valid_software(value: str | None) -> bool:
    return value is not None and _SOFTWARE.fullmatch(value) is not None


async def handle_api_versions(broker: Broker, request: Request) -> dict:
    if request.header.api_version >= 3:
        name = request.body.get("client_software_name")
        version = request.body.get("client_software_version")
        if not (_valid_software(name) and _valid_software(version)):
            # Kafka answers INVALID_REQUEST with no api keys, and keeps nothing.
            return {
                "error_code": int(ErrorCode.INVALID_REQUEST),
                "api_keys": [],
                "throttle_time_ms": 0,
            }
        # KIP-714 subscriptions match on the software a connection announces.
        if isinstance(request.session, Session):
            request.session.client_software = (name, version)  # type: ignore[assignment]
        share = broker.topology.serves_share_groups
        response = {
            "error_code": ErrorCode.NONE,
            "api_keys": _API_KEYS[share],
            "throttle_time_ms": 0,
        }
        response["supported_features"] = _SUPPORTED[(min(request.header.api_version, 4), share)]
        response["finalized_features_epoch"] = FINALIZED_FEATURES_EPOCH
        response["finalized_features"] = _FINALIZED[share]
        return response
    share = broker.topology.serves_share_groups
    return {"error_code": ErrorCode.NONE, "api_keys": _API_KEYS[share], "throttle_time_ms": 0}
