"""``kafkette quotas describe|alter``: client quotas, as ``kafka-configs.sh --entity-type
users|clients|ips`` manages them, without a JVM.

An entity is a user, a client id, a user and a client id, or an ip, each by name or the
default one; the options are kafka-configs.sh's shorthands (``--user``, ``--client``,
``--ip``, ``--user-defaults``, ``--client-defaults``, ``--ip-defaults``). The requests are
DescribeClientQuotas and AlterClientQuotas (KIP-546), which confluent-kafka does not offer:
they go through the tools' wire client (tools/wire_client.py: TLS and SASL PLAIN/SCRAM from
``-X``, as librdkafka takes them). ``describe`` asks what kafka-configs.sh asks: the
entities with exactly the types named (a name: that entity; no name: every one of that
type; defaults: the default entity); with no option, every entity. The broker checks keys
and values (``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
``controller_mutation_rate``; ``connection_creation_rate`` for ips) and answers each entity
on its own, as Kafka does.
"""

from __future__ import annotations

import argparse

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    EXIT_USAGE,
    ToolError,
    authorization_hint,
    print_json,
    print_table,
    run_tool,
)

EPILOG = """examples:
  kafkette quotas describe
  kafkette quotas alter --client my-app --add-config producer_byte_rate=1048576
  kafkette quotas alter --user alice --add-config consumer_byte_rate=2097152,request_percentage=50
  kafkette quotas alter --user alice --client my-app --add-config producer_byte_rate=4096
  kafkette quotas alter --user-defaults --add-config producer_byte_rate=10485760
  kafkette quotas alter --ip 192.0.2.10 --add-config connection_creation_rate=100
  kafkette quotas describe --user alice --json
  kafkette quotas alter --client my-app --delete-config producer_byte_rate
"""

# Entity types on the wire, the option that names each, and how Kafka's lines name them.
TYPES = (("user", "user", "user"), ("client-id", "client", "client-id"), ("ip", "ip", "ip"))
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "quotas",
        help="describe and alter client quotas (like kafka-configs.sh --entity-type "
        "users|clients|ips)",
        description="Describe and alter client quotas of users, client ids and ips "
        "(DescribeClientQuotas / AlterClientQuotas).",
        epilog=EPILOG,
    )

    sub = ac.add_action(
        actions,
        "describe",
        "show quotas: of every entity, or of those named",
        "  kafkette quotas describe\n"
        "  kafkette quotas describe --user alice\n"
        "  kafkette quotas describe --user              # every user's own quotas\n"
        "  kafkette quotas describe --user alice --client my-app\n"
        "  kafkette quotas describe --client-defaults\n",
    )
    add_entity_options(sub, describe=True)
    sub.set_defaults(run=lambda args: run_tool(run_describe, args))

    sub = ac.add_action(
        actions,
        "alter",
        "set or remove quotas of one entity",
        "  kafkette quotas alter --client my-app --add-config producer_byte_rate=1048576\n"
        "  kafkette quotas alter --user alice --add-config request_percentage=50\n"
        "  kafkette quotas alter --user alice --client-defaults "
        "--add-config consumer_byte_rate=1048576\n"
        "  kafkette quotas alter --user alice --delete-config request_percentage\n",
    )
    add_entity_options(sub, describe=False)
    sub.add_argument(
        "--add-config",
        action="append",
        default=[],
        metavar="K=V[,K=V...]",
        help="quotas to set (repeatable)",
    )
    sub.add_argument(
        "--delete-config",
        action="append",
        default=[],
        metavar="K[,K...]",
        help="quotas to remove (repeatable)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_alter, args))


def add_entity_options(parser: argparse.ArgumentParser, describe: bool) -> None:
    for _, option, shown in TYPES:
        names = [f"--{option}"] + (["--client-id"] if option == "client" else [])
        what = option.upper()
        if describe:
            parser.add_argument(
                *names,
                dest=option,
                nargs="?",
                const="",
                default=None,
                metavar=what,
                help=f"this {shown}'s quotas (no name: every {shown})",
            )
        else:
            parser.add_argument(
                *names, dest=option, default=None, metavar=what, help=f"the {shown}"
            )
        parser.add_argument(
            f"--{option}-defaults",
            action="store_true",
            help=f"the default {shown} (kafka-configs.sh's --entity-default)",
        )


def named(args: argparse.Namespace) -> list[tuple[str, str | None, bool]]:
    """(wire type, name or None, default?) for each entity type the options name."""
    parts = []
    for wire_type, option, _ in TYPES:
        name = getattr(args, option)
        default = getattr(args, f"{option}_defaults")
        if name is not None and default:
            raise ToolError(
                f"--{option} and --{option}-defaults name two entities: keep one", EXIT_USAGE
            )
        if name is not None or default:
            parts.append((wire_type, name, default))
    if any(t == "ip" for t, _, _ in parts) and len(parts) > 1:
        raise ToolError(
            "an ip quota stands alone: --ip does not combine with --user or --client", EXIT_USAGE
        )
    return parts


def call(args: argparse.Namespace, api: str, body: dict) -> dict:
    from kafkette.tools.wire_client import open_client
    from kafkette.wire.apis import ApiKey

    with open_client(args) as client:
        return client.bootstrap().request(ApiKey[api], body)


def refusal(code: int, message: str | None, doing: str) -> ToolError:
    """Kafka checks DescribeConfigs (describe) or AlterConfigs (alter) on the cluster."""
    from kafkette.tools.wire_client import error_text

    text = error_text(code, message)
    if "CLUSTER_AUTHORIZATION_FAILED" in text:
        operation = "DescribeConfigs" if doing == "describe" else "AlterConfigs"
        return ToolError(f"could not {doing} quotas: {text}: {authorization_hint(operation)}")
    return ToolError(f"could not {doing} quotas: {text}")


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def entity_of(parts: list[dict]) -> dict[str, str | None]:
    order = [t for t, _, _ in TYPES]
    found = {p["entity_type"]: p["entity_name"] for p in parts}
    return {t: found[t] for t in sorted(found, key=lambda t: order.index(t) if t in order else 9)}


def run_describe(args: argparse.Namespace) -> None:
    parts = named(args)
    components = [
        {
            "entity_type": t,
            "match_type": MATCH_DEFAULT if default else MATCH_EXACT if name else MATCH_SPECIFIED,
            "match": name or None,
        }
        for t, name, default in parts
    ]
    body = call(
        args, "DESCRIBE_CLIENT_QUOTAS", {"components": components, "strict": bool(components)}
    )
    if body["error_code"]:
        raise refusal(body["error_code"], body.get("error_message"), "describe")
    found = []
    for entry in body["entries"] or []:
        entity = entity_of(entry["entity"])
        configs = {v["key"]: v["value"] for v in sorted(entry["values"], key=lambda v: v["key"])}
        found.append({"entity": entity, "configs": configs})
    found.sort(key=lambda e: [(t, e["entity"].get(t, "") or "") for t, _, _ in TYPES])
    if args.json:
        print_json(found)
        return

    def cell(entity: dict[str, str | None], wire_type: str) -> str:
        if wire_type not in entity:
            return "-"
        return "<default>" if entity[wire_type] is None else str(entity[wire_type])

    print_table(
        ("USER", "CLIENT-ID", "IP", "QUOTA", "VALUE"),
        [
            (
                cell(e["entity"], "user"),
                cell(e["entity"], "client-id"),
                cell(e["entity"], "ip"),
                key,
                number_text(value),
            )
            for e in found
            for key, value in e["configs"].items()
        ],
    )


def run_alter(args: argparse.Namespace) -> None:
    sets = ac.parse_key_values(args.add_config, "--add-config", comma_list=True)
    deletes = ac.split_names(args.delete_config)
    if not sets and not deletes:
        raise ToolError("nothing to alter: give --add-config K=V or --delete-config K", EXIT_USAGE)
    both = sorted(set(sets) & set(deletes))
    if both:
        raise ToolError(f"{both[0]!r} is both added and deleted: keep one of the two", EXIT_USAGE)
    values = {}
    for key, text in sets.items():
        try:
            values[key] = float(text)
        except ValueError:
            raise ToolError(
                f"--add-config {key}={text!r}: a quota is a number, e.g. {key}=1048576", EXIT_USAGE
            ) from None
    parts = named(args)
    if not parts:
        raise ToolError(
            "name the entity: --user NAME, --client ID, --ip IP or a --*-defaults option",
            EXIT_USAGE,
        )
    entity = [
        {"entity_type": t, "entity_name": None if default else name} for t, name, default in parts
    ]
    ops = [{"key": k, "value": v, "remove": False} for k, v in values.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in deletes]
    body = call(
        args,
        "ALTER_CLIENT_QUOTAS",
        {"entries": [{"entity": entity, "ops": ops}], "validate_only": False},
    )
    for result in body["entries"]:
        if result["error_code"]:
            raise refusal(result["error_code"], result.get("error_message"), "alter")
    shown = entity_of(entity)
    if args.json:
        print_json({"entity": shown, "set": values, "deleted": deletes})
        return
    words = [
        f"default {kind}" if shown[t] is None else f"{kind} {shown[t]}"
        for t, _, kind in TYPES
        if t in shown
    ]
    print(f"Completed updating quotas for {', '.join(words)}.")
