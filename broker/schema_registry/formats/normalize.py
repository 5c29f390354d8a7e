"""What ``normalize=true`` does the same way for every format: Confluent sorts a schema's
references (by subject, then version; duplicates dropped) and, for JSON, sorts object keys
(its ordered-properties Jackson mapper, Java ``String`` order)."""

from __future__ import annotations

from collections.abc import Sequence

from kafkette.broker.schema_registry.formats import Reference
from kafkette.broker.schema_registry.formats.json_text import java_sort_key


def sorted_references(references: Sequence[Reference]) -> tuple[Reference, ...]:
    """Sorted by subject then version (a stable sort), duplicates gone."""
    out: list[Reference] = []
    for ref in sorted(references, key=lambda ref: (java_sort_key(ref.subject), ref.version)):
        if ref not in out:
            out.append(ref)
    return tuple(out)


def deep_sorted(value: object) -> object:
    """``value`` with every object's keys sorted; arrays keep their order."""
    if isinstance(value, dict):
        return {key: deep_sorted(value[key]) for key in sorted(value, key=java_sort_key)}
    if isinstance(value, list):
        return [deep_sorted(item) for item in value]
    return value
