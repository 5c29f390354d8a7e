"""Share groups (KIP-932) for ``kafkette groups``: listed and described over the wire.

What ``kafka-share-groups.sh --list/--describe`` asks, asked the same way: ListGroups (type
``share``) of every broker, ShareGroupDescribe of the group's coordinator for its state,
assignor and members, and DescribeShareGroupOffsets (v1, KIP-1226, for the lag; v0 has none)
for each share partition's start offset. A share group's "offset" is its share-partition start
offset: every record below it is delivered and done with; its lag is what is left to deliver
(Kafka's figure, computed by the broker). Several members may fetch from one partition at once,
so a partition has a row per member assigned it.

How many records are in flight or archived is not in Kafka's APIs: ``kafkette serve --ui``
shows it for kafkette's own share partitions. The caller opens the wire client (``groups.py``
decides what a connection it cannot open means for its command).
"""

from __future__ import annotations

import re
from typing import Any

from kafkette.tools.common import ToolError
from kafkette.tools.wire_client import (
    RETRIABLE,
    Link,
    Node,
    Unsupported,
    WireClient,
    error_text,
    node_json,
)
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode

GROUP_TYPE = "SHARE"
PROTOCOL_TYPE = "share"
_CAMEL = re.compile(r"(?<!^)(?=[A-Z])")


def state_name(state: str) -> str:
    """Kafka's ``Stable`` as the tools print states: ``STABLE``."""
    return _CAMEL.sub("_", state).upper() if state else "UNKNOWN"


def list_share_groups(client: WireClient) -> list[dict[str, Any]]:
    """``[{"group", "state"}]`` of every share group of the cluster, by group id.

    ListGroups goes to each broker, since each lists the groups it coordinates; a broker
    without share groups (ListGroups below v5 lists no group type) adds none.
    """
    found: dict[str, dict[str, Any]] = {}
    for node in client.brokers():
        try:
            _, body = client.node_link(node).call(ApiKey.LIST_GROUPS, {
                "states_filter": [], "types_filter": ["share"]}, lowest=5, highest=5)
        except Unsupported:
            continue
        if body["error_code"]:
            raise ToolError(f"could not list the share groups of broker {node.node_id}: "
                            f"{error_text(body['error_code'])}")
        for group in body["groups"]:
            if group["group_type"].lower() == PROTOCOL_TYPE:
                found[group["group_id"]] = {"group": group["group_id"],
                                            "state": state_name(group["group_state"])}
    return [found[g] for g in sorted(found)]


def describe_share_group(client: WireClient, group: str,
                         offsets: bool) -> dict[str, Any] | None:
    """The group's document (``kafkette groups describe --json``'s shape), or None when the
    cluster has no share group of that name (or no share groups at all)."""

    def attempt() -> tuple[Node, Link, dict] | None:
        node = client.coordinator(group)
        link = client.node_link(node)
        try:
            _, body = link.call(ApiKey.SHARE_GROUP_DESCRIBE,
                                {"group_ids": [group], "include_authorized_operations": False})
        except Unsupported:
            return None
        return node, link, body["groups"][0]

    answer = client.retry(attempt, lambda a: a is not None and a[2]["error_code"] in RETRIABLE)
    if answer is None:
        return None
    node, link, entry = answer
    code = entry["error_code"]
    if code == ErrorCode.GROUP_ID_NOT_FOUND or (code == 0 and entry["group_state"] == "Dead"):
        return None
    if code:
        raise ToolError(f"could not describe share group {group!r}: "
                        f"{error_text(code, entry['error_message'])}")
    members = [_member(m) for m in entry["members"]]
    document: dict[str, Any] = {
        "group": group, "type": GROUP_TYPE, "state": state_name(entry["group_state"]),
        "coordinator": node_json(node),
        "assignment_strategy": entry["assignor_name"] or None,
        "members": members,
    }
    if offsets:
        document["offsets"] = _offset_rows(link, node, group, members)
    return document


def _member(member: dict) -> dict[str, Any]:
    assignment = sorted(
        (tp["topic_name"], p)
        for tp in (member["assignment"] or {}).get("topic_partitions", [])
        for p in tp["partitions"]
    )
    return {"consumer_id": member["member_id"], "host": member["client_host"],
            "client_id": member["client_id"],
            "assignment": [{"topic": t, "partition": p} for t, p in assignment]}


def start_offsets(link: Link, node: Node, group: str) -> dict[tuple[str, int], dict]:
    """(topic, partition) -> {"start_offset", "lag"} of every share partition the group has
    state for (DescribeShareGroupOffsets with no topics named); None where the broker has no
    figure (no start offset yet, or a v0 answer without lag)."""
    try:
        _, body = link.call(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
                            {"groups": [{"group_id": group, "topics": None}]}, highest=1)
    except Unsupported as exc:
        raise ToolError(f"broker {node.node_id} describes share groups but not their offsets "
                        f"({exc}): it needs DescribeShareGroupOffsets (Kafka 4.1 or later)"
                        ) from None
    entry = body["groups"][0]
    if entry["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND:
        return {}  # deleted between the two requests: no offsets
    if entry["error_code"]:
        raise ToolError(f"could not read the start offsets of share group {group!r}: "
                        f"{error_text(entry['error_code'], entry['error_message'])}")
    found = {}
    for topic in entry["topics"]:
        for row in topic["partitions"]:
            ok = row["error_code"] == 0
            start = row["start_offset"] if ok and row["start_offset"] >= 0 else None
            lag = row["lag"] if ok and start is not None and row["lag"] >= 0 else None
            found[(topic["topic_name"], row["partition_index"])] = {
                "start_offset": start, "lag": lag}
    return found


def _offset_rows(link: Link, node: Node, group: str,
                 members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A row per (partition, member assigned it), then one per partition the group has a
    start offset for that no member holds; rows with a member first, then by partition."""
    offsets = start_offsets(link, node, group)
    holders: dict[tuple[str, int], list[dict]] = {}
    for member in members:
        for tp in member["assignment"]:
            holders.setdefault((tp["topic"], tp["partition"]), []).append(member)
    rows = []
    for tp in sorted(set(holders) | set(offsets)):
        figures = offsets.get(tp, {"start_offset": None, "lag": None})
        for member in holders.get(tp) or [None]:
            rows.append({
                "group": group, "topic": tp[0], "partition": tp[1],
                "start_offset": figures["start_offset"], "lag": figures["lag"],
                "consumer_id": member["consumer_id"] if member else None,
                "host": member["host"] if member else None,
                "client_id": member["client_id"] if member else None,
            })
    rows.sort(key=lambda r: (r["consumer_id"] is None, r["topic"], r["partition"],
                             r["consumer_id"] or ""))
    return rows
