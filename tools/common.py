"""What every client tool shares: broker options, client configs, output, errors, exit codes.

Exit codes scripts can trust (docs/cli.md): 0 done; 1 the broker or the data said no (a topic
exists, a group is not empty, an invalid config...), or the connection asked for is one the
tool's client cannot speak (``-X sasl.mechanism=GSSAPI`` for a request that goes over
kafkette's own wire client: the command line is right, the client lacks the mechanism); 2 the
command line is wrong; 3 no broker answered at the bootstrap address; 130 interrupted. Errors
are one line on stderr, ``kafkette: <what happened>: <what to do>``, and nothing else.

Output: aligned tables (rich) when stdout is a terminal; the same columns as plain
space-aligned text on a pipe, with no colour, progress or decoration; ``--json`` prints JSON
(one document, or one object per line for streams) for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
BOOTSTRAP_ENV = "KAFKETTE_BOOTSTRAP"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 130

PROBE_TIMEOUT_S = 3.0


class ToolError(Exception):
    """A failure to report as one line and an exit code (``EXIT_FAILED`` unless told)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def add_client_options(parser: argparse.ArgumentParser) -> None:
    """``-b/--bootstrap`` (or Kafka's ``--bootstrap-server``), ``-X key=value`` (client
    configs, as kcat takes them) and ``--command-config FILE`` (Kafka's scripts' properties
    file of client configs)."""
    parser.add_argument(
        "-b",
        "--bootstrap",
        "--bootstrap-server",
        dest="bootstrap",
        default=os.environ.get(BOOTSTRAP_ENV, DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT[,...]",
        help=f"brokers to bootstrap from (default ${BOOTSTRAP_ENV} or {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "-X",
        dest="client_configs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a librdkafka client config (repeatable), e.g. -X security.protocol=SASL_PLAINTEXT",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="a properties file of client configs, as Kafka's scripts take it (-X wins; a "
        "PLAIN or SCRAM sasl.jaas.config gives sasl.username and sasl.password)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def client_config(args: argparse.Namespace, **defaults: Any) -> dict[str, Any]:
    """The confluent-kafka config: ``defaults``, then bootstrap, then ``--command-config``'s
    file, then every ``-X`` (last wins)."""
    config: dict[str, Any] = dict(defaults)
    config["bootstrap.servers"] = args.bootstrap
    path = getattr(args, "command_config", None)
    if path is not None:
        config.update(command_config(path))
    for item in args.client_configs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ToolError(f"-X {item!r} is not KEY=VALUE: write e.g. -X acks=all", EXIT_USAGE)
        config[key.strip()] = value
    return config


# A JAAS line's credentials: username="alice" password="secret" (Kafka's PLAIN and SCRAM modules).
_JAAS_CREDENTIAL = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_JAAS_MODULES = ("PlainLoginModule", "ScramLoginModule")


def command_config(path: str) -> dict[str, str]:
    """Kafka's ``--command-config`` file as client configs. Java's client reads its SASL
    login from ``sasl.jaas.config``; librdkafka has none, so a PLAIN or SCRAM login module's
    ``username``/``password`` become ``sasl.username``/``sasl.password``. The file's
    ``bootstrap.servers`` gives way to ``-b``, as it does to Kafka's ``--bootstrap-server``."""
    found = read_properties(path, "--command-config")
    found.pop("bootstrap.servers", None)
    jaas = found.get("sasl.jaas.config")
    if jaas is not None and any(module in jaas for module in _JAAS_MODULES):
        del found["sasl.jaas.config"]
        for key, value in _JAAS_CREDENTIAL.findall(jaas):
            found.setdefault(f"sasl.{key}", _unescaped(value))
    return found


def read_properties(path: str, option: str) -> dict[str, str]:
    """A Java properties file: ``key=value``, ``key: value`` or ``key value`` lines, ``#`` and
    ``!`` comments, a trailing backslash continuing a line."""
    logical: list[str] = []
    pending: str | None = None
    for raw in read_input(path, option).splitlines():
        line = raw.lstrip()
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        text = (pending or "") + (line[:-1] if trailing % 2 else line)
        if trailing % 2:
            pending = text
            continue
        logical.append(text)
        pending = None
    if pending is not None:
        logical.append(pending)
    found: dict[str, str] = {}
    for line in logical:
        match = re.match(r"((?:[^\\=:\s]|\\.)+)\s*[=:\s]?\s*(.*)$", line)
        if match is None:
            continue
        key, value = (_unescaped(part) for part in match.groups())
        found[key] = value
    return found


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescaped(text: str) -> str:
    """Java's escapes: ``\\t``, ``\\n``, ``\\r``, ``\\f``; any other escaped character is itself."""
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def unreachable(bootstrap: str) -> ToolError:
    return ToolError(
        f"no broker answered at {bootstrap}: start one with `kafkette serve` "
        f"or point -b (or ${BOOTSTRAP_ENV}) at a running broker",
        EXIT_UNREACHABLE,
    )


def bootstrap_addresses(bootstrap: str) -> list[tuple[str, int]]:
    addresses = []
    for item in bootstrap.split(","):
        item = item.strip()
        if "://" in item:
            item = item.split("://", 1)[1]
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ToolError(f"-b {item!r} is not HOST:PORT: write e.g. -b 127.0.0.1:9092",
                            EXIT_USAGE)
        addresses.append((host.strip("[]") or "127.0.0.1", int(port)))
    return addresses


def unresolved(bootstrap: str, hosts: list[str]) -> ToolError:
    names = ", ".join(repr(host) for host in hosts)
    return ToolError(
        f"no broker answered at {bootstrap}: host {names} does not resolve: check the host "
        f"name in -b (or ${BOOTSTRAP_ENV})",
        EXIT_UNREACHABLE,
    )


def probe(bootstrap: str, timeout: float) -> None:
    """Exit 3 now if no bootstrap address takes a TCP connection (librdkafka would retry on).

    Every tool that talks to a broker (produce, consume, the admin tools) asks this first.
    When no address answered and some host names did not resolve, the line says which:
    a typo in a host name is not a broker that is down.
    """
    not_resolved: list[str] = []
    for host, port in bootstrap_addresses(bootstrap):
        try:
            with socket.create_connection((host, port), timeout=min(timeout, PROBE_TIMEOUT_S)):
                return
        except socket.gaierror:
            not_resolved.append(host)
        except OSError:
            continue
    if not_resolved:
        raise unresolved(bootstrap, list(dict.fromkeys(not_resolved)))
    raise unreachable(bootstrap)


def run_tool(body: Any, args: argparse.Namespace) -> int:
    """Run ``body(args)``; turn ``ToolError`` into its one line and exit code.

    A confluent-kafka ``KafkaException`` no tool foresaw (a timeout or refusal from a call
    the tool did not wrap) is still one line, ``kafkette: <error name>: <reason>``, exit 1,
    never a traceback. confluent-kafka is imported only on that path, and only when a tool
    already loaded it, so registering the tools stays free of it.
    """
    try:
        body(args)
    except ToolError as exc:
        print(f"kafkette: {exc}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:
        line = _kafka_exception_line(exc)
        if line is None:
            raise
        print(f"kafkette: {line}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _kafka_exception_line(exc: BaseException) -> str | None:
    """``<error name>: <reason>`` for a confluent-kafka ``KafkaException``, else None."""
    if "confluent_kafka" not in sys.modules:
        return None
    from confluent_kafka import KafkaException

    if not isinstance(exc, KafkaException):
        return None
    error = exc.args[0] if exc.args else None
    if hasattr(error, "name") and hasattr(error, "str"):
        return f"{error.name()}: {error.str()}"
    return f"KafkaException: {error if error is not None else exc}"


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def print_json(document: Any) -> None:
    json.dump(document, sys.stdout, indent=2 if stdout_is_terminal() else None, default=str)
    sys.stdout.write("\n")


def print_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    title: str | None = None,
) -> None:
    """Rows under a header: a rich table on a terminal, aligned plain text on a pipe."""
    cells = [["" if value is None else str(value) for value in row] for row in rows]
    if stdout_is_terminal():
        from rich.console import Console
        from rich.table import Table

        table = Table(title=title, box=None, header_style="bold", pad_edge=False)
        for column in columns:
            table.add_column(column, overflow="fold", min_width=len(column))
        for row in cells:
            table.add_row(*row)
        Console().print(table)
        return
    widths = [len(column) for column in columns]
    for row in cells:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=False)]
    lines = [columns, *cells]
    for line in lines:
        text = "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False))
        sys.stdout.write(text.rstrip() + "\n")


def dash(value: Any) -> Any:
    """``-`` where a table has no value (JSON keeps ``null``)."""
    return "-" if value is None else value


def partition_name(topic: str, partition: int) -> str:
    """``clicks-0``: a partition as Kafka's tools and logs name it."""
    return f"{topic}-{partition}"


# --- whole numbers as the wire carries them ------------------------------------------------------


def _bounded_int(bits: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number that fits a signed ``bits``-bit field, so that a
    value the request cannot carry is a usage error (exit 2), not a failed encoding."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{value} does not fit: Kafka carries it as an int{bits} ({low}..{high})"
            )
        return value

    parse.__name__ = f"int{bits}"
    return parse


int16 = _bounded_int(16)
int32 = _bounded_int(32)
int64 = _bounded_int(64)


# --- input files ---------------------------------------------------------------------------------


def read_input(path: str, option: str) -> str:
    """The text of the file an option names, or of standard input for ``-``; a file that
    cannot be read is a usage error (exit 2)."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError as exc:
        raise ToolError(
            f"{option} {path}: {exc.strerror or exc}: check the path", EXIT_USAGE
        ) from None
    except UnicodeDecodeError as exc:
        raise ToolError(f"{option} {path} is not UTF-8 text ({exc.reason})", EXIT_USAGE) from None


def read_json_file(path: str, option: str) -> Any:
    """The JSON document of a file (or ``-``, standard input) an option names; exit 2 when it
    cannot be read or is not JSON."""
    text = read_input(path, option)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(
            f"{option} {path} is not JSON ({exc.msg}, line {exc.lineno}): fix the file",
            EXIT_USAGE,
        ) from None


def partition_entries(
    entries: Any,
    malformed: str,
    duplicated: str,
    value: Callable[[dict], Any] = lambda entry: None,
) -> dict[tuple[str, int], Any]:
    """Kafka's JSON lists of ``{"topic": T, "partition": N, ...}`` (reassignment plans,
    elections, record deletions) by partition, with ``value(entry)`` for each. An entry
    without a topic and a partition number is ``malformed`` (exit 2); partitions named twice
    are ``duplicated`` with ``{partitions}`` replaced by their names (exit 2)."""
    if not isinstance(entries, list):
        raise ToolError(malformed, EXIT_USAGE)
    found: dict[tuple[str, int], Any] = {}
    repeated: set[tuple[str, int]] = set()
    for entry in entries:
        try:
            where = (str(entry["topic"]), int(entry["partition"]))
            data = value(entry)
        except (TypeError, KeyError, ValueError):
            raise ToolError(malformed, EXIT_USAGE) from None
        if where in found:
            repeated.add(where)
        found[where] = data
    if repeated:
        names = ",".join(partition_name(*where) for where in sorted(repeated))
        raise ToolError(duplicated.replace("{partitions}", names), EXIT_USAGE)
    return found


# --- option values -------------------------------------------------------------------------------


def split_outside_brackets(text: str) -> list[str]:
    """Split on the commas outside ``[...]``: kafka-configs.sh's way to put a list in a value
    (``k=[a,b],k2=c``, ``SCRAM-SHA-256=[iterations=8192,password=x]``); brackets stay."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth <= 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def parse_datetime_ms(text: str, option: str) -> int:
    """Kafka's date-time options (``--to-datetime``, ``--before``): 'YYYY-MM-DDTHH:mm:SS.sss',
    local time unless a zone is given, in epoch milliseconds; exit 2 otherwise."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise ToolError(f"{option} {text!r} is not a date-time: write e.g. "
                        "2026-01-31T12:00:00.000 (local) or 2026-01-31T12:00:00Z",
                        EXIT_USAGE) from exc
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive means local time, as Kafka reads it
    return int(moment.timestamp() * 1000)


def authorization_hint(operation: str) -> str:
    """What to do about CLUSTER_AUTHORIZATION_FAILED: the ACL Kafka checks for the request is
    ``operation`` (Describe, Alter, DescribeConfigs, AlterConfigs) on the CLUSTER resource."""
    return (f"connect as a super user, or as a principal with {operation} on the cluster "
            f"(kafkette acls create --allow-principal User:NAME --operation {operation} --cluster)")


def ca_context(location: str | None, option: str) -> Any:
    """An ``ssl.SSLContext`` that trusts the CA certificates of ``location``: a PEM file or a
    directory of them (OpenSSL's hashed names, as librdkafka's ``ssl.ca.location`` takes a
    directory), the system's when None or ``probe``. A location that does not load is a usage
    error (exit 2) naming ``option``."""
    import ssl

    try:
        if location and location != "probe" and os.path.isdir(location):
            return ssl.create_default_context(capath=location)
        return ssl.create_default_context(cafile=None if location == "probe" else location or None)
    except (OSError, ssl.SSLError) as exc:  # no such file, or not PEM certificates
        reason = exc.strerror or getattr(exc, "reason", None) or str(exc)
        raise ToolError(f"{option} {location}: {reason}: give a PEM file of CA certificates "
                        "(or a directory of them)", EXIT_USAGE) from None
