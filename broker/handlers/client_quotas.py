"""DescribeClientQuotas: kafkette enforces no client quotas, so it describes none.

``kafka-configs.sh --describe --entity-type users`` asks for a user's quotas and its
SCRAM credentials together (Kafka 4.0's ConfigCommand) and fails outright when the
broker does not offer this API; an empty answer is the truth here and lets the SCRAM
half be shown. Kafka checks DESCRIBE_CONFIGS on the CLUSTER first, and so does this
(through the authorizer, when there is one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import DESCRIBE_CONFIGS, cluster_denied
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


async def handle_describe_client_quotas(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE_CONFIGS):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",  # Kafka's default for 31
            "entries": None,
        }
    return {"error_code": 0, "error_message": None, "entries": []}
