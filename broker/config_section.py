"""A settings dataclass whose fields are Kafka broker configs, ``.`` spelled ``_``.

The group and transaction coordinators each keep their settings in such a
class; building one from Kafka-named properties is the same for both: take
the names it knows (a whole ``server.properties`` may be passed), parse each
by its field's type. Values were already checked by ``broker/config.py``'s
validators; this only converts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def kafka_names(cls: type) -> dict[str, str]:
    """Kafka config name -> field name, for every field of ``cls``."""
    return {f.name.replace("_", "."): f.name for f in fields(cls)}


def from_kafka_properties(cls: type[T], props: Mapping[str, Any]) -> T:
    """``cls`` with the fields ``props`` names; bool fields take "true"/"false"."""
    values: dict[str, object] = {}
    types = {f.name: f.type for f in fields(cls)}  # type: ignore[arg-type]
    for kafka_name, field_name in kafka_names(cls).items():
        if kafka_name in props:
            raw = str(props[kafka_name]).strip()
            is_bool = types[field_name] in (bool, "bool")
            if types[field_name] in (str, "str"):
                values[field_name] = raw
            else:
                values[field_name] = raw.lower() == "true" if is_bool else int(raw)
    return cls(**values)
