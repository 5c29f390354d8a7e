"""``kafkette groups list|describe|reset-offsets|delete``: kafka-consumer-groups.sh's jobs.

``describe`` computes what ``kafka-consumer-groups.sh --describe`` prints, the same way: a
row per partition a member is assigned, with the group's committed offset (``-`` if none),
the partition's log end offset (ListOffsets latest, read_uncommitted) and the lag between
them (``-`` without a committed offset); then a row per partition the group has an offset
for that no member holds, with ``-`` as consumer, host and client. ``reset-offsets`` takes
Kafka's scenarios and scopes, prints the plan without changing anything unless
``--execute``, and refuses a group that has members, as Kafka does: offsets are only
written for an inactive group, or the running consumers would overwrite them.

Share groups (KIP-932) are listed and described too, as ``kafka-share-groups.sh`` shows
them: ``list`` adds them with type ``SHARE``, and ``describe`` of a group that is not a
consumer group asks for a share group of that name (``share_groups.py``: over the wire,
since confluent-kafka has no share-group calls), with the share-partition start offset and
lag where a consumer group has its committed offset, log end offset and lag.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    ToolError,
    dash,
    int64,
    parse_datetime_ms,
    partition_name,
    print_json,
    print_table,
    run_tool,
)

EPILOG = """examples:
  kafkette groups list
  kafkette groups describe my-app                  # offsets, log end offsets, lag, members
  kafkette groups describe my-app --members
  kafkette groups describe my-app --state
  kafkette groups describe my-workers              # a share group: start offsets, lag, members
  kafkette groups reset-offsets my-app --topic clicks --to-earliest            # plan only
  kafkette groups reset-offsets my-app --all-topics --shift-by -10 --execute
  kafkette groups delete-offsets old-app --topic clicks:0
  kafkette groups delete my-app old-app
"""

INACTIVE_STATES = {"EMPTY", "DEAD"}


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands, "groups", help="list, describe, reset offsets of and delete consumer groups",
        description="List, describe, reset offsets of and delete consumer groups "
                    "(like kafka-consumer-groups.sh); list and describe share groups "
                    "(like kafka-share-groups.sh).",
        epilog=EPILOG,
    )

    def action(name: str, help: str, examples: str) -> argparse.ArgumentParser:
        return ac.add_action(actions, name, help, examples)

    sub = action("list", "list consumer and share groups with their state and type",
                 "  kafkette groups list\n  kafkette groups list --json\n")
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = action("describe", "show a group's offsets, lag and members",
                 "  kafkette groups describe my-app\n"
                 "  kafkette groups describe my-app other-app --json\n"
                 "  kafkette groups describe my-app --members   # one row per member\n"
                 "  kafkette groups describe my-app --state     # coordinator, assignor, state\n")
    sub.add_argument("groups", nargs="+", metavar="GROUP")
    view = sub.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true",
                      help="one row per member with its assigned partitions")
    view.add_argument("--state", action="store_true",
                      help="the group's coordinator, assignor, state and member count")
    sub.set_defaults(run=lambda args: run_tool(run_describe, args))

    sub = action(
        "reset-offsets",
        "move a group's committed offsets (prints the plan; --execute applies it)",
        "  kafkette groups reset-offsets my-app --topic clicks --to-earliest\n"
        "  kafkette groups reset-offsets my-app --topic clicks:0,1 --to-offset 42 --execute\n"
        "  kafkette groups reset-offsets my-app --all-topics --to-latest --execute\n"
        "  kafkette groups reset-offsets my-app --topic clicks --shift-by -5 --execute\n"
        "  kafkette groups reset-offsets my-app --topic clicks "
        "--to-datetime 2026-01-31T12:00:00.000 --execute\n"
        "  kafkette groups reset-offsets my-app --topic clicks --by-duration PT1H --execute\n"
        "\nThe group must have no members (stop its consumers first), as Kafka requires.\n",
    )
    sub.add_argument("group", metavar="GROUP")
    scope = sub.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", action="append", metavar="TOPIC[:P,P...]",
                       help="a topic, or some of its partitions (repeatable)")
    scope.add_argument("--all-topics", action="store_true",
                       help="every topic the group has committed offsets for")
    to = sub.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="the log start offset")
    to.add_argument("--to-latest", action="store_true", help="the log end offset")
    to.add_argument("--to-current", action="store_true",
                    help="the committed offset (log end where there is none)")
    to.add_argument("--to-offset", type=int64, metavar="N",
                    help="offset N (kept within the log's start and end)")
    to.add_argument("--shift-by", type=int64, metavar="N",
                    help="the committed offset plus N (negative: back), kept within the log")
    to.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="the first offset at or after this time (local time unless a zone "
                         "is given, e.g. Z or +02:00)")
    to.add_argument("--by-duration", metavar="PnDTnHnMnS",
                    help="the first offset at or after now minus this ISO-8601 duration")
    run = sub.add_mutually_exclusive_group()
    run.add_argument("--dry-run", action="store_true",
                     help="print the new offsets, change nothing (the default)")
    run.add_argument("--execute", action="store_true", help="write the new offsets")
    sub.set_defaults(run=lambda args: run_tool(run_reset, args))

    sub = action(
        "delete-offsets",
        "delete a group's committed offsets of some topics (OffsetDelete)",
        "  kafkette groups delete-offsets old-app --topic clicks:0\n"
        "  kafkette groups delete-offsets old-app --topic clicks:1,2 --json\n"
        "  kafkette groups delete-offsets old-app --topic clicks --topic views\n"
        "\nThe group's consumers must not be subscribed to the topic: the broker refuses\n"
        "with GROUP_SUBSCRIBED_TO_TOPIC, as Kafka does (kafka-consumer-groups.sh\n"
        "--delete-offsets).\n",
    )
    sub.add_argument("group", metavar="GROUP")
    sub.add_argument("--topic", action="append", required=True, metavar="TOPIC[:P,P...]",
                     help="a topic, or some of its partitions (repeatable)")
    sub.set_defaults(run=lambda args: run_tool(run_delete_offsets, args), all_topics=False)

    sub = action("delete", "delete consumer groups (their committed offsets go with them)",
                 "  kafkette groups delete my-app\n  kafkette groups delete my-app old-app\n")
    sub.add_argument("groups", nargs="+", metavar="GROUP")
    sub.set_defaults(run=lambda args: run_tool(run_delete, args))


# ---------------------------------------------------------------- reading a group


def enum_name(value: Any) -> str:
    return str(getattr(value, "name", value)).upper()


def describe_group(admin: Any, args: argparse.Namespace, group: str) -> Any:
    futures = admin.describe_consumer_groups([group], request_timeout=args.timeout)
    value = ac.results(futures, args)[group]
    if isinstance(value, Exception):
        if ac.error_code(value) == "GROUP_ID_NOT_FOUND":
            return None
        raise ToolError(f"could not describe group {group!r}: {ac.error_text(value)}")
    return value


def committed_offsets(admin: Any, args: argparse.Namespace, group: str) -> dict[tuple, int]:
    """The group's committed offsets (OffsetFetch of every partition), by (topic, partition)."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=args.timeout)
    value = ac.results(futures, args)[group]
    if isinstance(value, Exception):
        if ac.error_code(value) == "GROUP_ID_NOT_FOUND":
            return {}
        raise ToolError(f"could not read the offsets of group {group!r}: {ac.error_text(value)}")
    return {(tp.topic, tp.partition): tp.offset for tp in value.topic_partitions
            if tp.offset >= 0}


def log_end_offsets(admin: Any, args: argparse.Namespace,
                    partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    from confluent_kafka.admin import OffsetSpec

    return ac.list_offsets(admin, args, partitions, OffsetSpec.latest())


def missing_group(group: str) -> ToolError:
    return ToolError(f"consumer group {group!r} does not exist: see `kafkette groups list`")


def member_partitions(member: Any) -> list[tuple[str, int]]:
    assignment = getattr(member, "assignment", None)
    tps = getattr(assignment, "topic_partitions", None) or []
    return sorted((tp.topic, tp.partition) for tp in tps)


def offset_rows(admin: Any, args: argparse.Namespace, group: str,
                description: Any) -> list[dict]:
    """kafka-consumer-groups.sh --describe's rows: assigned partitions, then unassigned ones."""
    committed = committed_offsets(admin, args, group)
    owners: dict[tuple[str, int], Any] = {}
    for member in description.members:
        for tp in member_partitions(member):
            owners[tp] = member
    partitions = sorted(set(owners) | set(committed))
    ends = log_end_offsets(admin, args, partitions)
    rows = []
    for tp in partitions:
        member = owners.get(tp)
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if current is not None and end is not None and end >= 0 else None
        rows.append({
            "group": group, "topic": tp[0], "partition": tp[1],
            "current_offset": current, "log_end_offset": end, "lag": lag,
            "consumer_id": member.member_id if member else None,
            "host": member.host if member else None,
            "client_id": member.client_id if member else None,
        })
    rows.sort(key=lambda r: (r["consumer_id"] is None, r["topic"], r["partition"]))
    return rows


def coordinator_text(node: dict | None) -> str:
    return f"{node['host']}:{node['port']} ({node['id']})" if node is not None else "-"


# ---------------------------------------------------------------- share groups (KIP-932)


def share_client(args: argparse.Namespace) -> Any:
    """The wire client the share-group requests go through (confluent-kafka has none), or
    the reason it cannot log in (a SASL mechanism it lacks, e.g. GSSAPI): each caller says
    what that means for its command, since the consumer groups still work."""
    from kafkette.tools.wire_client import Unsupported, WireClient

    try:
        return WireClient(args)
    except Unsupported as exc:
        return f"kafkette's own client, which asks for share groups, cannot log in with {exc}"


def share_listing(args: argparse.Namespace) -> list[dict]:
    """The share groups, for ``list``; none, said on stderr, where the wire client cannot log in."""
    from kafkette.tools import share_groups

    client = share_client(args)
    if isinstance(client, str):
        print(f"kafkette: share groups are not listed: {client}", file=sys.stderr)
        return []
    with client:
        return share_groups.list_share_groups(client)


def describe_share(args: argparse.Namespace, group: str) -> dict:
    """The share group's document, for a group that is not a consumer group."""
    from kafkette.tools import share_groups

    client = share_client(args)
    if isinstance(client, str):
        raise ToolError(f"consumer group {group!r} does not exist, and share groups cannot be "
                        f"looked up: {client}: see `kafkette groups list`")
    with client:
        document = share_groups.describe_share_group(
            client, group, offsets=not (args.members or args.state))
    if document is None:
        raise missing_group(group)
    return document


def refuse_share_group(args: argparse.Namespace, group: str) -> None:
    """reset-offsets writes consumer-group offsets (OffsetCommit): for a share group they
    would be written beside it and read by nobody, so say what it is instead."""
    from kafkette.tools import share_groups

    client = share_client(args)
    if isinstance(client, str):
        return  # no share groups to look at: the consumer-group path alone
    with client:
        found = share_groups.describe_share_group(client, group, offsets=False)
    if found is not None:
        raise ToolError(f"group {group!r} is a share group, which has start offsets, not "
                        "committed offsets: this command resets consumer groups only (see "
                        f"`kafkette groups describe {group}`)")


# ---------------------------------------------------------------- actions


def run_list(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    listing = ac.result(admin.list_consumer_groups(request_timeout=args.timeout), args)
    if listing.errors:
        raise ToolError(f"could not list every group: {ac.error_text(listing.errors[0])}")
    rows = {}
    for group in listing.valid:
        rows[group.group_id] = {
            "group": group.group_id, "state": enum_name(group.state),
            "protocol_type": "" if group.is_simple_consumer_group else "consumer",
            "type": enum_name(getattr(group, "type", "UNKNOWN"))}
    for group in share_listing(args):  # librdkafka lists consumer groups only
        rows[group["group"]] = {"group": group["group"], "state": group["state"],
                                "protocol_type": "share", "type": "SHARE"}
    rows = [rows[g] for g in sorted(rows)]
    if args.json:
        print_json(rows)
        return
    print_table(("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"),
                [(r["group"], r["state"], r["protocol_type"] or "-", r["type"]) for r in rows])


def run_describe(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    documents = []
    for group in args.groups:
        description = describe_group(admin, args, group)
        state = enum_name(description.state) if description is not None else "DEAD"
        if description is None or state == "DEAD":
            documents.append(describe_share(args, group))
            continue
        document: dict[str, Any] = {
            "group": group, "state": state,
            "coordinator": {"id": description.coordinator.id,
                            "host": description.coordinator.host,
                            "port": description.coordinator.port}
            if description.coordinator is not None else None,
            "assignment_strategy": description.partition_assignor or None,
            "members": [
                {"consumer_id": m.member_id, "group_instance_id": m.group_instance_id,
                 "host": m.host, "client_id": m.client_id,
                 "assignment": [{"topic": t, "partition": p} for t, p in member_partitions(m)]}
                for m in description.members
            ],
        }
        if not (args.members or args.state):
            document["offsets"] = offset_rows(admin, args, group, description)
        documents.append(document)
    if args.json:
        print_json(documents)
        return
    for index, doc in enumerate(documents):
        if index:
            print()
        if args.state:
            print_table(("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
                        [(doc["group"], coordinator_text(doc["coordinator"]),
                          dash(doc["assignment_strategy"]), doc["state"], len(doc["members"]))])
            continue
        share = doc.get("type") == "SHARE"
        if not doc["members"]:
            kind = "Share" if share else "Consumer"
            print(f"{kind} group '{doc['group']}' has no active members.", file=sys.stderr)
        if args.members:
            print_table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"),
                        [(doc["group"], m["consumer_id"], m["host"], m["client_id"],
                          len(m["assignment"]), assignment_text(m["assignment"]))
                         for m in doc["members"]])
            continue
        if share:
            print_table(("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG", "CONSUMER-ID",
                         "HOST", "CLIENT-ID"),
                        [(r["group"], r["topic"], r["partition"], dash(r["start_offset"]),
                          dash(r["lag"]), dash(r["consumer_id"]), dash(r["host"]),
                          dash(r["client_id"])) for r in doc["offsets"]])
            continue
        print_table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                     "CONSUMER-ID", "HOST", "CLIENT-ID"),
                    [(r["group"], r["topic"], r["partition"], dash(r["current_offset"]),
                      dash(r["log_end_offset"]), dash(r["lag"]), dash(r["consumer_id"]),
                      dash(r["host"]), dash(r["client_id"])) for r in doc["offsets"]])


def assignment_text(assignment: list[dict]) -> str:
    """``topic(0,1),other(2)``, as kafka-consumer-groups.sh --members --verbose prints it."""
    by_topic: dict[str, list[int]] = {}
    for item in assignment:
        by_topic.setdefault(item["topic"], []).append(item["partition"])
    return ",".join(f"{t}({','.join(map(str, ps))})" for t, ps in sorted(by_topic.items())) or "-"


# ---------------------------------------------------------------- reset-offsets

_DURATION = re.compile(
    r"^P(?:(?P<days>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<hours>\d+(?:\.\d+)?)H)?(?:(?P<minutes>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration (PnDTnHnMnS, as Java's Duration.parse takes) in milliseconds."""
    match = _DURATION.match(text.strip())
    if not match or text.strip().upper() in ("P", "PT") or not any(match.groupdict().values()):
        raise ToolError(f"--by-duration {text!r} is not an ISO-8601 duration: write e.g. "
                        "PT30M, PT1H or P1DT12H", 2)
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    seconds = (parts["days"] * 86400 + parts["hours"] * 3600 + parts["minutes"] * 60
               + parts["seconds"])
    return int(seconds * 1000)


def reset_scope(admin: Any, args: argparse.Namespace,
                committed: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
    if args.all_topics:
        return sorted(committed)
    wanted: list[tuple[str, int | None]] = []
    for item in args.topic:
        topic, sep, numbers = item.partition(":")
        if not sep:
            wanted.append((topic, None))
            continue
        for number in numbers.split(","):
            if not number.strip().isdigit():
                raise ToolError(f"--topic {item!r}: partitions are numbers, "
                                "e.g. --topic clicks:0,1", 2)
            wanted.append((topic, int(number)))
    metadata = ac.cluster_metadata(admin, args)
    known = {name: topic.partitions for name, topic in metadata.topics.items()}
    ac.check_partitions(known, [(t, p) for t, p in wanted if p is not None])
    partitions = {(t, p) for t, p in wanted if p is not None}
    for topic, number in wanted:
        if number is None:
            if topic not in known:
                raise ac.missing_topic(topic)
            partitions.update((topic, p) for p in known[topic])
    return sorted(partitions)


def new_offsets(admin: Any, args: argparse.Namespace, scope: list[tuple[str, int]],
                committed: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
    from confluent_kafka.admin import OffsetSpec

    earliest = ac.list_offsets(admin, args, scope, OffsetSpec.earliest())
    latest = ac.list_offsets(admin, args, scope, OffsetSpec.latest())

    def clamp(tp: tuple[str, int], offset: int) -> int:
        return max(earliest[tp], min(latest[tp], offset))

    if args.to_earliest:
        return {tp: earliest[tp] for tp in scope}
    if args.to_latest:
        return {tp: latest[tp] for tp in scope}
    if args.to_current:
        return {tp: committed.get(tp, latest[tp]) for tp in scope}
    if args.to_offset is not None:
        return {tp: clamp(tp, args.to_offset) for tp in scope}
    if args.shift_by is not None:
        without = [tp for tp in scope if tp not in committed]
        if without:
            raise ToolError(f"cannot shift {partition_name(*without[0])}: group {args.group!r} "
                            "has no committed offset there; use --to-offset, --to-earliest or "
                            "--to-latest for it")
        return {tp: clamp(tp, committed[tp] + args.shift_by) for tp in scope}
    if args.to_datetime is not None:
        stamp = parse_datetime_ms(args.to_datetime, "--to-datetime")
    else:
        stamp = int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    found = ac.list_offsets(admin, args, scope, OffsetSpec.for_timestamp(stamp))
    # No record at or after the time: the log end, as Kafka's tool does.
    return {tp: found[tp] if found[tp] >= 0 else latest[tp] for tp in scope}


def run_reset(args: argparse.Namespace) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    if args.by_duration is not None:
        parse_duration_ms(args.by_duration)  # a usage error before any network
    if args.to_datetime is not None:
        parse_datetime_ms(args.to_datetime, "--to-datetime")
    admin = ac.admin_client(args)
    group = args.group
    description = describe_group(admin, args, group)
    state = enum_name(description.state) if description is not None else "DEAD"
    if state not in INACTIVE_STATES:
        members = len(description.members) if description is not None else 0
        raise ToolError(f"group {group!r} is {state} with {members} member(s): offsets can only "
                        "be reset while the group is inactive; stop its consumers and retry")
    if state == "DEAD":
        refuse_share_group(args, group)
    committed = committed_offsets(admin, args, group)
    scope = reset_scope(admin, args, committed)
    if not scope:
        raise ToolError(f"group {group!r} has no committed offsets, so --all-topics names "
                        "nothing: name the topics with --topic")
    plan = new_offsets(admin, args, scope, committed)
    rows = [{"group": group, "topic": t, "partition": p,
             "current_offset": committed.get((t, p)), "new_offset": plan[(t, p)]}
            for t, p in scope]
    if args.execute:
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, plan[(t, p)]) for t, p in scope])
        futures = admin.alter_consumer_group_offsets([request], request_timeout=args.timeout)
        value = ac.results(futures, args)[group]
        if isinstance(value, Exception):
            raise ToolError(f"could not reset the offsets of group {group!r}: "
                            f"{ac.error_text(value)}")
        failed = [tp for tp in value.topic_partitions if tp.error is not None]
        if failed:
            tp = failed[0]
            raise ToolError(f"could not reset {partition_name(tp.topic, tp.partition)} of group "
                            f"{group!r}: "
                            f"{tp.error.str()}")
    if args.json:
        print_json({"group": group, "executed": bool(args.execute), "offsets": rows})
    else:
        print_table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                    [(r["group"], r["topic"], r["partition"], r["new_offset"]) for r in rows])
    if not args.execute:
        print("dry run: nothing was changed; add --execute to write these offsets",
              file=sys.stderr)


def run_delete(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    groups = ac.split_names(args.groups)
    futures = admin.delete_consumer_groups(groups, request_timeout=args.timeout)
    outcome = ac.results(futures, args)
    deleted, failures = [], []
    for group in groups:
        value = outcome[group]
        if not isinstance(value, Exception):
            deleted.append(group)
            continue
        code = ac.error_code(value)
        if code == "GROUP_ID_NOT_FOUND":
            failures.append(f"consumer group {group!r} does not exist: see `kafkette groups list`")
        elif code == "NON_EMPTY_GROUP":
            failures.append(f"consumer group {group!r} still has members: stop its consumers, "
                            "then delete it")
        else:
            failures.append(f"consumer group {group!r} was not deleted: {ac.error_text(value)}")
    if args.json:
        print_json({"deleted": deleted, "failed": failures})
    else:
        for group in deleted:
            print(f"Deleted consumer group {group}.")
    if failures:
        raise ToolError("; ".join(failures))


# ---------------------------------------------------------------- delete-offsets


def offset_delete(args: argparse.Namespace, group: str,
                  partitions: list[tuple[str, int]]) -> dict[tuple[str, int], str | None]:
    """OffsetDelete to the group's coordinator: each partition's error name, None where the
    offset is gone. confluent-kafka has no call for it, so it goes over kafkette's own client;
    a group-level refusal (no such group, ...) is a ToolError."""
    from kafkette.tools.wire_client import RETRIABLE, by_topic, error_text, open_client
    from kafkette.wire.apis import ApiKey
    from kafkette.wire.errors import ErrorCode

    request = {"group_id": group,
               "topics": [{"name": t, "partitions": [{"partition_index": p} for p in ps]}
                          for t, ps in by_topic(partitions).items()]}
    with open_client(args) as client:
        body = client.retry(
            lambda: client.node_link(client.coordinator(group)).request(
                ApiKey.OFFSET_DELETE, request),
            lambda answer: answer["error_code"] in RETRIABLE,
        )
    code = body["error_code"]
    if code == ErrorCode.GROUP_ID_NOT_FOUND:
        raise missing_group(group)
    if code:
        raise ToolError(f"could not delete the offsets of group {group!r}: {error_text(code)}")
    found: dict[tuple[str, int], str | None] = {}
    for topic in body["topics"]:
        for row in topic["partitions"]:
            error = row["error_code"]
            found[(topic["name"], row["partition_index"])] = (
                ErrorCode(error).name if error else None)
    return found


def run_delete_offsets(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    scope = reset_scope(admin, args, {})
    outcome = offset_delete(args, args.group, scope)
    rows = [{"group": args.group, "topic": t, "partition": p,
             "error": outcome.get((t, p), "UNKNOWN_TOPIC_OR_PARTITION")} for t, p in scope]
    if args.json:
        print_json(rows)
    else:
        print_table(("GROUP", "TOPIC", "PARTITION", "STATUS"),
                    [(r["group"], r["topic"], r["partition"], r["error"] or "Successful")
                     for r in rows])
    failed = [r for r in rows if r["error"]]
    if not failed:
        return
    where = ", ".join(f"{partition_name(r['topic'], r['partition'])} ({r['error']})"
                      for r in failed)
    hint = ("the group's consumers are subscribed to the topic: stop them (or unsubscribe "
            "them from it) first" if any(r["error"] == "GROUP_SUBSCRIBED_TO_TOPIC"
                                         for r in failed) else "see the broker's reason")
    raise ToolError(f"offsets of group {args.group!r} were not deleted for {where}: {hint}")
