"""UpdateFeatures (KIP-584): ``kafka-features.sh upgrade|downgrade [--dry-run]``.

kafkette's feature levels are fixed (see ``broker/features.py``), so every update
is checked as Kafka's controller checks it and, when valid, already holds: the
real run and the dry run answer alike and nothing is written. As in Kafka one bad
feature fails the whole request with INVALID_UPDATE_VERSION and the controller's
message ("The update failed for all features since ..."); v0-1 list a result per
feature when all succeed, v2 has only the top-level error.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.features import SAFE_DOWNGRADE, UPGRADE, update_problem
from kafkette.broker.security.authorizer.checks import ALTER, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.features")


async def handle_update_features(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    updates = body["feature_updates"]
    response: dict = {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "results": [],
    }
    if cluster_denied(broker, request, ALTER):
        response["error_code"] = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return response
    for update in updates:
        if version == 0:
            kind = SAFE_DOWNGRADE if update.get("allow_downgrade") else UPGRADE
        else:
            kind = update.get("upgrade_type", UPGRADE)
        problem = update_problem(
            update["feature"], update["max_version_level"], kind, broker.topology.controller_id
        )
        if problem is not None:
            log.info("feature update refused: %s", problem)
            response["error_code"] = int(ErrorCode.INVALID_UPDATE_VERSION)
            response["error_message"] = (
                "The update failed for all features since the following feature had an "
                f"error: {problem}"
            )
            return response
    if version < 2:
        response["results"] = [
            {"feature": u["feature"], "error_code": ErrorCode.NONE, "error_message": None}
            for u in updates
        ]
    return response
