"""Client metrics subscriptions (KIP-714) as config resources: their names, configs and checks.

``kafka-client-metrics.sh`` manages named subscriptions with three configs:
``metrics`` (metric name prefixes to collect), ``interval.ms`` (push interval,
100 to 3,600,000; Kafka's default 300,000) and ``match`` (``key=regex`` pairs on
the client's identity). They are config resources of type 16, set with
(Incremental)AlterConfigs, read with DescribeConfigs, listed with
ListClientMetricsResources; a subscription whose last config is deleted is gone.

Checks and messages are Kafka 4.0's; this module only computes a subscription's new
configs or refuses them. Where the subscriptions are kept is the store's business
(``subscriptions.py``).
"""

from __future__ import annotations

import re

from kafkette.wire.errors import ErrorCode

METRICS, INTERVAL_MS, MATCH = "metrics", "interval.ms", "match"
CONFIG_NAMES = (INTERVAL_MS, MATCH, METRICS)
INTERVAL_MIN_MS, INTERVAL_MAX_MS = 100, 3_600_000
MATCH_KEYS = frozenset({
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
})
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {OP_APPEND: "APPEND", OP_SUBTRACT: "SUBTRACT"}


class SubscriptionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def check_name(name: str) -> None:
    if not name:
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")


def _check_value(name: str, value: str) -> None:
    if name not in CONFIG_NAMES:
        raise SubscriptionError(
            ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {name}"
        )
    if name == INTERVAL_MS:
        try:
            interval = int(value.strip())
        except ValueError:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {value} for configuration {name}: Not a number of type INT",
            ) from None
        if not INTERVAL_MIN_MS <= interval <= INTERVAL_MAX_MS:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid value {interval} for interval.ms, interval must be between "
                f"{INTERVAL_MIN_MS} and {INTERVAL_MAX_MS} (1 hour)",
            )
    elif name == MATCH:
        _check_match(value)


def _check_match(value: str) -> None:
    """``key=regex`` items, comma separated, as Kafka parses them: an empty value is no
    pattern, an empty item is refused, and an item must split on ``=`` into exactly a
    known key and a regex (Java's split, trailing empty parts dropped). The regex is
    compiled by Python's ``re``, which differs from Java's in corner cases."""
    if not value.strip():
        return
    for pattern in (p.strip() for p in value.split(",")):
        parts = pattern.split("=")
        while parts and not parts[-1]:
            parts.pop()
        if len(parts) != 2 or parts[0].strip() not in MATCH_KEYS:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
            )
        try:
            re.compile(parts[1].strip())
        except re.error:
            raise SubscriptionError(  # Kafka 4.0's answer for a bad regex too (measured)
                ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}"
            ) from None


def _check_set(configs: dict[str, str]) -> None:
    """The final config set, as Kafka validates it: names first, then values."""
    for name in configs:
        if name not in CONFIG_NAMES:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {name}"
            )
    for name, value in configs.items():
        _check_value(name, value)


def apply_changes(current: dict[str, str], changes: list[dict]) -> dict[str, str]:
    """IncrementalAlterConfigs on one subscription: the new config set, or raises.

    Kafka 4.0's order (measured): a null value for anything but DELETE, then APPEND /
    SUBTRACT (refused for every client metrics config, known or not), then the final
    set is validated, so a DELETE of a key that is not set, or not known, passes."""
    names = [change["name"] for change in changes]
    if len(set(names)) != len(names):
        raise SubscriptionError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    for change in changes:
        name, op, value = change["name"], change["config_operation"], change["value"]
        if op not in (OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT):
            raise SubscriptionError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
        if op != OP_DELETE and value is None:
            raise SubscriptionError(
                ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}"
            )
    for change in changes:
        op, name = change["config_operation"], change["name"]
        if op in _OP_NAMES:
            raise SubscriptionError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {_OP_NAMES[op]} to key {name} because its type is not LIST.",
            )
    configs = dict(current)
    for change in changes:
        if change["config_operation"] == OP_SET:
            configs[change["name"]] = change["value"]
        else:
            configs.pop(change["name"], None)
    _check_set(configs)
    return configs


def replace_all(entries: list[dict]) -> dict[str, str]:
    """AlterConfigs on one subscription: the request's entries become its whole set."""
    configs = {e["name"]: e["value"] for e in entries if e["value"] is not None}
    _check_set(configs)
    return configs
