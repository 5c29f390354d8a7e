"""Message definitions kafka-python does not ship, written as data in our own notation.

``wire.schema.load_message`` reads a definition from kafka-python's Kafka JSON files first
and consults this package only when that file is missing, so a future kafka-python
that ships the message wins. The facts (fields, types, versions, nullability, defaults)
are those of the published Kafka protocol (KIP-848 for the consumer group APIs, KIP-714
for the telemetry APIs, Kafka 4.3's definitions for KIP-932's share groups, KIP-1071's
streams groups, KIP-48's delegation tokens and the KRaft admin APIs); the notation is ours:

    <MessageName> <request|response> api=<key> valid=<versions> flexible=<versions>
    <FieldName> <type> <versions> [null=<versions>] [default=<value>] [tag=<n>]
      <NestedField> ...            (two more spaces: a field of the struct above)
    struct <Name>                  (a common struct, referenced by type name; its
                                    fields follow at the same indent, to the end)

Versions are written as in Kafka (``0+``, ``1-3``, ``none``); a tagged field's tagged
versions are its versions. ``parse`` turns one block into the same dict shape as a
Kafka JSON definition, so both sources go through one field builder.
"""

from __future__ import annotations

import functools

from kafkette.wire.supplement import (
    consumer_groups,
    delegation_tokens,
    kraft_admin,
    share_groups,
    streams_groups,
    telemetry,
)

_SOURCES: tuple[str, ...] = (
    consumer_groups.DEFINITIONS,
    telemetry.DEFINITIONS,
    share_groups.DEFINITIONS,
    streams_groups.DEFINITIONS,
    delegation_tokens.DEFINITIONS,
    kraft_admin.DEFINITIONS,
)


def _parse_field(words: list[str]) -> dict:
    name, type_name, versions, *options = words
    raw: dict = {"name": name, "type": type_name, "versions": versions}
    for option in options:
        key, _, value = option.partition("=")
        if key == "null":
            raw["nullableVersions"] = value
        elif key == "default":
            raw["default"] = value
        elif key == "tag":
            raw["tag"] = int(value)
            raw["taggedVersions"] = versions
        else:
            raise ValueError(f"unknown option {option!r} of field {name}")
    return raw


def parse(block: str) -> dict:
    """One message block (header line, fields, common structs) as a Kafka-JSON-shaped dict."""
    lines = [line for line in block.splitlines() if line.strip()]
    header = lines[0].split()
    name, kind = header[0], header[1]
    options = dict(word.split("=", 1) for word in header[2:])
    message: dict = {
        "name": name,
        "type": kind,
        "validVersions": options["valid"],
        "flexibleVersions": options.get("flexible", "none"),
        "fields": [],
        "commonStructs": [],
    }
    if "api" in options:
        message["apiKey"] = int(options["api"])
    # stack of (indent, list receiving fields at that indent)
    stack: list[tuple[int, list]] = [(0, message["fields"])]
    last: dict | None = None
    for line in lines[1:]:
        indent = len(line) - len(line.lstrip(" "))
        words = line.split()
        if words[0] == "struct":
            struct = {"name": words[1], "fields": []}
            message["commonStructs"].append(struct)
            stack = [(indent, struct["fields"])]
            last = None
            continue
        while indent < stack[-1][0]:
            stack.pop()
        if indent > stack[-1][0]:
            if last is None:
                raise ValueError(f"{name}: indented field {words[0]} has no parent")
            last["fields"] = []
            stack.append((indent, last["fields"]))
        last = _parse_field(words)
        stack[-1][1].append(last)
    return message


@functools.cache
def _blocks() -> dict[str, dict]:
    out = {}
    for source in _SOURCES:
        for block in source.split("\n\n"):
            if block.strip():
                message = parse(block)
                out[message["name"]] = message
    return out


def definition(name: str) -> dict | None:
    """The definition named ``name`` (e.g. ``"ConsumerGroupHeartbeatRequest"``), or None."""
    return _blocks().get(name)


def names() -> frozenset[str]:
    return frozenset(_blocks())
