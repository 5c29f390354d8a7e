"""``kafkette topics list|create|describe|alter|delete``: kafka-topics.sh's jobs, rpk's manners.

Works against any Kafka-compatible broker through confluent-kafka's AdminClient
(tools/admin_client.py bounds every call). Internal topics (names starting with ``__``,
such as ``__consumer_offsets``) are hidden unless ``--internal``, as ``rpk topic list`` does:
a developer asks about their own topics. ``describe`` adds each partition's log start and
end offsets (ListOffsets earliest/latest), which kafka-topics.sh leaves to another tool.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.admin_client import (
    describe_topics,
    is_internal,
    kafka_topic_id,
    known_topics,
    missing_topic,
)
from kafkette.tools.common import (
    ToolError,
    int16,
    int32,
    int64,
    parse_datetime_ms,
    partition_entries,
    partition_name,
    print_json,
    print_table,
    read_json_file,
    run_tool,
)

EPILOG = """examples:
  kafkette topics list
  kafkette topics create clicks --partitions 3 --config retention.ms=86400000
  kafkette topics create clicks --if-not-exists
  kafkette topics describe clicks views
  kafkette topics alter clicks --partitions 6
  kafkette topics alter clicks --config retention.ms=3600000 --delete-config cleanup.policy
  kafkette topics delete clicks views --if-exists
  kafkette topics list --json | jq -r '.[].topic'
"""


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands, "topics", help="list, create, describe, alter and delete topics",
        description="List, create, describe, alter and delete topics (like kafka-topics.sh).",
        epilog=EPILOG,
    )

    def action(name: str, help: str, examples: str) -> argparse.ArgumentParser:
        return ac.add_action(actions, name, help, examples)

    sub = action("list", "list topics with their partition count and replication factor",
                 "  kafkette topics list\n  kafkette topics list --internal --json\n"
                 "  kafkette topics list --topic 'cl.*'        # names matching a regex\n")
    sub.add_argument("--internal", action="store_true",
                     help="include internal topics (__consumer_offsets, __transaction_state)")
    sub.add_argument("--topic", metavar="REGEX",
                     help="only topics whose whole name matches this regular expression "
                          "(a comma means 'or', as in kafka-topics.sh)")
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = action("create", "create topics",
                 "  kafkette topics create clicks\n"
                 "  kafkette topics create clicks views --partitions 3 --replication-factor 1\n"
                 "  kafkette topics create logs --config cleanup.policy=compact "
                 "--config segment.bytes=1048576\n"
                 "  kafkette topics create clicks --if-not-exists   # exit 0 if it exists\n")
    sub.add_argument("topics", nargs="+", metavar="TOPIC")
    sub.add_argument("-p", "--partitions", type=int32, default=-1,
                     help="partition count (default: the broker's num.partitions)")
    sub.add_argument("-r", "--replication-factor", type=int16, default=-1,
                     help="replicas per partition "
                          "(default: the broker's default.replication.factor)")
    sub.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                     help="a topic config (repeatable), e.g. --config retention.ms=60000")
    sub.add_argument("--if-not-exists", action="store_true",
                     help="succeed if the topic already exists")
    sub.set_defaults(run=lambda args: run_tool(run_create, args))

    sub = action("describe", "show topic ids, partitions (leader, replicas, ISR, log offsets) "
                             "and configs",
                 "  kafkette topics describe clicks\n"
                 "  kafkette topics describe clicks views --json\n"
                 "  kafkette topics describe            # every topic\n")
    sub.add_argument("topics", nargs="*", metavar="TOPIC")
    sub.add_argument("--internal", action="store_true",
                     help="with no TOPIC, include internal topics")
    sub.set_defaults(run=lambda args: run_tool(run_describe, args))

    sub = action("alter", "add partitions, set or delete topic configs",
                 "  kafkette topics alter clicks --partitions 6\n"
                 "  kafkette topics alter clicks --config retention.ms=3600000\n"
                 "  kafkette topics alter clicks --delete-config retention.ms\n")
    sub.add_argument("topic", metavar="TOPIC")
    sub.add_argument("-p", "--partitions", type=int32,
                     help="the new partition count (partitions can only be added)")
    sub.add_argument("-c", "--config", action="append", default=[], metavar="KEY=VALUE",
                     help="set a topic config (repeatable; IncrementalAlterConfigs SET)")
    sub.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                     help="remove a topic config override, back to the default (repeatable)")
    sub.set_defaults(run=lambda args: run_tool(run_alter, args))

    sub = action(
        "delete-records",
        "delete a topic's records before an offset or a time (kafka-delete-records.sh)",
        "  kafkette topics delete-records clicks --offset -1           # every record\n"
        "  kafkette topics delete-records clicks --partition 0 --before 2026-01-31T12:00:00.000\n"
        "  kafkette topics delete-records clicks --timestamp 1767225600000 --json\n"
        "  echo '{\"partitions\": [{\"topic\": \"clicks\", \"partition\": 0, "
        "\"offset\": -1}], \"version\": 1}' > offsets.json\n"
        "  kafkette topics delete-records --offset-json-file offsets.json\n"
        "\nTo an offset: `--partition 0 --offset 42` deletes the records before offset 42 of\n"
        "partition 0 (`--offset` alone: of every partition). They are gone for good: the\n"
        "partition's log start offset (its low watermark) moves up to it; -1 means the high\n"
        "watermark (every record), and an offset past it is the broker's OFFSET_OUT_OF_RANGE.\n"
        "--before and --timestamp delete the records before the first one at or after that\n"
        "time (ListOffsets by timestamp).\n")
    sub.add_argument("topic", nargs="?", metavar="TOPIC")
    sub.add_argument("--partition", type=int32, action="append", metavar="P",
                     help="only this partition (repeatable; default: every partition)")
    to = sub.add_mutually_exclusive_group(required=True)
    to.add_argument("--offset", type=int64, metavar="N",
                    help="delete the records before offset N (-1: before the high watermark)")
    to.add_argument("--timestamp", type=int64, metavar="MS",
                    help="delete the records older than this time (epoch milliseconds)")
    to.add_argument("--before", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                    help="delete the records older than this time (local time unless a zone "
                         "is given, e.g. Z or +02:00)")
    to.add_argument("--offset-json-file", metavar="FILE",
                    help="Kafka's JSON file: {\"partitions\": [{\"topic\": T, \"partition\": "
                         "P, \"offset\": N}], \"version\": 1} (- for stdin)")
    sub.set_defaults(run=lambda args: run_tool(run_delete_records, args))

    sub = action("delete", "delete topics",
                 "  kafkette topics delete clicks\n"
                 "  kafkette topics delete clicks views --if-exists\n")
    sub.add_argument("topics", nargs="+", metavar="TOPIC")
    sub.add_argument("--if-exists", action="store_true",
                     help="succeed if a topic does not exist")
    sub.set_defaults(run=lambda args: run_tool(run_delete, args))


def replication_factor(topic: Any) -> int:
    partitions = list(topic.partitions.values())
    return len(partitions[0].replicas) if partitions else 0


def topic_filter(text: str | None) -> re.Pattern[str] | None:
    """kafka-topics.sh's ``--topic`` regex (its IncludeList): the whole name must match, a
    comma means "or", spaces and surrounding quotes are dropped. A bad one is exit 2."""
    if text is None:
        return None
    raw = text.strip().replace(",", "|").replace(" ", "").strip("'\"")
    try:
        return re.compile(raw)
    except re.error as exc:
        raise ToolError(f"--topic {text!r} is not a regular expression ({exc}): write e.g. "
                        "--topic 'clicks.*' or --topic clicks,views", 2) from None


def run_list(args: argparse.Namespace) -> None:
    wanted = topic_filter(args.topic)
    admin = ac.admin_client(args)
    topics = known_topics(admin, args, args.internal)
    rows = []
    for name in sorted(topics):
        if is_internal(name) and not args.internal:
            continue
        if wanted is not None and not wanted.fullmatch(name):
            continue
        topic = topics[name]
        rows.append({"topic": name, "partitions": len(topic.partitions),
                     "replication_factor": replication_factor(topic),
                     "internal": is_internal(name)})
    if args.json:
        print_json(rows)
        return
    print_table(("TOPIC", "PARTITIONS", "REPLICATION-FACTOR"),
                [(r["topic"], r["partitions"], r["replication_factor"]) for r in rows])


def run_create(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import NewTopic

    configs = ac.parse_key_values(args.config, "--config")
    admin = ac.admin_client(args)
    new = [NewTopic(name, num_partitions=args.partitions,
                    replication_factor=args.replication_factor, config=configs)
           for name in args.topics]
    futures = admin.create_topics(new, operation_timeout=args.timeout,
                                  request_timeout=args.timeout)
    outcome = ac.results(futures, args)
    created, existing, failures = [], [], []
    for name in args.topics:
        value = outcome[name]
        if not isinstance(value, Exception):
            created.append(name)
        elif ac.error_code(value) == "TOPIC_ALREADY_EXISTS":
            existing.append(name)
        else:
            failures.append(f"topic {name!r} was not created: {ac.error_text(value)}")
    if existing and not args.if_not_exists:
        failures.insert(0, f"topic {existing[0]!r} already exists: "
                           "add --if-not-exists to accept an existing topic")
    if args.json:
        print_json({"created": created, "existing": existing})
    else:
        for name in created:
            print(f"Created topic {name}.")
    if failures:
        raise ToolError("; ".join(failures))


def log_offsets(admin: Any, args: argparse.Namespace,
                partitions: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
    """(log start offset, log end offset) of each partition, by ListOffsets."""
    from confluent_kafka.admin import OffsetSpec

    starts = ac.list_offsets(admin, args, partitions, OffsetSpec.earliest())
    ends = ac.list_offsets(admin, args, partitions, OffsetSpec.latest())
    return {tp: (starts.get(tp, -1), ends.get(tp, -1)) for tp in partitions}


def topic_overrides(admin: Any, args: argparse.Namespace, names: list[str]) -> dict[str, dict]:
    """Each topic's own config overrides (source DYNAMIC_TOPIC_CONFIG), as kafka-topics shows."""
    from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

    if not names:
        return {}
    resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
    futures = admin.describe_configs(resources, request_timeout=args.timeout)
    overrides: dict[str, dict] = {}
    for resource, value in ac.results(futures, args).items():
        if isinstance(value, Exception):
            raise ToolError(f"could not read the configs of topic {resource.name!r}: "
                            f"{ac.error_text(value)}")
        overrides[resource.name] = {
            entry.name: entry.value for entry in value.values()
            if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
            or entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
        }
    return overrides


def run_describe(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    topics = known_topics(admin, args, args.internal and not args.topics, args.topics)
    names = args.topics or sorted(n for n in topics if args.internal or not is_internal(n))
    for name in names:
        if name not in topics:
            raise missing_topic(name)
    partitions = [(name, p) for name in names for p in sorted(topics[name].partitions)]
    offsets = log_offsets(admin, args, partitions)
    overrides = topic_overrides(admin, args, names)
    described = describe_topics(admin, args, names)
    documents = []
    for name in names:
        topic = topics[name]
        rows = []
        for pid in sorted(topic.partitions):
            partition = topic.partitions[pid]
            start, end = offsets[(name, pid)]
            rows.append({"partition": pid, "leader": partition.leader,
                         "replicas": list(partition.replicas), "isr": list(partition.isrs),
                         "log_start_offset": start, "log_end_offset": end})
        topic_id = kafka_topic_id(described[name].topic_id) if name in described else None
        documents.append({"topic": name, "topic_id": topic_id, "partition_count": len(rows),
                          "replication_factor": replication_factor(topic),
                          "partitions": rows, "configs": dict(sorted(overrides[name].items()))})
    if args.json:
        print_json(documents)
        return
    print_table(("TOPIC", "TOPIC-ID", "PARTITIONS", "REPLICATION-FACTOR"),
                [(doc["topic"], doc["topic_id"] or "-", doc["partition_count"],
                  doc["replication_factor"]) for doc in documents])
    print()
    print_table(
        ("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START-OFFSET", "LOG-END-OFFSET"),
        [(doc["topic"], row["partition"], row["leader"], ",".join(map(str, row["replicas"])),
          ",".join(map(str, row["isr"])), row["log_start_offset"], row["log_end_offset"])
         for doc in documents for row in doc["partitions"]],
    )
    config_rows = [(doc["topic"], key, value)
                   for doc in documents for key, value in doc["configs"].items()]
    if config_rows:
        print()
        print_table(("TOPIC", "CONFIG", "VALUE"), config_rows)


def run_alter(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        ResourceType,
    )

    sets = ac.parse_key_values(args.config, "--config")
    if args.partitions is None and not sets and not args.delete_config:
        raise ToolError("nothing to alter: give --partitions N, --config KEY=VALUE "
                        "or --delete-config KEY", 2)
    admin = ac.admin_client(args)
    metadata = ac.cluster_metadata(admin, args)
    topic = metadata.topics.get(args.topic)
    if topic is None:
        raise missing_topic(args.topic)
    done: dict[str, Any] = {"topic": args.topic}
    if args.partitions is not None:
        current = len(topic.partitions)
        if args.partitions <= current:
            raise ToolError(f"topic {args.topic!r} has {current} partitions: --partitions must "
                            f"be more than {current} (partitions can be added, never removed)")
        futures = admin.create_partitions([NewPartitions(args.topic, args.partitions)],
                                          operation_timeout=args.timeout,
                                          request_timeout=args.timeout)
        for value in ac.results(futures, args).values():
            if isinstance(value, Exception):
                raise ToolError(f"could not add partitions to {args.topic!r}: "
                                f"{ac.error_text(value)}")
        done["partitions"] = args.partitions
    if sets or args.delete_config:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in sets.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                    for k in args.delete_config]
        resource = ConfigResource(ResourceType.TOPIC, args.topic, incremental_configs=entries)
        futures = admin.incremental_alter_configs([resource], request_timeout=args.timeout)
        for value in ac.results(futures, args).values():
            if isinstance(value, Exception):
                raise ToolError(f"could not alter the configs of {args.topic!r}: "
                                f"{ac.error_text(value)}")
        done["set"] = sets
        done["deleted"] = list(args.delete_config)
    if args.json:
        print_json(done)
        return
    if "partitions" in done:
        print(f"Topic {args.topic} now has {args.partitions} partitions.")
    if sets or args.delete_config:
        print(f"Altered the configs of topic {args.topic}.")


def run_delete(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    metadata = ac.cluster_metadata(admin, args)
    missing = [name for name in args.topics if name not in metadata.topics]
    if missing and not args.if_exists:
        raise ToolError(f"topic {missing[0]!r} does not exist (nothing deleted): "
                        "see `kafkette topics list`, or add --if-exists")
    present = [name for name in args.topics if name in metadata.topics]
    failures = []
    deleted = []
    if present:
        futures = admin.delete_topics(present, operation_timeout=args.timeout,
                                      request_timeout=args.timeout)
        for name, value in ac.results(futures, args).items():
            if not isinstance(value, Exception):
                deleted.append(name)
            elif ac.error_code(value) == "UNKNOWN_TOPIC_OR_PART" and args.if_exists:
                missing.append(name)
            else:
                failures.append(f"topic {name!r} was not deleted: {ac.error_text(value)}")
    deleted.sort(key=args.topics.index)
    if args.json:
        print_json({"deleted": deleted, "missing": missing})
    else:
        for name in deleted:
            print(f"Deleted topic {name}.")
    if failures:
        raise ToolError("; ".join(failures))


# ---------------------------------------------------------------- delete-records


def offsets_from_json_file(path: str) -> dict[tuple[str, int], int]:
    """kafka-delete-records.sh's ``--offset-json-file`` (``-``: stdin): ``{"partitions":
    [{"topic", "partition", "offset"}], "version": 1}``. A file that cannot be read or parsed,
    or that names a partition twice, is a usage error (exit 2), as in Kafka's tool."""
    hint = ('write e.g. {"partitions": [{"topic": "clicks", "partition": 0, "offset": 1}], '
            '"version": 1}')
    document = read_json_file(path, "--offset-json-file")
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ToolError(f"--offset-json-file {path!r} has no \"partitions\" list: {hint}", 2)
    return partition_entries(
        entries,
        f"--offset-json-file {path!r}: each entry needs a topic, a partition and an offset: "
        f"{hint}",
        f"--offset-json-file {path!r} names {{partitions}} twice: one offset per partition",
        lambda entry: int(entry["offset"]),
    )


def delete_records_plan(admin: Any, args: argparse.Namespace) -> dict[tuple[str, int], int]:
    """The offset to delete before, per partition, checked against the cluster's topics (a
    missing topic or partition stops everything before any record is deleted)."""
    if args.offset_json_file is not None:
        if args.topic is not None or args.partition:
            raise ToolError("--offset-json-file names its own partitions: leave out TOPIC "
                            "and --partition", 2)
        wanted = offsets_from_json_file(args.offset_json_file)
    elif args.topic is None:
        raise ToolError("name the TOPIC whose records to delete, or give --offset-json-file", 2)
    else:
        wanted = {}
    stamp = None
    if args.before is not None:
        stamp = parse_datetime_ms(args.before, "--before")
    elif args.timestamp is not None:
        stamp = args.timestamp
    metadata = ac.cluster_metadata(admin, args)
    if args.offset_json_file is None:
        topic = metadata.topics.get(args.topic)
        if topic is None:
            raise missing_topic(args.topic)
        numbers = sorted(set(args.partition)) if args.partition else sorted(topic.partitions)
        wanted = {(args.topic, p): args.offset if stamp is None else -1 for p in numbers}
    ac.check_partitions({n: t.partitions for n, t in metadata.topics.items()}, wanted)
    if stamp is not None:
        from confluent_kafka.admin import OffsetSpec

        found = ac.list_offsets(admin, args, sorted(wanted), OffsetSpec.for_timestamp(stamp))
        # No record at or after the time: every record is older, so all of them go (-1).
        wanted = {tp: offset if offset >= 0 else -1 for tp, offset in found.items()}
    return wanted


def run_delete_records(args: argparse.Namespace) -> None:
    from confluent_kafka import TopicPartition

    if args.before is not None:
        parse_datetime_ms(args.before, "--before")  # a usage error before any network
    admin = ac.admin_client(args)
    plan = delete_records_plan(admin, args)
    request = [TopicPartition(t, p, offset) for (t, p), offset in sorted(plan.items())]
    futures = admin.delete_records(request, request_timeout=args.timeout,
                                   operation_timeout=args.timeout)
    rows, failures = [], []
    for tp, value in ac.results(futures, args).items():
        row = {"topic": tp.topic, "partition": tp.partition, "low_watermark": None,
               "error": None}
        if isinstance(value, Exception):
            row["error"] = ac.error_code(value) or str(value)
            failures.append(f"{partition_name(tp.topic, tp.partition)}: "
                            f"{ac.error_text(value)}")
        else:
            row["low_watermark"] = value.low_watermark
        rows.append(row)
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    if args.json:
        print_json(rows)
    else:
        print_table(("TOPIC", "PARTITION", "LOW-WATERMARK"),
                    [(r["topic"], r["partition"], r["low_watermark"]) for r in rows
                     if r["error"] is None])
    if failures:
        hint = ("an offset must lie between the log start and the high watermark (-1 for the "
                "high watermark; see `kafkette topics describe`)"
                if any(r["error"] == "OFFSET_OUT_OF_RANGE" for r in rows)
                else "see the broker's reason")
        raise ToolError(f"records were not deleted from {'; '.join(failures)}: {hint}")
