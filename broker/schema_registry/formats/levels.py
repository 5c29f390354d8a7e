"""Confluent's compatibility levels over a format's reader/writer ``check``.

BACKWARD: the new schema reads data written with the latest; FORWARD: the latest reads the
new one's; FULL: both. ``_TRANSITIVE``: against every live version, newest first, stopping
at the first that fails. NONE: no check. A different schema type than a previous version's
is incompatible at any level but NONE.

A comparison too complex to finish raises ``SchemaFormatError("schema too complex to
compare")`` (``budget.TOO_COMPLEX``) out of ``check_level``: that is no verdict, so it is not
turned into an incompatibility message; the registry answers it as 422 with error code 42201
(invalid schema, this text), as for a schema it cannot parse.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkette.broker.schema_registry.formats import ParsedSchema, check

DIFFERENT_TYPE = "Incompatible because of different schema type"


def check_level(
    level: str, new: ParsedSchema, previous: Sequence[tuple[int, ParsedSchema]]
) -> list[str]:
    """Messages saying why ``new`` breaks ``level`` against ``previous`` (live versions as
    (version, schema), oldest first); [] when compatible. Raises ``SchemaFormatError`` when
    a comparison is too complex to finish."""
    level = level.upper()
    if level == "NONE" or not previous:
        return []
    # Confluent 7.0 compares the types with every live version, whatever the level.
    if any(old.schema_type != new.schema_type for _version, old in previous):
        return [DIFFERENT_TYPE]
    transitive = level.endswith("_TRANSITIVE")
    base = level.removesuffix("_TRANSITIVE")
    against = list(reversed(previous)) if transitive else [previous[-1]]
    for _version, old in against:
        messages: list[str] = []
        if base in ("FORWARD", "FULL"):  # FULL: the old-reads-new half first, as Confluent
            messages += check(old, new)
        if base in ("BACKWARD", "FULL"):
            messages += check(new, old)
        if messages:
            return messages
    return []
