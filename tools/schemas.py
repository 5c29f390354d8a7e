"""``kafkette schemas list|get|register|check|delete|config|mode``: a registry from the shell.

Speaks Confluent Schema Registry's REST API, so it works against kafkette's registry
(``kafkette serve --schema-registry``) and Confluent's alike: ``-r URL``, default
``$KAFKETTE_SCHEMA_REGISTRY`` or http://127.0.0.1:8081. Plain ``urllib`` (no client
library). The registry's refusals are one line with its own error code,
``kafkette: 40401 Subject 'x' not found.``, exit 1; a registry that does not answer is
exit 3, and a URL that answers something other than a registry's JSON (the web console's
page, say) is exit 1; ``check`` exits 0 when compatible and 1 when not, with the reasons.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from kafkette.broker.schema_registry.config import COMPATIBILITY_LEVELS
from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    ToolError,
    add_json_option,
    ca_context,
    print_json,
    print_table,
    read_input,
    run_tool,
    stdout_is_terminal,
)

REGISTRY_ENV = "KAFKETTE_SCHEMA_REGISTRY"
DEFAULT_REGISTRY = "http://127.0.0.1:8081"
# Lookups of a just-registered schema (a follower may read it back a moment later).
LOOKUP_ATTEMPTS = 8
MEDIA_TYPE = "application/vnd.schemaregistry.v1+json"
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = COMPATIBILITY_LEVELS  # Confluent's seven levels
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
# A schema file's type by its extension, when --type is not given.
TYPE_BY_SUFFIX = {".avsc": "AVRO", ".avro": "AVRO", ".json": "JSON", ".proto": "PROTOBUF"}

EPILOG = """examples:
  kafkette schemas list
  kafkette schemas register orders-value order.avsc
  kafkette schemas check orders-value order-v2.avsc      # exit 1 if incompatible
  kafkette schemas get orders-value                      # the latest version
  kafkette schemas get --id 1
  kafkette schemas config orders-value --set FULL
  kafkette schemas delete orders-value --version 1

-r URL (default $KAFKETTE_SCHEMA_REGISTRY or http://127.0.0.1:8081) picks the registry;
any Confluent-compatible registry works.
"""


class RegistryClient:
    """JSON over HTTP to one registry; every failure is a ``ToolError``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.base = args.registry.rstrip("/")
        if "://" not in self.base:
            self.base = "http://" + self.base
        self.timeout = args.timeout
        self.headers = {"Accept": MEDIA_TYPE, "Content-Type": MEDIA_TYPE}
        if args.user:
            token = base64.b64encode(args.user.encode("utf-8")).decode("ascii")
            self.headers["Authorization"] = f"Basic {token}"
        self.context = ca_context(args.ca_file, "--ca-file") if args.ca_file else None

    def call(
        self,
        method: str,
        path: str,
        body: object = None,
        expect: type = dict,
        keys: tuple[str, ...] = (),
        **params: object,
    ) -> Any:
        """The registry's answer to one request: JSON of the ``expect`` type (``dict``,
        ``list`` or ``int``; an object with ``keys``). Anything else is not a schema
        registry's answer: one line, exit 1."""
        query = {k: _param(v) for k, v in params.items() if v is not None}
        url = self.base + path + ("?" + urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, headers=self.headers, method=method)
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self.context
            ) as answer:
                text = answer.read()
        except urllib.error.HTTPError as error:
            with error:
                raise _refusal(error.code, error.read()) from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ToolError(
                f"no schema registry answered at {self.base} ({reason}): start one with"
                f" `kafkette serve --schema-registry` or point -r (or ${REGISTRY_ENV}) at one",
                EXIT_UNREACHABLE,
            ) from None
        try:
            answer = json.loads(text)
        except ValueError:
            answer = text
        wrong = not isinstance(answer, expect) or isinstance(answer, bool)
        if wrong or (isinstance(answer, dict) and not all(k in answer for k in keys)):
            raise ToolError(
                f"{self.base} is not a schema registry: {method} {path} answered "
                f"{_shown(answer)} where a registry answers a JSON "
                f"{ {dict: 'object', list: 'array', int: 'number'}[expect] }"
                f"{' with ' + ', '.join(keys) if keys else ''}: check -r "
                f"(or ${REGISTRY_ENV})",
                EXIT_FAILED,
            )
        return answer


def _shown(answer: object) -> str:
    """A short view of an unexpected answer for the error line."""
    if isinstance(answer, bytes | str):
        text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else answer
        return repr(" ".join(text.split())[:60])
    return f"JSON {type(answer).__name__} {json.dumps(answer)[:60]}"


def _param(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _refusal(status: int, body: bytes) -> ToolError:
    """The registry's error as one line: ``<error_code> <message>``."""
    try:
        document = json.loads(body)
        return ToolError(f"{document['error_code']} {document['message']}")
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip().replace("\n", " ")[:200]
        return ToolError(f"HTTP {status} {text}".rstrip())


def subject_path(subject: str) -> str:
    return quote(subject, safe="")


# --- the command line ----------------------------------------------------------------


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "schemas",
        help="list, get, register, check and delete schemas in a schema registry",
        description="Work with a Confluent-compatible schema registry (kafkette's own, "
        "from `kafkette serve --schema-registry`, or any other).",
        epilog=EPILOG,
    )

    def action(name: str, help: str, examples: str) -> argparse.ArgumentParser:
        return ac.add_action(actions, name, help, examples, options=_add_registry_options)

    sub = action(
        "list",
        "list subjects with their latest version, id and type",
        "  kafkette schemas list\n  kafkette schemas list --prefix orders --json\n",
    )
    sub.add_argument("--prefix", default="", help="only subjects that start with this")
    sub.add_argument("--deleted", action="store_true", help="include soft-deleted subjects")
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = action(
        "get",
        "show one version of a subject, or a schema by id",
        "  kafkette schemas get orders-value              # the latest version\n"
        "  kafkette schemas get orders-value --version 2\n"
        "  kafkette schemas get --id 7\n"
        "  kafkette schemas get orders-value > order.avsc  # the schema text alone\n",
    )
    sub.add_argument("subject", nargs="?", metavar="SUBJECT")
    sub.add_argument("--version", default="latest", help="a version number or latest (default)")
    sub.add_argument("--id", type=int, help="the schema with this id (no SUBJECT)")
    sub.add_argument("--deleted", action="store_true", help="a soft-deleted version too")
    sub.set_defaults(run=lambda args: run_tool(run_get, args))

    sub = action(
        "register",
        "register a schema under a subject (its id if already there)",
        "  kafkette schemas register orders-value order.avsc\n"
        "  kafkette schemas register orders-value order.proto\n"
        "  kafkette schemas register orders-value order.proto"
        " --reference common.proto=common.proto:1\n"
        "  cat order.json | kafkette schemas register orders-value - --type JSON\n",
    )
    _add_schema_arguments(sub)
    sub.add_argument("--normalize", action="store_true", help="normalize the schema first")
    sub.set_defaults(run=lambda args: run_tool(run_register, args))

    sub = action(
        "check",
        "test a schema's compatibility with a subject (exit 1 if not)",
        "  kafkette schemas check orders-value order-v2.avsc\n"
        "  kafkette schemas check orders-value order-v2.avsc --version 1\n",
    )
    _add_schema_arguments(sub)
    sub.add_argument(
        "--version",
        default=None,
        help="check against this version only (default: as registering would)",
    )
    sub.set_defaults(run=run_check_command)

    sub = action(
        "delete",
        "delete a subject or one of its versions (soft unless --permanent)",
        "  kafkette schemas delete orders-value\n"
        "  kafkette schemas delete orders-value --permanent   # after a soft delete\n"
        "  kafkette schemas delete orders-value --version 1\n",
    )
    sub.add_argument("subject", metavar="SUBJECT")
    sub.add_argument("--version", default=None, help="delete this version only")
    sub.add_argument(
        "--permanent", action="store_true", help="remove for good (what was soft-deleted before)"
    )
    sub.set_defaults(run=lambda args: run_tool(run_delete, args))

    sub = action(
        "config",
        "show or set the compatibility level (global, or a subject's)",
        "  kafkette schemas config                      # the global level\n"
        "  kafkette schemas config orders-value\n"
        "  kafkette schemas config orders-value --set FULL_TRANSITIVE\n"
        "  kafkette schemas config orders-value --delete   # back to the global\n",
    )
    sub.add_argument("subject", nargs="?", metavar="SUBJECT")
    change = sub.add_mutually_exclusive_group()
    change.add_argument(
        "--set",
        type=str.upper,
        choices=LEVELS,
        metavar="LEVEL",
        help=f"set it: {', '.join(LEVELS)}",
    )
    change.add_argument("--delete", action="store_true", help="remove the setting")
    sub.set_defaults(run=lambda args: run_tool(run_config, args))

    sub = action(
        "mode",
        "show or set the mode (global, or a subject's)",
        "  kafkette schemas mode\n"
        "  kafkette schemas mode orders-value --set READONLY\n"
        "  kafkette schemas mode --set IMPORT --force\n",
    )
    sub.add_argument("subject", nargs="?", metavar="SUBJECT")
    change = sub.add_mutually_exclusive_group()
    change.add_argument(
        "--set", type=str.upper, choices=MODES, metavar="MODE", help=f"set it: {', '.join(MODES)}"
    )
    change.add_argument("--delete", action="store_true", help="remove a subject's mode")
    sub.add_argument(
        "--force", action="store_true", help="with --set IMPORT: even though subjects exist"
    )
    sub.set_defaults(run=lambda args: run_tool(run_mode, args))


def _add_registry_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-r",
        "--registry",
        default=os.environ.get(REGISTRY_ENV, DEFAULT_REGISTRY),
        metavar="URL",
        help=f"the registry (default ${REGISTRY_ENV} or {DEFAULT_REGISTRY})",
    )
    parser.add_argument("--user", metavar="USER:PASSWORD", help="HTTP basic authentication")
    parser.add_argument(
        "--ca-file",
        metavar="PEM",
        help="CA certificates (a file or a directory) for an https registry",
    )
    ac.add_timeout_option(parser, what="a registry")
    add_json_option(parser)


def _add_schema_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("subject", metavar="SUBJECT")
    parser.add_argument("file", metavar="FILE", help="the schema file; - reads stdin")
    parser.add_argument(
        "--type",
        type=str.upper,
        choices=SCHEMA_TYPES,
        dest="schema_type",
        help="AVRO, JSON or PROTOBUF (default: by the file's extension"
        " .avsc/.json/.proto, else AVRO)",
    )
    parser.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="NAME=SUBJECT:VERSION",
        help="a schema this one imports (repeatable)",
    )


# --- actions -------------------------------------------------------------------------


def schema_body(args: argparse.Namespace) -> dict[str, Any]:
    """The register/check request body from FILE (``-``: stdin), --type and --reference."""
    text = read_input(args.file, "FILE")
    kind = args.schema_type or TYPE_BY_SUFFIX.get(Path(args.file).suffix.lower(), "AVRO")
    body: dict[str, Any] = {"schema": text, "schemaType": kind}
    references = [_reference(item) for item in args.reference]
    if references:
        body["references"] = references
    return body


def _reference(item: str) -> dict[str, Any]:
    name, sep, rest = item.partition("=")
    subject, colon, version = rest.rpartition(":")
    if not sep or not colon or not name or not subject or not version.isdigit():
        raise ToolError(
            f"--reference {item!r} is not NAME=SUBJECT:VERSION: write e.g."
            " --reference common.proto=common.proto:1",
            EXIT_USAGE,
        )
    return {"name": name, "subject": subject, "version": int(version)}


def run_list(args: argparse.Namespace) -> None:
    client = RegistryClient(args)
    subjects = client.call(
        "GET",
        "/subjects",
        expect=list,
        deleted=args.deleted or None,
        subjectPrefix=args.prefix or None,
    )
    rows = []
    for subject in subjects:
        path = f"/subjects/{subject_path(subject)}/versions"
        versions = client.call("GET", path, expect=list, deleted=args.deleted or None)
        try:
            latest = client.call("GET", f"{path}/latest")
        except ToolError:  # only soft-deleted versions left (listed with --deleted)
            latest = {}
        rows.append(
            {
                "subject": subject,
                "versions": versions,
                "latest_version": latest.get("version"),
                "id": latest.get("id"),
                "schema_type": latest.get("schemaType", "AVRO"),
            }
        )
    if args.json:
        print_json(rows)
        return
    print_table(
        ("SUBJECT", "VERSIONS", "LATEST", "ID", "TYPE"),
        [
            (r["subject"], len(r["versions"]), r["latest_version"], r["id"], r["schema_type"])
            for r in rows
        ],
    )


def run_get(args: argparse.Namespace) -> None:
    client = RegistryClient(args)
    if (args.id is None) == (args.subject is None):
        raise ToolError(
            "give a SUBJECT or --id N (not both): e.g. "
            "`kafkette schemas get orders-value` or `kafkette schemas get --id 1`",
            EXIT_USAGE,
        )
    if args.id is not None:
        found = client.call("GET", f"/schemas/ids/{args.id}", keys=("schema",))
        found = {"id": args.id, **found}
        found["versions"] = client.call(
            "GET", f"/schemas/ids/{args.id}/versions", expect=list, deleted=args.deleted or None
        )
    else:
        found = client.call(
            "GET",
            f"/subjects/{subject_path(args.subject)}/versions/{quote(args.version, safe='')}",
            keys=("schema", "id"),
            deleted=args.deleted or None,
        )
    if args.json:
        print_json(found)
        return
    if stdout_is_terminal():
        where = ", ".join(f"{v['subject']} v{v['version']}" for v in found.get("versions", []))
        print_table(
            ("SUBJECT", "VERSION", "ID", "TYPE"),
            [
                (
                    found.get("subject", where),
                    found.get("version", ""),
                    found["id"],
                    found.get("schemaType", "AVRO"),
                )
            ],
        )
        for ref in found.get("references", []):
            print(f"references {ref['name']} = {ref['subject']} version {ref['version']}")
        print()
    print(_pretty(found["schema"]))


def _pretty(schema: str) -> str:
    """JSON schemas (Avro, JSON Schema) indented on a terminal; anything else as is."""
    if not stdout_is_terminal():
        return schema
    try:
        return json.dumps(json.loads(schema), indent=2)
    except ValueError:
        return schema


def run_register(args: argparse.Namespace) -> None:
    client = RegistryClient(args)
    body = schema_body(args)
    path = f"/subjects/{subject_path(args.subject)}"
    answer = client.call(
        "POST", f"{path}/versions", body, keys=("id",), normalize=args.normalize or None
    )
    schema_id = answer["id"]
    version = answer.get("version")
    if version is None:  # Confluent 7 answers the id alone; the lookup names the version
        version = _registered_version(client, path, body, args.normalize)
    if args.json:
        print_json({"subject": args.subject, "id": schema_id, "version": version})
        return
    named = f" version {version}" if version is not None else ""
    print(f"Registered {args.subject}{named}: schema id {schema_id}.")


def _registered_version(
    client: RegistryClient, path: str, body: dict[str, Any], normalize: bool
) -> int | None:
    """The version just registered, by lookup. A registry that forwarded the write to
    its leader may not have read it back yet: a few short retries, then None."""
    for attempt in range(LOOKUP_ATTEMPTS):
        try:
            return client.call("POST", path, body, normalize=normalize or None).get("version")
        except ToolError as exc:
            if not str(exc).startswith(("40401 ", "40403 ")) or attempt == LOOKUP_ATTEMPTS - 1:
                break
            time.sleep(0.1 * (attempt + 1))
    return None


def run_check(args: argparse.Namespace) -> int:
    client = RegistryClient(args)
    path = f"/compatibility/subjects/{subject_path(args.subject)}/versions"
    if args.version is not None:
        path += "/" + quote(args.version, safe="")
    answer = client.call("POST", path, schema_body(args), verbose=True)
    compatible = bool(answer.get("is_compatible"))
    messages = answer.get("messages") or []
    if args.json:
        print_json({"is_compatible": compatible, "messages": messages})
    else:
        against = f"version {args.version} of " if args.version else ""
        if compatible:
            print(f"Compatible with {against}{args.subject}.")
        else:
            print(f"NOT compatible with {against}{args.subject}:")
            for message in messages:
                print(f"  {message}")
    return EXIT_OK if compatible else EXIT_FAILED


def run_check_command(args: argparse.Namespace) -> int:
    """``check``'s exit code: 0 compatible, 1 not (reasons printed), else as any tool."""
    outcome: list[int] = []
    code = run_tool(lambda parsed: outcome.append(run_check(parsed)), args)
    return outcome[0] if code == EXIT_OK and outcome else code


def run_delete(args: argparse.Namespace) -> None:
    client = RegistryClient(args)
    path = f"/subjects/{subject_path(args.subject)}"
    permanent = args.permanent or None
    if args.version is not None:
        path += f"/versions/{quote(args.version, safe='')}"
        deleted = [client.call("DELETE", path, expect=int, permanent=permanent)]
    else:
        deleted = client.call("DELETE", path, expect=list, permanent=permanent)
    if args.json:
        print_json(
            {"subject": args.subject, "deleted_versions": deleted, "permanent": args.permanent}
        )
        return
    how = "permanently" if args.permanent else "(soft: add --permanent to remove for good)"
    listed = ", ".join(str(v) for v in deleted)
    print(f"Deleted {args.subject} version{'s' if len(deleted) != 1 else ''} {listed} {how}.")


def run_config(args: argparse.Namespace) -> None:
    _show_or_change(args, "config", "compatibility", "compatibilityLevel", 40408)


def run_mode(args: argparse.Namespace) -> None:
    if args.force and args.set is None:
        raise ToolError("--force goes with --set (e.g. --set IMPORT --force)", EXIT_USAGE)
    _show_or_change(args, "mode", "mode", "mode", 40409)


def _show_or_change(
    args: argparse.Namespace, resource: str, put_key: str, get_key: str, unset_code: int
) -> None:
    """``config`` and ``mode``: the same three verbs over /config and /mode."""
    client = RegistryClient(args)
    path = f"/{resource}" + (f"/{subject_path(args.subject)}" if args.subject else "")
    scope = args.subject or "(global)"
    if args.set is not None:
        params = {"force": True} if getattr(args, "force", False) else {}
        answer = client.call("PUT", path, {put_key: args.set}, **params)
        value = answer.get(put_key, args.set)
        result = {"subject": args.subject, resource: value}
        line = f"Set the {_noun(resource)} of {scope} to {value}."
    elif args.delete:
        if not args.subject and resource == "mode":
            raise ToolError(
                "--delete needs a SUBJECT (the global mode can only be --set)", EXIT_USAGE
            )
        answer = client.call("DELETE", path)
        value = answer.get(get_key)
        result = {"subject": args.subject, "deleted": value}
        line = f"Removed the {_noun(resource)} of {scope} (was {value})."
    else:
        source = "subject" if args.subject else "global"
        try:
            value = client.call("GET", path, keys=(get_key,))[get_key]
        except ToolError as exc:
            if not str(exc).startswith(f"{unset_code} "):
                raise
            value = client.call("GET", f"/{resource}", keys=(get_key,))[get_key]
            source = "global"
        result = {"subject": args.subject, resource: value, "source": source}
        line = ""
    if args.json:
        print_json(result)
    elif line:
        print(line)
    else:
        print_table(
            ("SUBJECT", _noun(resource).upper(), "FROM"),
            [(scope, result[resource], result["source"])],
        )


def _noun(resource: str) -> str:
    return "compatibility" if resource == "config" else "mode"
