"""``kafkette acls list|create|delete``: what kafka-acls.sh does, without a JVM.

The options are kafka-acls.sh's (``--topic``, ``--group``, ``--cluster``,
``--transactional-id``, ``--delegation-token``, ``--resource-pattern-type``,
``--allow-principal``/``--deny-principal``, ``--allow-host``/``--deny-host``, ``--operation``,
``--producer``/``--consumer``/``--idempotent``, ``--principal``, ``--force``) and so are the
rules: a resource is LITERAL unless ``--resource-pattern-type`` says otherwise, a principal
without a host gets ``*``, ``--operation`` defaults to All, ``delete`` with no principal
removes every ACL of the resource, and ``delete`` asks before it removes (``--force`` does
not). The requests go through confluent-kafka's AdminClient (DescribeAcls, CreateAcls,
DeleteAcls), so every listener and SASL mechanism librdkafka speaks works; delegation-token
resources, which librdkafka cannot name, and listings (see ``lister``) go through the tools'
own wire client (tools/wire_client.py) where it can log in.

Plain output is kafka-acls.sh's text (``Current ACLs for resource `ResourcePattern(...)`:``),
so scripts written for Kafka's tool read it; a terminal gets a table, ``--json`` a list.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import closing
from dataclasses import dataclass
from typing import Any

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
  kafkette acls list
  kafkette acls create --allow-principal User:alice --operation Write --topic clicks
  kafkette acls create --allow-principal User:alice --producer --topic clicks
  kafkette acls create --allow-principal User:alice --consumer --topic clicks --group my-app
  kafkette acls create --deny-principal User:bob --operation Read --topic clicks
  kafkette acls create --allow-principal User:alice --topic logs- --resource-pattern-type prefixed
  kafkette acls list --topic clicks --resource-pattern-type match
  kafkette acls delete --allow-principal User:alice --operation Write --topic clicks --force
  kafkette acls delete --topic clicks --force
"""

# Kafka's resource types (ResourceType codes) and the operations each supports
# (AclEntry.supportedOperations, Kafka 4.0); ALL is accepted on every type.
RESOURCE_CODES = {
    "TOPIC": 2,
    "GROUP": 3,
    "CLUSTER": 4,
    "TRANSACTIONAL_ID": 5,
    "DELEGATION_TOKEN": 6,
}
RESOURCE_NAMES = {code: name for name, code in RESOURCE_CODES.items()}
PATTERN_CODES = {"ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
PATTERN_NAMES = {code: name for name, code in PATTERN_CODES.items()}
OPERATION_CODES = {
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
}
OPERATION_NAMES = {code: name for name, code in OPERATION_CODES.items()}
PERMISSION_CODES = {"DENY": 2, "ALLOW": 3}
PERMISSION_NAMES = {code: name for name, code in PERMISSION_CODES.items()}
SUPPORTED = {
    "TOPIC": {
        "READ",
        "WRITE",
        "CREATE",
        "DESCRIBE",
        "DELETE",
        "ALTER",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    },
    "GROUP": {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"},
    "CLUSTER": {
        "CREATE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "ALTER",
        "DESCRIBE",
    },
    "TRANSACTIONAL_ID": {"DESCRIBE", "WRITE"},
    "DELEGATION_TOKEN": {"DESCRIBE"},
}
CLUSTER_NAME = "kafka-cluster"  # Kafka's one cluster resource
# kafka-acls.sh's --producer / --consumer grants.
PRODUCER_OPERATIONS = {
    "TOPIC": ("WRITE", "DESCRIBE", "CREATE"),
    "TRANSACTIONAL_ID": ("WRITE", "DESCRIBE"),
}
CONSUMER_OPERATIONS = {"TOPIC": ("READ", "DESCRIBE"), "GROUP": ("READ",)}


@dataclass(frozen=True, order=True)
class Pattern:
    """A resource pattern (or, with ANY/MATCH, a pattern filter), by Kafka's names."""

    resource_type: str
    name: str | None
    pattern_type: str

    def __str__(self) -> str:  # Kafka's ResourcePattern.toString
        return (
            f"ResourcePattern(resourceType={self.resource_type}, name={self.name}, "
            f"patternType={self.pattern_type})"
        )


@dataclass(frozen=True, order=True)
class Entry:
    """An access control entry, by Kafka's names; None fields match anything (filters)."""

    principal: str | None
    host: str | None
    operation: str
    permission_type: str

    def __str__(self) -> str:  # Kafka's AccessControlEntry.toString
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation}, "
            f"permissionType={self.permission_type})"
        )


ANY_ENTRY = Entry(None, None, "ANY", "ANY")


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "acls",
        help="list, create and delete ACLs (like kafka-acls.sh)",
        description="List, create and delete ACLs (like kafka-acls.sh). The broker needs an "
        "authorizer (authorizer.class.name).",
        epilog=EPILOG,
    )

    sub = ac.add_action(
        actions,
        "list",
        "list ACLs, all or those of the resources named",
        "  kafkette acls list\n"
        "  kafkette acls list --topic clicks\n"
        "  kafkette acls list --topic clicks --resource-pattern-type match   # what applies\n"
        "  kafkette acls list --principal User:alice --json\n",
    )
    add_resource_options(sub, "list the ACLs of", filters=True)
    sub.add_argument(
        "--principal",
        action="append",
        default=[],
        metavar="TYPE:NAME",
        help="only the ACLs of this principal (repeatable)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = ac.add_action(
        actions,
        "create",
        "add ACLs",
        "  kafkette acls create --allow-principal User:alice --operation Read --topic clicks\n"
        "  kafkette acls create --allow-principal User:alice --producer --topic clicks\n"
        "  kafkette acls create --allow-principal User:alice --consumer --topic clicks "
        "--group my-app\n"
        "  kafkette acls create --allow-principal User:alice --operation Describe --cluster\n",
    )
    add_resource_options(sub, "add ACLs to", filters=False)
    add_entry_options(sub, removing=False)
    sub.set_defaults(run=lambda args: run_tool(run_create, args))

    sub = ac.add_action(
        actions,
        "delete",
        "remove ACLs",
        "  kafkette acls delete --allow-principal User:alice --operation Read --topic clicks "
        "--force\n"
        "  kafkette acls delete --topic clicks --force          # every ACL of the topic\n"
        "  kafkette acls delete --topic logs- --resource-pattern-type prefixed --force\n",
    )
    add_resource_options(sub, "remove ACLs from", filters=True)
    add_entry_options(sub, removing=True)
    sub.add_argument("--force", action="store_true", help="do not ask before removing")
    sub.set_defaults(run=lambda args: run_tool(run_delete, args))


def add_lists(parser: argparse.ArgumentParser, specs: list[tuple[str, str, str]]) -> None:
    """Repeatable options (``action=append``): (option, metavar, help) each."""
    for option, metavar, text in specs:
        parser.add_argument(option, action="append", default=[], metavar=metavar, help=text)


def add_resource_options(parser: argparse.ArgumentParser, doing: str, filters: bool) -> None:
    add_lists(
        parser,
        [
            ("--topic", "TOPIC", f"{doing} this topic ('*': every topic; repeatable)"),
            ("--group", "GROUP", f"{doing} this group ('*': every group; repeatable)"),
            ("--transactional-id", "ID", f"{doing} this transactional id (repeatable)"),
            ("--delegation-token", "TOKEN", f"{doing} this delegation token (repeatable)"),
        ],
    )
    parser.add_argument("--cluster", action="store_true", help=f"{doing} the cluster")
    kinds = "literal, prefixed, any or match" if filters else "literal or prefixed"
    more = (
        ("; any: every pattern type of the name given, match: every pattern that applies to it")
        if filters
        else ""
    )
    parser.add_argument(
        "--resource-pattern-type",
        default="literal",
        metavar="TYPE",
        help=f"{kinds} (default literal){more}",
    )


def add_entry_options(parser: argparse.ArgumentParser, removing: bool) -> None:
    add_lists(
        parser,
        [
            (
                "--allow-principal",
                "TYPE:NAME",
                "the principal allowed, e.g. User:alice, User:* (repeatable)",
            ),
            (
                "--deny-principal",
                "TYPE:NAME",
                "the principal denied (deny wins over allow; repeatable)",
            ),
            ("--allow-host", "HOST", "the host --allow-principal may come from (default *)"),
            ("--deny-host", "HOST", "the host --deny-principal is denied from (default *)"),
            (
                "--operation",
                "OPERATION",
                "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                "AlterConfigs, IdempotentWrite or All (default All; repeatable)",
            ),
        ],
    )
    verb = "remove" if removing else "add"
    for option, text in (
        (
            "--producer",
            f"{verb} the producer's grants: Write, Describe, Create on --topic "
            "(Write, Describe on --transactional-id)",
        ),
        ("--consumer", f"{verb} the consumer's grants: Read, Describe on --topic, Read on --group"),
        ("--idempotent", "with --producer: IdempotentWrite on the cluster too"),
    ):
        parser.add_argument(option, action="store_true", help=text)


# --- parsing the command line into Kafka's patterns and entries ------------------------------


def operation_name(text: str) -> str:
    """Kafka's operation for ``text``: ``IdempotentWrite``, ``IDEMPOTENT_WRITE``, ``read``."""
    squashed = text.strip().replace("_", "").replace("-", "").upper()
    for name in OPERATION_CODES:
        if name.replace("_", "") == squashed:
            return name
    raise ToolError(
        f"--operation {text!r} is not an operation: use one of Read, Write, Create, "
        "Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, "
        "IdempotentWrite, All",
        EXIT_USAGE,
    )


def principal(text: str, option: str) -> str:
    kind, sep, name = text.strip().partition(":")
    if not sep or not kind or not name:
        raise ToolError(
            f"{option} {text!r} is not TYPE:NAME: write e.g. {option} User:alice", EXIT_USAGE
        )
    return f"{kind}:{name}"


def pattern_type(args: argparse.Namespace, filters: bool) -> str:
    name = args.resource_pattern_type.strip().upper()
    allowed = ("LITERAL", "PREFIXED", "ANY", "MATCH") if filters else ("LITERAL", "PREFIXED")
    if name not in allowed:
        where = " when adding ACLs" if name in PATTERN_CODES else ""
        raise ToolError(
            f"--resource-pattern-type {args.resource_pattern_type!r} is not valid"
            f"{where}: use {', '.join(a.lower() for a in allowed)}",
            EXIT_USAGE,
        )
    return name


def resources(args: argparse.Namespace, filters: bool, required: bool = True) -> list[Pattern]:
    """The resources the options name, as kafka-acls.sh builds them (the cluster only with a
    literal pattern type; the producer's --idempotent names it too)."""
    kind = pattern_type(args, filters)
    found = [Pattern("TOPIC", n.strip(), kind) for n in args.topic]
    if kind == "LITERAL" and (args.cluster or getattr(args, "idempotent", False)):
        found.append(Pattern("CLUSTER", CLUSTER_NAME, kind))
    found += [Pattern("GROUP", n.strip(), kind) for n in args.group]
    found += [Pattern("TRANSACTIONAL_ID", n, kind) for n in args.transactional_id]
    found += [Pattern("DELEGATION_TOKEN", n.strip(), kind) for n in args.delegation_token]
    if not found and required:
        raise ToolError(
            "name at least one resource: --topic T, --group G, --cluster, "
            "--transactional-id ID or --delegation-token TOKEN",
            EXIT_USAGE,
        )
    return list(dict.fromkeys(found))


def entries(args: argparse.Namespace, operations: list[str]) -> set[Entry]:
    """Every principal x operation x host, allowed and denied (kafka-acls.sh's getAcl)."""
    made: set[Entry] = set()
    for permission, principals, hosts, option in (
        ("ALLOW", args.allow_principal, args.allow_host, "--allow-principal"),
        ("DENY", args.deny_principal, args.deny_host, "--deny-principal"),
    ):
        names = [principal(p, option) for p in principals]
        for name in names:
            for operation in operations:
                for host in [h.strip() for h in hosts] or ["*"]:
                    made.add(Entry(name, host, operation, permission))
    return made


def check_roles(args: argparse.Namespace) -> None:
    """kafka-acls.sh's rules for --producer / --consumer / --idempotent."""
    if (args.producer or args.consumer) and (
        args.operation or args.deny_principal or args.deny_host
    ):
        raise ToolError(
            "--producer and --consumer choose the operations themselves and allow "
            "only: leave out --operation, --deny-principal and --deny-host",
            EXIT_USAGE,
        )
    if args.producer and not args.topic:
        raise ToolError("with --producer you must name a --topic", EXIT_USAGE)
    if args.idempotent and not args.producer:
        raise ToolError("--idempotent goes with --producer", EXIT_USAGE)
    if args.consumer and (
        not args.topic
        or not args.group
        or (not args.producer and (args.cluster or args.transactional_id))
    ):
        raise ToolError(
            "with --consumer you must name a --topic and a --group, and no "
            "--cluster or --transactional-id",
            EXIT_USAGE,
        )


def grants(args: argparse.Namespace, filters: bool) -> dict[Pattern, set[Entry]]:
    """Resource -> the entries to add or remove, with kafka-acls.sh's checks."""
    check_roles(args)
    found = resources(args, filters)
    wanted: dict[Pattern, set[Entry]] = {}
    if not args.producer and not args.consumer:
        operations = [operation_name(o) for o in args.operation] or ["ALL"]
        wanted = {resource: entries(args, operations) for resource in found}
    if args.producer:
        for resource in found:
            if resource.resource_type in PRODUCER_OPERATIONS:
                wanted[resource] = entries(args, list(PRODUCER_OPERATIONS[resource.resource_type]))
            elif resource.resource_type == "CLUSTER" and args.idempotent:
                wanted[resource] = entries(args, ["IDEMPOTENT_WRITE"])
    if args.consumer:
        for resource in found:
            if resource.resource_type in CONSUMER_OPERATIONS:
                more = entries(args, list(CONSUMER_OPERATIONS[resource.resource_type]))
                wanted[resource] = wanted.get(resource, set()) | more
    for resource, acls in wanted.items():
        valid = SUPPORTED[resource.resource_type] | {"ALL"}
        if any(entry.operation not in valid for entry in acls):
            names = ", ".join(sorted(valid))
            raise ToolError(
                f"ResourceType {resource.resource_type} only supports operations {names}",
                EXIT_USAGE,
            )
    return wanted


# --- the requests ----------------------------------------------------------------------------


def needs_wire(patterns: list[Pattern]) -> bool:
    """librdkafka has no DELEGATION_TOKEN resource type: such requests take the wire client."""
    return any(p.resource_type == "DELEGATION_TOKEN" for p in patterns)


def refused(exc: BaseException, doing: str) -> ToolError:
    code = (
        ac.error_code(exc)
        if not isinstance(exc, ToolError)
        else next(
            (
                name
                for name in ("SECURITY_DISABLED", "CLUSTER_AUTHORIZATION_FAILED")
                if name in str(exc)
            ),
            "",
        )
    )
    if code == "SECURITY_DISABLED":
        return ToolError(
            f"could not {doing} ACLs: the broker has no authorizer "
            "(SECURITY_DISABLED): start it with authorizer.class.name="
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        )
    if code == "CLUSTER_AUTHORIZATION_FAILED":
        return ToolError(
            f"could not {doing} ACLs: this principal may not (CLUSTER_AUTHORIZATION_FAILED): "
            + authorization_hint("Describe" if doing == "list" else "Alter")
        )
    return ToolError(f"could not {doing} ACLs: {ac.error_text(exc)}")


class ConfluentAcls:
    """DescribeAcls / CreateAcls / DeleteAcls through confluent-kafka's AdminClient."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.admin = ac.admin_client(args)

    def close(self) -> None:
        """Nothing to close: librdkafka's client goes with the process."""

    @staticmethod
    def _binding_of(pattern: Pattern, entry: Entry, exact: bool) -> Any:
        """An AclBinding (``exact``, to create) or an AclBindingFilter (to match)."""
        from confluent_kafka.admin import (
            AclBinding,
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        restype = (
            ResourceType.BROKER
            if pattern.resource_type == "CLUSTER"
            else (ResourceType[pattern.resource_type])
        )
        kind = AclBinding if exact else AclBindingFilter
        return kind(
            restype,
            pattern.name,
            ResourcePatternType[pattern.pattern_type],
            entry.principal,
            entry.host,
            AclOperation[entry.operation],
            AclPermissionType[entry.permission_type],
        )

    @staticmethod
    def _binding(found: Any) -> tuple[Pattern, Entry]:
        restype = found.restype.name
        return (
            Pattern(
                "CLUSTER" if restype == "BROKER" else restype,
                found.name,
                found.resource_pattern_type.name,
            ),
            Entry(found.principal, found.host, found.operation.name, found.permission_type.name),
        )

    def describe(self, pattern: Pattern, entry: Entry) -> list[tuple[Pattern, Entry]]:
        future = self.admin.describe_acls(
            self._binding_of(pattern, entry, exact=False), request_timeout=self.args.timeout
        )
        try:
            found = ac.result(future, self.args)
        except ToolError:
            raise
        except Exception as exc:
            raise refused(exc, "list") from exc
        return [self._binding(b) for b in found]

    def create(self, bindings: list[tuple[Pattern, Entry]]) -> None:
        made = [self._binding_of(p, e, exact=True) for p, e in bindings]
        futures = self.admin.create_acls(made, request_timeout=self.args.timeout)
        for value in ac.results(futures, self.args).values():
            if isinstance(value, Exception):
                raise refused(value, "create")

    def delete(self, filters: list[tuple[Pattern, Entry]]) -> list[tuple[Pattern, Entry]]:
        made = [self._binding_of(p, e, exact=False) for p, e in filters]
        futures = self.admin.delete_acls(made, request_timeout=self.args.timeout)
        deleted: list[tuple[Pattern, Entry]] = []
        for value in ac.results(futures, self.args).values():
            if isinstance(value, Exception):
                raise refused(value, "delete")
            deleted += [self._binding(b) for b in value]
        return deleted


class WireAcls:
    """The same three requests through the tools' wire client (tools/wire_client.py), for
    the resource types librdkafka cannot name (delegation tokens). ``close`` closes its
    connections."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def close(self) -> None:
        self.client.close()

    def _call(self, api: str, body: dict) -> dict:
        from kafkette.wire.apis import ApiKey

        return self.client.bootstrap().request(ApiKey[api], body, lowest=1)

    @staticmethod
    def _filter_body(pattern: Pattern, entry: Entry) -> dict:
        return {
            "resource_type_filter": RESOURCE_CODES.get(pattern.resource_type, 1),
            "resource_name_filter": pattern.name,
            "pattern_type_filter": PATTERN_CODES[pattern.pattern_type],
            "principal_filter": entry.principal,
            "host_filter": entry.host,
            "operation": OPERATION_CODES.get(entry.operation, 1),
            "permission_type": PERMISSION_CODES.get(entry.permission_type, 1),
        }

    @staticmethod
    def _check(body: dict, doing: str) -> None:
        from kafkette.tools.wire_client import error_text

        if body.get("error_code"):
            raise refused(
                ToolError(error_text(body["error_code"], body.get("error_message"))), doing
            )

    @staticmethod
    def _binding(resource: dict, acl: dict) -> tuple[Pattern, Entry]:
        return (
            Pattern(
                RESOURCE_NAMES.get(resource["resource_type"], "UNKNOWN"),
                resource["resource_name"],
                PATTERN_NAMES.get(resource["pattern_type"], "UNKNOWN"),
            ),
            Entry(
                acl["principal"],
                acl["host"],
                OPERATION_NAMES.get(acl["operation"], "UNKNOWN"),
                PERMISSION_NAMES.get(acl["permission_type"], "UNKNOWN"),
            ),
        )

    def describe(self, pattern: Pattern, entry: Entry) -> list[tuple[Pattern, Entry]]:
        body = self._call("DESCRIBE_ACLS", self._filter_body(pattern, entry))
        self._check(body, "list")
        return [
            self._binding(resource, acl)
            for resource in body["resources"]
            for acl in resource["acls"]
        ]

    def create(self, bindings: list[tuple[Pattern, Entry]]) -> None:
        creations = [
            {
                "resource_type": RESOURCE_CODES[p.resource_type],
                "resource_name": p.name,
                "resource_pattern_type": PATTERN_CODES[p.pattern_type],
                "principal": e.principal,
                "host": e.host,
                "operation": OPERATION_CODES[e.operation],
                "permission_type": PERMISSION_CODES[e.permission_type],
            }
            for p, e in bindings
        ]
        body = self._call("CREATE_ACLS", {"creations": creations})
        for result in body["results"]:
            self._check(result, "create")

    def delete(self, filters: list[tuple[Pattern, Entry]]) -> list[tuple[Pattern, Entry]]:
        body = self._call("DELETE_ACLS", {"filters": [self._filter_body(p, e) for p, e in filters]})
        deleted = []
        for result in body["filter_results"]:
            self._check(result, "delete")
            for match in result["matching_acls"]:
                self._check(match, "delete")
                deleted.append(self._binding(match, match))
        return deleted


def client(args: argparse.Namespace, patterns: list[Pattern]) -> Any:
    """Where create and delete go: the wire client for delegation tokens (librdkafka cannot
    name them), confluent-kafka otherwise (every mechanism librdkafka has)."""
    from kafkette.tools.wire_client import open_client

    return WireAcls(open_client(args)) if needs_wire(patterns) else ConfluentAcls(args)


def lister(args: argparse.Namespace) -> Any:
    """DescribeAcls goes through the wire client where it can log in: librdkafka (2.16) names
    delegation-token resources UNKNOWN, and answers an empty list where Kafka 4.0 refuses
    (CLUSTER_AUTHORIZATION_FAILED). Other SASL mechanisms (GSSAPI, OAUTHBEARER) take
    confluent-kafka."""
    from kafkette.tools.common import probe
    from kafkette.tools.wire_client import Unsupported, WireClient

    probe(args.bootstrap, args.timeout)
    try:
        return WireAcls(WireClient(args))
    except Unsupported:
        return ConfluentAcls(args)


# --- output ----------------------------------------------------------------------------------


def grouped(bindings: list[tuple[Pattern, Entry]]) -> dict[Pattern, list[Entry]]:
    """Bindings by resource, resources and entries in a stable order (Kafka's are hashed)."""
    by_resource: dict[Pattern, set[Entry]] = {}
    for pattern, entry in bindings:
        by_resource.setdefault(pattern, set()).add(entry)
    return {p: sorted(by_resource[p]) for p in sorted(by_resource)}


def binding_json(pattern: Pattern, entry: Entry) -> dict[str, Any]:
    return {
        "resource_type": pattern.resource_type,
        "name": pattern.name,
        "pattern_type": pattern.pattern_type,
        "principal": entry.principal,
        "host": entry.host,
        "operation": entry.operation,
        "permission_type": entry.permission_type,
    }


def print_blocks(heading: str, by_resource: dict[Pattern, list[Entry]]) -> None:
    """kafka-acls.sh's text: a heading per resource, a tab-indented line per entry."""
    for pattern, acls in by_resource.items():
        lines = "\n".join(f"\t{entry}" for entry in acls)
        print(f"{heading} `{pattern}`:\n{lines}\n")


def print_acls(bindings: list[tuple[Pattern, Entry]]) -> None:
    by_resource = grouped(bindings)
    if sys.stdout.isatty():
        print_table(
            (
                "RESOURCE-TYPE",
                "NAME",
                "PATTERN-TYPE",
                "PRINCIPAL",
                "HOST",
                "OPERATION",
                "PERMISSION",
            ),
            [
                (
                    p.resource_type,
                    p.name,
                    p.pattern_type,
                    e.principal,
                    e.host,
                    e.operation,
                    e.permission_type,
                )
                for p, acls in by_resource.items()
                for e in acls
            ],
        )
        return
    print_blocks("Current ACLs for resource", by_resource)


# --- the actions -----------------------------------------------------------------------------


def run_list(args: argparse.Namespace) -> None:
    kind = pattern_type(args, filters=True)
    patterns = resources(args, filters=True, required=False)
    if not patterns:
        patterns = [Pattern("ANY", None, "ANY" if kind == "LITERAL" else kind)]
    principals = [principal(p, "--principal") for p in args.principal]
    found: list[tuple[Pattern, Entry]] = []
    with closing(lister(args)) as acls:
        for pattern in patterns:
            for entry in [Entry(p, None, "ANY", "ANY") for p in principals] or [ANY_ENTRY]:
                found += acls.describe(pattern, entry)
    found = list(dict.fromkeys(found))
    if args.json:
        print_json([binding_json(p, e) for p, acls_ in grouped(found).items() for e in acls_])
        return
    if not principals or sys.stdout.isatty():
        print_acls(found)
        return
    for name in principals:  # kafka-acls.sh --list --principal P: a heading per principal
        print(f"ACLs for principal `{name}`")
        print_acls([(p, e) for p, e in found if e.principal == name])


def run_create(args: argparse.Namespace) -> None:
    wanted = dict(sorted(grants(args, filters=False).items()))
    if any(not acls for acls in wanted.values()):
        raise ToolError(
            "name who: --allow-principal TYPE:NAME or --deny-principal TYPE:NAME", EXIT_USAGE
        )
    created: list[tuple[Pattern, Entry]] = []
    existing: list[tuple[Pattern, Entry]] = []
    with closing(client(args, list(wanted))) as acls:
        for pattern, entries_ in wanted.items():
            present = set(acls.describe(pattern, ANY_ENTRY))
            new = [(pattern, e) for e in sorted(entries_) if (pattern, e) not in present]
            old = [(pattern, e) for e in sorted(entries_) if (pattern, e) in present]
            existing += old
            if not args.json:  # kafka-acls.sh's lines, resource by resource
                for _, entry in old:
                    print(f"Acl (pattern={pattern}, entry={entry}) already exists.")
                if new:
                    lines = "\n".join(f"\t{entry}" for _, entry in new)
                    print(f"Adding ACLs for resource `{pattern}`: \n {lines}\n")
            if new:
                acls.create(new)
                created += new
    if args.json:
        print_json(
            {
                "created": [binding_json(p, e) for p, e in created],
                "existing": [binding_json(p, e) for p, e in existing],
            }
        )


def confirm(question: str) -> bool:
    """Ask on the terminal, as kafka-acls.sh does without --force; scripts must say --force.
    Only ``y`` is yes; an end of input (Ctrl-D) is no."""
    if not sys.stdin.isatty():
        raise ToolError(
            "acls delete asks before it removes ACLs and there is no terminal to "
            "ask on: add --force",
            EXIT_USAGE,
        )
    print(question, file=sys.stderr)
    try:
        return input().strip().lower() == "y"
    except EOFError:
        return False


def run_delete(args: argparse.Namespace) -> None:
    wanted = grants(args, filters=True)
    filters: list[tuple[Pattern, Entry]] = []
    for pattern, entries_ in wanted.items():
        if not entries_:
            question = f"Are you sure you want to delete all ACLs for resource filter `{pattern}`?"
            chosen = [ANY_ENTRY]
        else:
            lines = "\n".join(f"\t{entry}" for entry in sorted(entries_))
            question = (
                f"Are you sure you want to remove ACLs: \n {lines}\n from resource "
                f"filter `{pattern}`?"
            )
            chosen = sorted(entries_)
        if args.force or confirm(question + " (y/n)"):
            filters += [(pattern, entry) for entry in chosen]
    deleted: list[tuple[Pattern, Entry]] = []
    if filters:
        with closing(client(args, list(wanted))) as acls:
            deleted = list(dict.fromkeys(acls.delete(filters)))
    if args.json:
        print_json({"deleted": [binding_json(p, e) for p, e in deleted]})
        return
    if filters and not deleted:  # nothing asked for (every answer no): nothing to say
        print("No ACL matched: nothing was removed.", file=sys.stderr)
    print_blocks("Removed ACLs for resource", grouped(deleted))
