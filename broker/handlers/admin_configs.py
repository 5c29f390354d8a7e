"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.

Topic configs are Kafka's topic-level names; AlterConfigs replaces a topic's
whole set, IncrementalAlterConfigs sets, deletes, appends to or subtracts from
single entries (Kafka's four operations). Broker configs are static: they are
described, and altering them is refused with a message to restart with
``--config`` (documented in docs/operations.md).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkette.broker.config import TOPIC_CONFIGS
from kafkette.broker.handlers import client_metrics_resources as subscriptions
from kafkette.broker.handlers.config_entries import (
    RESOURCE_BROKER,
    RESOURCE_BROKER_LOGGER,
    RESOURCE_TOPIC,
    broker_config_entries,
    topic_config_entries,
)
from kafkette.broker.security.authorizer.checks import (
    ALTER_CONFIGS,
    DESCRIBE_CONFIGS,
    cluster_denied,
    topic_denied,
)
from kafkette.broker.topics import TopicError
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.configs")

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
RESOURCE_GROUP = 32  # share groups' configs (group_config_resources.py)


def _config_refusal(broker: Broker, request: Request, op, rtype: int, rname: str) -> int:
    """Kafka's per-resource check: ``op`` (DESCRIBE_CONFIGS / ALTER_CONFIGS) on the
    topic, or on the cluster for broker and broker-logger resources; 0 if allowed."""
    if broker.authorizer is None:
        return 0
    if rtype == RESOURCE_TOPIC:
        return int(ErrorCode.TOPIC_AUTHORIZATION_FAILED) if topic_denied(
            broker, request, op, rname) else 0
    if rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
        return int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED) if cluster_denied(
            broker, request, op) else 0
    return 0


def _project(entry: dict, version: int, synonyms: bool, documentation: bool) -> dict:
    result = dict(entry)
    if not synonyms:
        result["synonyms"] = []
    if not documentation:
        result["documentation"] = None
    return result


async def handle_describe_configs(broker: Broker, request: Request) -> dict:
    body = request.body
    version = request.header.api_version
    results = []
    for resource in body["resources"]:
        rtype, rname = resource["resource_type"], resource["resource_name"]
        result = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": rtype,
            "resource_name": rname,
            "configs": [],
        }
        results.append(result)
        if rtype == subscriptions.RESOURCE_CLIENT_METRICS:  # subscriptions: their own module
            await subscriptions.describe_resource(broker, request, resource, result)
            continue
        if rtype == RESOURCE_GROUP:  # share groups' configs: their own module
            from kafkette.broker.handlers.group_config_resources import describe_group_resource

            if not describe_group_resource(broker, request, resource, result):
                keys = resource["configuration_keys"]
                result["configs"] = [
                    _project(e, version, body["include_synonyms"], body["include_documentation"])
                    for e in result["configs"] if not keys or e["name"] in keys
                ]
            continue
        if refusal := _config_refusal(broker, request, DESCRIBE_CONFIGS, rtype, rname):
            result["error_code"] = refusal
            continue
        if rtype == RESOURCE_TOPIC:
            if broker.topics.metadata(rname) is None:
                result["error_code"] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                result["error_message"] = f"unknown topic '{rname}'"
                continue
            entries = topic_config_entries(broker, rname)
        elif rtype == RESOURCE_BROKER:
            if rname not in ("", str(broker.node_id)):
                result["error_code"] = int(ErrorCode.INVALID_REQUEST)
                result["error_message"] = f"unknown broker id {rname}"
                continue
            entries = broker_config_entries(broker)
        elif rtype == RESOURCE_BROKER_LOGGER:
            entries = []
        else:
            result["error_code"] = int(ErrorCode.INVALID_REQUEST)
            result["error_message"] = f"unsupported resource type {rtype}"
            continue
        keys = resource["configuration_keys"]
        if keys is not None and len(keys) > 0:
            entries = [e for e in entries if e["name"] in keys]
        result["configs"] = [
            _project(e, version, body["include_synonyms"], body["include_documentation"])
            for e in entries
        ]
    return {"throttle_time_ms": 0, "results": results}


def _refuse_non_topic(rtype: int) -> None:
    if rtype in (RESOURCE_BROKER, RESOURCE_BROKER_LOGGER):
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "broker configs are static in kafkette: set them with `kafkette serve --config "
            "KEY=VALUE` and restart the broker",
        )
    if rtype != RESOURCE_TOPIC:
        raise TopicError(ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}")


# Kafka's replication throttles (``kafka-reassign-partitions.sh --throttle``): dynamic
# broker configs and topic configs. kafkette does not throttle replication, so they are
# never set: deleting them (what the tool's ``--verify`` does once a move completes) is
# a no-op that succeeds; setting them is refused like any other unknown config.
REPLICATION_THROTTLE_CONFIGS = frozenset({
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
})


def _only_clears_throttles(resource: dict) -> bool:
    changes = resource["configs"]
    return bool(changes) and all(
        c["name"] in REPLICATION_THROTTLE_CONFIGS and c["config_operation"] == OP_DELETE
        for c in changes
    )


def _replace_all(broker: Broker, resource: dict) -> dict[str, str]:
    """AlterConfigs: the request's entries become the topic's whole set."""
    return {c["name"]: c["value"] for c in resource["configs"] if c["value"] is not None}


def _apply_each(broker: Broker, resource: dict) -> dict[str, str]:
    """IncrementalAlterConfigs: each entry changes the current set."""
    configs = dict(broker.topics.topic_configs(resource["resource_name"]))
    for change in resource["configs"]:
        _apply_operation(broker, configs, change)
    return configs


async def _alter(broker: Broker, request: Request, new_configs) -> dict:
    body = request.body
    responses = []
    for resource in body["resources"]:
        rtype, rname = resource["resource_type"], resource["resource_name"]
        response = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": rtype,
            "resource_name": rname,
        }
        responses.append(response)
        if rtype == subscriptions.RESOURCE_CLIENT_METRICS:  # subscriptions: their own module
            await subscriptions.alter_resource(
                broker, request, resource, response, incremental=new_configs is _apply_each
            )
            continue
        if rtype == RESOURCE_GROUP:
            from kafkette.broker.handlers.group_config_resources import alter_group_resource

            await alter_group_resource(broker, request, resource, response,
                                       new_configs is _apply_each, body["validate_only"])
            continue
        if refusal := _config_refusal(broker, request, ALTER_CONFIGS, rtype, rname):
            response["error_code"] = refusal
            continue
        try:
            if new_configs is _apply_each and _only_clears_throttles(resource):
                if rtype == RESOURCE_TOPIC and broker.topics.metadata(rname) is None:
                    raise TopicError(
                        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic '{rname}'"
                    )
                if rtype in (RESOURCE_TOPIC, RESOURCE_BROKER):
                    continue  # never set here: nothing to delete
            _refuse_non_topic(rtype)
            configs = new_configs(broker, resource)
            await broker.topics.set_configs(rname, configs, validate_only=body["validate_only"])
        except TopicError as exc:
            response["error_code"], response["error_message"] = int(exc.code), exc.message
            continue
        if not body["validate_only"]:
            log.info("topic %s configs now %s", rname, configs)
    return {"throttle_time_ms": 0, "responses": responses}


async def handle_alter_configs(broker: Broker, request: Request) -> dict:
    return await _alter(broker, request, _replace_all)


async def handle_incremental_alter_configs(broker: Broker, request: Request) -> dict:
    return await _alter(broker, request, _apply_each)


def _apply_operation(broker: Broker, configs: dict[str, str], change: dict) -> None:
    name, op, value = change["name"], change["config_operation"], change["value"]
    if name not in TOPIC_CONFIGS:
        raise TopicError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
    if op == OP_SET:
        if value is None:
            raise TopicError(ErrorCode.INVALID_CONFIG, f"no value to set for {name}")
        configs[name] = value
    elif op == OP_DELETE:
        configs.pop(name, None)
    elif op in (OP_APPEND, OP_SUBTRACT):
        if TOPIC_CONFIGS[name][1] != "LIST":
            raise TopicError(ErrorCode.INVALID_CONFIG, f"{name} is not a list config")
        current = configs.get(name) or broker.config.topic_default(name) or ""
        items = [i for i in current.split(",") if i]
        for item in (value or "").split(","):
            if op == OP_APPEND and item and item not in items:
                items.append(item)
            elif op == OP_SUBTRACT and item in items:
                items.remove(item)
        configs[name] = ",".join(items)
    else:
        raise TopicError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
