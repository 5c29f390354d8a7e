"""Client quota entities and the checks AlterClientQuotas makes, as Kafka 4.0 makes them.

An entity is a set of (type, name) pairs: ``user``, ``client-id`` (alone or together)
or ``ip`` (alone); a name of None is that type's default entity. It is kept here as a
tuple sorted by type, so ``(("client-id", "c1"), ("user", "alice"))`` names the pair
whichever order a request gave it in.

The error texts are the reference broker's (Kafka 4.0's ClientQuotaControlManager),
code 42 (INVALID_REQUEST) for all of them, checked against it with raw requests.
"""

from __future__ import annotations

import ipaddress
import math

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = (USER, CLIENT_ID, IP)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1

# Kafka's quota config keys and their ConfigDef types, per kind of entity.
CLIENT_KEYS = {
    PRODUCER_BYTE_RATE: "LONG",
    CONSUMER_BYTE_RATE: "LONG",
    REQUEST_PERCENTAGE: "DOUBLE",
    CONTROLLER_MUTATION_RATE: "DOUBLE",
}
IP_KEYS = {CONNECTION_CREATION_RATE: "INT"}

Entity = tuple[tuple[str, str | None], ...]


class QuotaRequestError(ValueError):
    """A request part Kafka refuses with INVALID_REQUEST (42) and this message."""


def make_entity(pairs: list[tuple[str, str | None]]) -> Entity:
    """The entity from a request's (type, name) pairs, checked; a type given twice keeps
    its last name (as Kafka 4.0 does). Raises QuotaRequestError."""
    by_type: dict[str, str | None] = {}
    for entity_type, name in pairs:
        by_type[entity_type] = name
    if not by_type:
        raise QuotaRequestError("Invalid empty client quota entity")
    for entity_type, name in by_type.items():
        if entity_type not in ENTITY_TYPES:
            raise QuotaRequestError(f"Unhandled client quota entity type: {entity_type}")
        if name == "":
            raise QuotaRequestError(f"Empty {entity_type} not supported")
    if IP in by_type and len(by_type) > 1:
        raise QuotaRequestError(  # sic: Kafka's text
            "Invalid quota entity combination, IP entity shouldnot be combined with "
            "User or ClientId"
        )
    return tuple(sorted(by_type.items()))


def is_ip_entity(entity: Entity) -> bool:
    return entity[0][0] == IP


def entity_text(entity: Entity) -> str:
    """As Kafka's ClientQuotaEntity prints itself in messages."""
    inner = ", ".join(f"{t}={n}" for t, n in entity)
    return f"ClientQuotaEntity(entries={{{inner}}})"


def check_value(entity: Entity, key: str, value: float) -> None:
    """One value to set for ``key`` on ``entity``; raises QuotaRequestError."""
    keys = IP_KEYS if is_ip_entity(entity) else CLIENT_KEYS
    kind = keys.get(key)
    if kind is None:
        raise QuotaRequestError(f"Invalid configuration key {key}")
    if math.isnan(value):
        # Kafka 4.0 stores NaN; a quota no comparison can break is refused here.
        raise QuotaRequestError(f"Quota {key} must be a number")
    if value == -math.inf:  # math.floor below cannot take it
        raise QuotaRequestError(f"Quota {key} must be greater than 0")
    if kind in ("LONG", "INT"):
        limit = LONG_MAX if kind == "LONG" else INT_MAX
        if value > limit:
            article = "a LONG" if kind == "LONG" else "an INT"
            raise QuotaRequestError(f"Proposed value for {key} is too large for {article}.")
        if value != math.floor(value):
            raise QuotaRequestError(f"{key} cannot be a fractional value.")
    if value <= 0:
        raise QuotaRequestError(f"Quota {key} must be greater than 0")


def is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
