"""``kafkette users list|set|delete``: SCRAM credentials, as ``kafka-configs.sh --entity-type
users`` manages them, without a JVM.

The requests are DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) through
confluent-kafka's AdminClient, which, as Kafka's AdminClient does, makes a random salt and
computes the salted password on the client: the password itself never leaves this process,
and the broker stores what it is sent. Iterations default to 4096, Kafka's; brokers take
4096..16384. One request per mechanism, because Kafka 4.0 refuses a user named twice in one
request (DUPLICATE_RESOURCE), which is why ``kafka-configs.sh`` with both mechanisms in one
``--add-config`` fails there. ``list`` asks DescribeUserScramCredentials over the tools' own
wire client where it can log in (TLS, SASL PLAIN/SCRAM): librdkafka 2.16 crashes the process
(SIGSEGV, or ``free(): invalid size``) on Kafka's refusal of it, CLUSTER_AUTHORIZATION_FAILED,
which a principal without Describe on the cluster gets.

The password comes from ``--password``, else from the terminal (asked twice), else from the
first line of stdin, so that it need not show in ``ps`` or the shell's history.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    EXIT_USAGE,
    ToolError,
    authorization_hint,
    int32,
    print_json,
    print_table,
    run_tool,
    split_outside_brackets,
)

EPILOG = """examples:
  kafkette users set alice --password alice-secret
  kafkette users set alice --mechanism SCRAM-SHA-512 --iterations 8192 --password alice-secret
  kafkette users set alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  kafkette users list
  kafkette users delete alice --mechanism SCRAM-SHA-512
"""

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_CODES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}  # DescribeUserScramCredentials' numbers
DEFAULT_ITERATIONS = 4096  # Kafka's (ScramCredentialInfo's default in kafka-configs.sh)


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "users",
        help="list, set and delete SCRAM users (like kafka-configs.sh --entity-type users)",
        description="List, set and delete the SCRAM credentials of users (what "
        "kafka-configs.sh --entity-type users does with SCRAM-SHA-256/512).",
        epilog=EPILOG,
    )

    sub = ac.add_action(
        actions,
        "list",
        "list users with their SCRAM mechanisms and iterations",
        "  kafkette users list\n  kafkette users list alice --json\n",
    )
    sub.add_argument("users", nargs="*", metavar="USER", help="only these users")
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = ac.add_action(
        actions,
        "set",
        "create a SCRAM user or change its password",
        "  kafkette users set alice --password alice-secret\n"
        "  kafkette users set alice --mechanism SCRAM-SHA-256 --mechanism SCRAM-SHA-512 "
        "--password alice-secret\n"
        "  echo alice-secret | kafkette users set alice          # the password from stdin\n",
    )
    sub.add_argument("user", metavar="USER")
    sub.add_argument(
        "--mechanism",
        action="append",
        default=[],
        metavar="MECHANISM",
        help="SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default SCRAM-SHA-256)",
    )
    sub.add_argument(
        "--iterations",
        type=int32,
        default=None,
        metavar="N",
        help=f"PBKDF2 iterations (default {DEFAULT_ITERATIONS}, Kafka's; brokers take 4096..16384)",
    )
    sub.add_argument(
        "--password",
        metavar="PASSWORD",
        help="the password (default: asked on the terminal, else stdin's first line)",
    )
    sub.add_argument(
        "--add-config",
        action="append",
        default=[],
        metavar="MECHANISM=[...]",
        help="kafka-configs.sh's form, e.g. "
        "'SCRAM-SHA-256=[iterations=8192,password=secret]' (repeatable)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_set, args))

    sub = ac.add_action(
        actions,
        "delete",
        "remove a user's SCRAM credentials",
        "  kafkette users delete alice --mechanism SCRAM-SHA-512\n"
        "  kafkette users delete alice                  # every mechanism it has\n",
    )
    sub.add_argument("user", metavar="USER")
    sub.add_argument(
        "--mechanism",
        action="append",
        default=[],
        metavar="MECHANISM",
        help="only this mechanism (repeatable; default: every one the user has)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_delete, args))


def mechanism(text: str) -> str:
    name = text.strip().upper().replace("_", "-")
    if name not in MECHANISMS:
        raise ToolError(
            f"{text!r} is not a SCRAM mechanism: use SCRAM-SHA-256 or SCRAM-SHA-512", EXIT_USAGE
        )
    return name


def scram_mechanism(name: str) -> Any:
    from confluent_kafka.admin import ScramMechanism

    return ScramMechanism[name.replace("-", "_")]


def refused(exc: BaseException, user: str, doing: str) -> ToolError:
    return refusal(ac.error_code(exc), ac.error_text(exc), user, doing)


def refusal(code: str, text: str, user: str, doing: str) -> ToolError:
    """The broker's error ``code`` (its name; ``text`` with the message) as one line."""
    if code == "RESOURCE_NOT_FOUND":
        return ToolError(f"user {user!r} has no such SCRAM credential: see `kafkette users list`")
    if code == "CLUSTER_AUTHORIZATION_FAILED":  # Kafka checks Describe / Alter on CLUSTER
        return ToolError(
            f"could not {doing} user {user!r}: this principal may not "
            "(CLUSTER_AUTHORIZATION_FAILED): "
            + authorization_hint("Describe" if doing == "describe" else "Alter")
        )
    if code == "UNSUPPORTED_SASL_MECHANISM":
        return ToolError(
            f"could not {doing} user {user!r}: {text}: the broker does not take that mechanism"
        )
    return ToolError(f"could not {doing} user {user!r}: {text}")


def credentials(description: Any) -> list[dict[str, Any]]:
    return [
        {"mechanism": info.mechanism.name.replace("_", "-"), "iterations": info.iterations}
        for info in description.scram_credential_infos
    ]


def described(args: argparse.Namespace, users: list[str]) -> dict[str, list[dict]]:
    """User -> its credentials (broker order); a named user without any is an error. Over
    the wire client where it can log in (see the module's docstring), else confluent-kafka."""
    from kafkette.tools.wire_client import Unsupported, WireClient, error_text
    from kafkette.wire.apis import ApiKey
    from kafkette.wire.errors import ErrorCode

    try:
        client = WireClient(args)
    except Unsupported:
        return described_by_librdkafka(ac.admin_client(args), args, users)
    with client:
        # [] asks for every user; Kafka 4.0 answers its refusal of a null list with nothing.
        body = client.bootstrap().request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": [{"name": user} for user in users]}
        )
    if body["error_code"]:
        code = body["error_code"]
        raise refusal(ErrorCode(code).name, error_text(code, body.get("error_message")), "*",
                      "describe")  # fmt: skip
    found: dict[str, list[dict]] = {}
    for result in body["results"]:
        user, code = result["user"], result["error_code"]
        if code == ErrorCode.RESOURCE_NOT_FOUND:
            raise missing_user(user)
        if code:
            raise refusal(ErrorCode(code).name, error_text(code, result.get("error_message")),
                          user, "describe")  # fmt: skip
        found[user] = [
            {"mechanism": SCRAM_CODES.get(info["mechanism"], str(info["mechanism"])),
             "iterations": info["iterations"]}
            for info in result["credential_infos"]
        ]  # fmt: skip
    return {user: found.get(user, []) for user in users or sorted(found)}


def missing_user(user: str) -> ToolError:
    return ToolError(
        f"user {user!r} has no SCRAM credentials: see `kafkette users list`, or add it with "
        "`kafkette users set`"
    )


def described_by_librdkafka(
    admin: Any, args: argparse.Namespace, users: list[str]
) -> dict[str, list[dict]]:
    if not users:
        future = admin.describe_user_scram_credentials(request_timeout=args.timeout)
        try:
            found = ac.result(future, args)
        except ToolError:
            raise
        except Exception as exc:
            raise refused(exc, "*", "describe") from exc
        return {user: credentials(d) for user, d in sorted(found.items())}
    futures = admin.describe_user_scram_credentials(users, request_timeout=args.timeout)
    out: dict[str, list[dict]] = {}
    for user, value in ac.results(futures, args).items():
        if isinstance(value, Exception):
            if ac.error_code(value) == "RESOURCE_NOT_FOUND":
                raise missing_user(user)
            raise refused(value, user, "describe")
        out[user] = credentials(value)
    return {user: out[user] for user in users}


def run_list(args: argparse.Namespace) -> None:
    users = described(args, list(dict.fromkeys(args.users)))
    if args.json:
        print_json([{"user": user, "credentials": creds} for user, creds in users.items()])
        return
    print_table(
        ("USER", "MECHANISM", "ITERATIONS"),
        [(user, c["mechanism"], c["iterations"]) for user, creds in users.items() for c in creds],
    )


def from_add_config(items: list[str]) -> dict[str, dict[str, str]]:
    """kafka-configs.sh's ``SCRAM-SHA-256=[iterations=8192,password=secret]``, by mechanism."""
    found: dict[str, dict[str, str]] = {}
    for item in items:
        for part in split_outside_brackets(item):
            name, sep, inner = part.partition("=")
            if not sep or not inner.startswith("[") or not inner.endswith("]"):
                raise ToolError(
                    f"--add-config {part!r} is not MECHANISM=[password=...]: write "
                    "e.g. --add-config 'SCRAM-SHA-256=[password=secret]'",
                    EXIT_USAGE,
                )
            settings = {}
            for pair in inner[1:-1].split(","):
                key, eq, value = pair.partition("=")
                if not eq or key.strip() not in ("password", "iterations"):
                    raise ToolError(
                        f"--add-config {part!r}: only password=... and "
                        "iterations=N go inside the brackets",
                        EXIT_USAGE,
                    )
                settings[key.strip()] = value
            found[mechanism(name)] = settings
    return found


def read_password(user: str) -> str:
    """The terminal's answer (typed twice), or stdin's first line."""
    if sys.stdin.isatty():
        first = getpass.getpass(f"password for {user}: ")
        if getpass.getpass(f"password for {user} (again): ") != first:
            raise ToolError("the two passwords differ: nothing was changed", EXIT_USAGE)
        return first
    return sys.stdin.readline().rstrip("\r\n")


def iterations_of(text: str | int | None) -> int:
    if text is None:
        return DEFAULT_ITERATIONS
    try:
        return int(text)
    except ValueError:
        raise ToolError(
            f"iterations {text!r} is not a whole number: write e.g. 8192", EXIT_USAGE
        ) from None


def run_set(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, UserScramCredentialUpsertion

    wanted = from_add_config(args.add_config)
    if wanted and (args.mechanism or args.password is not None or args.iterations is not None):
        raise ToolError(
            "--add-config says the mechanism, password and iterations itself: "
            "leave out --mechanism, --password and --iterations",
            EXIT_USAGE,
        )
    if not wanted:
        names = list(dict.fromkeys(mechanism(m) for m in args.mechanism)) or [MECHANISMS[0]]
        password = args.password if args.password is not None else read_password(args.user)
        wanted = {name: {"password": password, "iterations": args.iterations} for name in names}
    for name, settings in wanted.items():
        if not settings.get("password"):
            raise ToolError(
                f"no password for {name}: give --password, or type it when asked", EXIT_USAGE
            )
    admin = ac.admin_client(args)
    done = []
    for name, settings in wanted.items():  # one request each: Kafka refuses a user twice
        iterations = iterations_of(settings.get("iterations"))
        upsert = UserScramCredentialUpsertion(
            args.user,
            ScramCredentialInfo(scram_mechanism(name), iterations),
            settings["password"].encode(),
        )
        futures = admin.alter_user_scram_credentials([upsert], request_timeout=args.timeout)
        for value in ac.results(futures, args).values():
            if isinstance(value, Exception):
                raise refused(value, args.user, "set")
        done.append({"mechanism": name, "iterations": iterations})
    if args.json:
        print_json({"user": args.user, "set": done})
        return
    print(f"Completed updating config for user {args.user}.")  # kafka-configs.sh's line


def run_delete(args: argparse.Namespace) -> None:
    from confluent_kafka.admin import UserScramCredentialDeletion

    admin = ac.admin_client(args)
    names = list(dict.fromkeys(mechanism(m) for m in args.mechanism))
    if not names:
        names = [c["mechanism"] for c in described(args, [args.user])[args.user]]
    for name in names:
        deletion = UserScramCredentialDeletion(args.user, scram_mechanism(name))
        futures = admin.alter_user_scram_credentials([deletion], request_timeout=args.timeout)
        for value in ac.results(futures, args).values():
            if isinstance(value, Exception):
                raise refused(value, args.user, "delete")
    if args.json:
        print_json({"user": args.user, "deleted": names})
        return
    print(f"Completed updating config for user {args.user}.")
