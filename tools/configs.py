"""``kafkette configs describe|alter``: kafka-configs.sh for topics, brokers and groups.

Without ``--all``, ``describe`` shows what kafka-configs.sh calls the dynamic configs: the
values set on the resource itself (sources DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
DYNAMIC_DEFAULT_BROKER_CONFIG, GROUP_CONFIG); ``--all`` adds static and default values,
each with its source. ``alter`` goes through IncrementalAlterConfigs (SET and DELETE), so
configs not named are left as they are (the old AlterConfigs would reset them).
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    ToolError,
    add_client_options,
    add_json_option,
    print_json,
    print_table,
    run_tool,
)

EPILOG = """examples:
  kafkette configs describe --topic clicks
  kafkette configs describe --topic clicks --all
  kafkette configs describe --broker 1 --all --json
  kafkette configs alter --topic clicks --add-config retention.ms=3600000,cleanup.policy=compact
  kafkette configs alter --topic clicks --delete-config retention.ms
"""

# ConfigSource numbers (DescribeConfigs v1+), by name, for output.
SOURCE_NAMES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
# Set on the resource itself: what describe shows without --all (kafka-configs.sh's "dynamic").
DYNAMIC_SOURCES = {"DYNAMIC_TOPIC_CONFIG", "DYNAMIC_BROKER_CONFIG",
                   "DYNAMIC_DEFAULT_BROKER_CONFIG", "GROUP_CONFIG"}


def add_resource_options(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="TOPIC", help="a topic's configs")
    which.add_argument("--broker", metavar="ID", nargs="?", const="",
                       help="a broker's configs (no ID: the lowest broker id in the cluster)")
    which.add_argument("--group", metavar="GROUP",
                       help="a group's configs (Kafka 4.0's consumer.*, kafkette's share.*)")


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands, "configs", help="describe and alter topic, broker and group configs",
        description="Describe and alter configs (like kafka-configs.sh).",
        epilog=EPILOG,
    )

    sub = actions.add_parser(
        "describe", help="show a resource's configs and where each value comes from",
        description="Show the configs set on a topic, broker or group (--all: every config, "
                    "with its source).",
        epilog="examples:\n"
               "  kafkette configs describe --topic clicks          # overrides only\n"
               "  kafkette configs describe --topic clicks --all    # every config + source\n"
               "  kafkette configs describe --broker 1 --all\n"
               "  kafkette configs describe --broker --json\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resource_options(sub)
    sub.add_argument("--all", action="store_true",
                     help="include static and default values, not only the ones set")
    add_client_options(sub)
    ac.add_timeout_option(sub)
    add_json_option(sub)
    sub.set_defaults(run=lambda args: run_tool(run_describe, args))

    sub = actions.add_parser(
        "alter", help="set or delete configs (IncrementalAlterConfigs)",
        description="Set or delete configs through IncrementalAlterConfigs; others are kept.",
        epilog="examples:\n"
               "  kafkette configs alter --topic clicks --add-config retention.ms=3600000\n"
               "  kafkette configs alter --topic clicks "
               "--add-config 'cleanup.policy=[compact,delete],segment.ms=60000'\n"
               "  kafkette configs alter --topic clicks --delete-config retention.ms,segment.ms\n"
               "  kafkette configs alter --group my-workers "
               "--add-config share.auto.offset.reset=earliest\n"
               "\nkafkette's broker configs are static (set them with `kafkette serve --config`);\n"
               "Apache Kafka also takes --broker ID with its dynamic broker configs.\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_resource_options(sub)
    sub.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V...]",
                     help="configs to set; a list value goes in brackets: k=[a,b] (repeatable)")
    sub.add_argument("--delete-config", action="append", default=[], metavar="K[,K...]",
                     help="configs to remove, back to their defaults (repeatable)")
    add_client_options(sub)
    ac.add_timeout_option(sub)
    add_json_option(sub)
    sub.set_defaults(run=lambda args: run_tool(run_alter, args))


def source_name(source: Any) -> str:
    value = getattr(source, "value", source)
    return SOURCE_NAMES.get(value, str(value)) if isinstance(value, int) else str(value)


def resource(admin: Any, args: argparse.Namespace, **kwargs: Any) -> Any:
    """The ConfigResource that --topic/--broker/--group names."""
    from confluent_kafka.admin import ConfigResource, ResourceType

    for option, name, example in (
        ("--topic", args.topic, "clicks"),
        ("--group", args.group, "my-app"),
    ):
        if name is not None and not name.strip():
            raise ToolError(f"{option} needs a name: write e.g. {option} {example}", 2)
    if args.topic is not None:
        return ConfigResource(ResourceType.TOPIC, args.topic, **kwargs)
    if args.group is not None:
        return ConfigResource(ResourceType.GROUP, args.group, **kwargs)
    broker = args.broker
    if not broker:
        brokers = ac.cluster_metadata(admin, args).brokers
        broker = str(min(brokers)) if brokers else ""
    if not broker.isdigit():
        raise ToolError(f"--broker {broker!r} is not a broker id: see the ids in "
                        "`kafkette configs describe --broker` or your cluster's metadata", 2)
    return ConfigResource(ResourceType.BROKER, broker, **kwargs)


def describe_name(args: argparse.Namespace, config_resource: Any) -> tuple[str, str]:
    kind = "topic" if args.topic is not None else "group" if args.group is not None else "broker"
    return kind, config_resource.name


def failure(exc: BaseException, kind: str, name: str, doing: str) -> ToolError:
    code = ac.error_code(exc)
    if code == "UNKNOWN_TOPIC_OR_PART":
        return ToolError(f"topic {name!r} does not exist: see `kafkette topics list`")
    if code in ("INVALID_REQUEST", "UNSUPPORTED_VERSION") and kind == "group":
        return ToolError(f"the broker does not {doing} group configs ({ac.error_text(exc)}): "
                         "group configs need a broker that keeps them (Kafka 4.0+, kafkette)")
    if code == "INVALID_CONFIG":
        return ToolError(f"could not {doing} the configs of {kind} {name!r}: "
                         f"{ac.error_text(exc)}: check the config names and values")
    # INVALID_REQUEST: the request cannot be served as asked (kafkette's static broker
    # configs, Kafka's configs that are not dynamic); the broker's message says why and
    # what to do instead, and a hint about names and values would contradict it.
    return ToolError(f"could not {doing} the configs of {kind} {name!r}: {ac.error_text(exc)}")


def run_describe(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    config_resource = resource(admin, args)
    kind, name = describe_name(args, config_resource)
    futures = admin.describe_configs([config_resource], request_timeout=args.timeout)
    value = next(iter(ac.results(futures, args).values()))
    if isinstance(value, Exception):
        raise failure(value, kind, name, "describe")
    entries = []
    for entry in sorted(value.values(), key=lambda e: e.name):
        source = source_name(entry.source)
        if not args.all and source not in DYNAMIC_SOURCES:
            continue
        entries.append({"name": entry.name, "value": entry.value, "source": source,
                        "read_only": bool(entry.is_read_only),
                        "sensitive": bool(entry.is_sensitive)})
    if args.json:
        print_json({"resource_type": kind, "name": name, "configs": entries})
        return
    print_table(("CONFIG", "VALUE", "SOURCE"),
                [(e["name"], "(sensitive)" if e["sensitive"] else e["value"], e["source"])
                 for e in entries])


def run_alter(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    sets = ac.parse_key_values(args.add_config, "--add-config", comma_list=True)
    deletes = ac.split_names(args.delete_config)
    if not sets and not deletes:
        raise ToolError("nothing to alter: give --add-config K=V or --delete-config K", 2)
    both = sorted(set(sets) & set(deletes))
    if both:
        raise ToolError(f"{both[0]!r} is both added and deleted: keep one of the two", 2)
    admin = ac.admin_client(args)
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
               for k, v in sets.items()]
    entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                for k in deletes]
    config_resource = resource(admin, args, incremental_configs=entries)
    kind, name = describe_name(args, config_resource)
    futures = admin.incremental_alter_configs([config_resource], request_timeout=args.timeout)
    value = next(iter(ac.results(futures, args).values()))
    if isinstance(value, Exception):
        raise failure(value, kind, name, "alter")
    if args.json:
        print_json({"resource_type": kind, "name": name, "set": sets, "deleted": deletes})
        return
    print(f"Completed updating config for {kind} {name}.")
