"""ListClientMetricsResources and the CLIENT_METRICS (type 16) parts of the config APIs.

``admin_configs.py`` hands every resource of type 16 to ``describe_resource`` /
``alter_resource`` here (a one-line hook each), so the subscriptions' rules live in
``broker/telemetry/resources.py`` and their store in ``broker/telemetry/subscriptions.py``.
Kafka checks DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster for these resources, and
the same DESCRIBE_CONFIGS for the listing.

GetTelemetrySubscriptions (71) and PushTelemetry (72) stay unadvertised, as a
Kafka 4.0 broker without a metrics reporter plugin leaves them out of ApiVersions
(docs/operations-apis.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.security.authorizer.checks import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    cluster_denied,
)
from kafkette.broker.telemetry.resources import (
    SubscriptionError,
    apply_changes,
    check_name,
    replace_all,
)
from kafkette.broker.telemetry.subscriptions import SubscriptionChange, store_of
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.client_metrics")

RESOURCE_CLIENT_METRICS = 16
SOURCE_CLIENT_METRICS = 7  # ConfigSource.CLIENT_METRICS_CONFIG
TYPE_UNKNOWN = 0  # Kafka 4.0 reports these configs' type as UNKNOWN


async def handle_list_client_metrics_resources(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE_CONFIGS):
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            "config_resources": [],
        }
    try:
        names = await store_of(broker).names()
    except StoreUnavailable as exc:
        log.warning("client metrics subscriptions not listed: %s", exc)
        return {
            "throttle_time_ms": 0,
            "error_code": int(ErrorCode.UNKNOWN_SERVER_ERROR),
            "config_resources": [],
        }
    return {
        "throttle_time_ms": 0,
        "error_code": ErrorCode.NONE,
        "config_resources": [
            {"resource_name": name, "resource_type": RESOURCE_CLIENT_METRICS} for name in names
        ],
    }


async def describe_resource(broker: Broker, request: Request, resource: dict, result: dict) -> None:
    """Fill one DescribeConfigs ``result`` for a subscription: every config it has set,
    by name, whatever ``configuration_keys`` asks (Kafka 4.0 ignores them for client
    metrics resources, measured); an unknown subscription has none, as in Kafka."""
    if cluster_denied(broker, request, DESCRIBE_CONFIGS):
        result["error_code"] = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return
    name = resource["resource_name"]
    if not name:
        result["error_code"] = int(ErrorCode.INVALID_REQUEST)
        result["error_message"] = "Client metrics subscription name must not be empty"
        return
    try:
        configs = await store_of(broker).configs(name)
    except StoreUnavailable as exc:
        log.warning("client metrics subscription %s not described: %s", name, exc)
        result["error_code"] = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        result["error_message"] = str(exc)
        return
    result["configs"] = [
        {
            "name": key,
            "value": value,
            "read_only": False,
            "is_default": False,
            "config_source": SOURCE_CLIENT_METRICS,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": TYPE_UNKNOWN,
            "documentation": None,
        }
        for key, value in sorted(configs.items())
    ]


async def alter_resource(
    broker: Broker, request: Request, resource: dict, response: dict, *, incremental: bool
) -> None:
    """Apply one (Incremental)AlterConfigs resource to a subscription; errors go in
    ``response`` (Kafka's codes and messages)."""
    if cluster_denied(broker, request, ALTER_CONFIGS):
        response["error_code"] = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        return
    name = resource["resource_name"]
    changes = resource["configs"]

    def change(current: dict[str, str]) -> dict[str, str]:
        return apply_changes(current, changes) if incremental else replace_all(changes)

    try:
        check_name(name)
        configs = await store_of(broker).apply(
            SubscriptionChange(name, change, validate_only=request.body["validate_only"])
        )
    except SubscriptionError as exc:
        response["error_code"], response["error_message"] = int(exc.code), exc.message
        return
    except OSError as exc:  # the file could not be replaced: the old set still holds
        log.warning("client metrics subscription %s not changed: %s", name, exc)
        response["error_code"] = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        response["error_message"] = f"could not write the subscriptions: {exc.strerror or exc}"
        return
    except StoreUnavailable as exc:  # ZooKeeper (a cluster): nothing changed
        log.warning("client metrics subscription %s not changed: %s", name, exc)
        response["error_code"] = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        response["error_message"] = str(exc)
        return
    if not request.body["validate_only"]:
        log.info("client metrics subscription %s now %s", name, configs or "removed")
