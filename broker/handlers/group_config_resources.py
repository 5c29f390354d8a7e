"""DescribeConfigs and (Incremental)AlterConfigs on GROUP resources (type 32).

The share groups' own configs (``broker/share_groups/group_configs.py``), as
``kafka-configs.sh --entity-type groups`` and the admin clients read and set them. A
set config is GROUP_CONFIG (source 8), the others show the broker's value as
DEFAULT_CONFIG. Authorization is Kafka's: DESCRIBE_CONFIGS / ALTER_CONFIGS on the group.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.handlers.config_entries import SOURCE_DEFAULT, _entry
from kafkette.broker.security.authorizer.checks import ALTER_CONFIGS, DESCRIBE_CONFIGS, group_denied
from kafkette.broker.share_groups.group_configs import (
    SHARE_GROUP_CONFIGS,
    GroupConfigError,
    default_of,
    store_of,
    validate,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.configs")

SOURCE_GROUP = 8
OP_SET, OP_DELETE = 0, 1


def group_config_entries(broker: Broker, group_id: str) -> list[dict]:
    own = store_of(broker).get(group_id)
    entries = []
    for name, (kind, _broker_name, _bound) in sorted(SHARE_GROUP_CONFIGS.items()):
        default = default_of(name, broker.config.groups)
        if name in own:
            synonyms = [{"name": name, "value": own[name], "source": SOURCE_GROUP}]
            entries.append(_entry(name, own[name], SOURCE_GROUP, kind, "", synonyms))
        else:
            entries.append(_entry(name, default, SOURCE_DEFAULT, kind, "", []))
    return entries


def describe_group_resource(broker: Broker, request: Request, resource: dict,
                            result: dict) -> bool:
    """Fill ``result``; False if the caller should apply its key filter and projection."""
    group_id = resource["resource_name"]
    if group_denied(broker, request, DESCRIBE_CONFIGS, group_id):
        result["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return True
    if not group_id:
        result["error_code"] = int(ErrorCode.INVALID_REQUEST)
        result["error_message"] = "Group name must not be empty"
        return True
    result["configs"] = group_config_entries(broker, group_id)
    return False


async def alter_group_resource(broker: Broker, request: Request, resource: dict,
                               response: dict, incremental: bool, validate_only: bool) -> None:
    group_id = resource["resource_name"]
    if group_denied(broker, request, ALTER_CONFIGS, group_id):
        response["error_code"] = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return
    store = store_of(broker)
    configs = store.get(group_id) if incremental else {}
    groups = broker.config.groups
    try:
        for change in resource["configs"]:
            name, value = change["name"], change["value"]
            op = change.get("config_operation", OP_SET) if incremental else OP_SET
            if op == OP_DELETE:
                if name not in SHARE_GROUP_CONFIGS:
                    raise GroupConfigError(f"Unknown group config name: {name}")
                configs.pop(name, None)
                continue
            if op != OP_SET:
                raise GroupConfigError(f"{name} is not a list config")
            if value is None:
                raise GroupConfigError(f"Null value not supported for : {name}")
            validate(name, value, groups)
            configs[name] = value
    except GroupConfigError as exc:
        response["error_code"] = int(ErrorCode.INVALID_CONFIG)
        response["error_message"] = str(exc)
        return
    if validate_only:
        return
    try:
        await trio.to_thread.run_sync(store.replace, group_id, configs)
    except (OSError, StoreUnavailable) as exc:  # the file or ZooKeeper: nothing changed
        log.warning("group %s configs not changed: %s", group_id, exc)
        response["error_code"] = int(ErrorCode.UNKNOWN_SERVER_ERROR)
        response["error_message"] = f"could not store the group configs: {exc}"
        return
    log.info("group %s configs now %s", group_id, configs)
