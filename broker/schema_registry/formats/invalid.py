"""The text of a 42201 (invalid schema) answer, shared by the formats.

Confluent 7.0 answers ``Invalid schema <text> with refs <refs> of type <TYPE>`` and no reason
(the parser's exception only reaches its log). We append ``, details: <reason>`` (master's
wording for the same thing): clients match on the error code, and a person registering a
schema needs to see why it was refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkette.broker.schema_registry.formats import Reference, SchemaFormatError


def references_text(references: Sequence[Reference]) -> str:
    """Java's ``List.toString`` of Confluent's ``SchemaReference`` objects."""
    items = (
        f"{{name='{ref.name}', subject='{ref.subject}', version={ref.version}}}"
        for ref in references
    )
    return "[" + ", ".join(items) + "]"


def invalid_schema(
    text: str, references: Sequence[Reference], schema_type: str, reason: str
) -> SchemaFormatError:
    """The exception for ``text`` of ``schema_type`` refused by its parser for ``reason``."""
    head = f"Invalid schema {text} with refs {references_text(references)} of type {schema_type}"
    return SchemaFormatError(encodable(f"{head}, details: {reason}"))


def encodable(text: str) -> str:
    """``text`` with any lone surrogate written as ``\\udXXX`` (the answer is UTF-8: a schema
    refused for holding one must still be quotable in the refusal)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
