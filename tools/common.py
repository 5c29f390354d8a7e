"""What every client tool shares: broker options, client configs, output, errors, exit codes.

Exit codes scripts can trust (docs/cli.md): 0 done; 1 the broker or the data said no (a topic
exists, a group is not empty, an invalid config...); 2 the command line is wrong; 3 no broker
answered at the bootstrap address; 130 interrupted. Errors are one line on stderr,
``kafkette: <what happened>: <what to do>``, and nothing else.

Output: aligned tables (rich) when stdout is a terminal; the same columns as plain
space-aligned text on a pipe, with no colour, progress or decoration; ``--json`` prints JSON
(one document, or one object per line for streams) for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Iterable, Sequence
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
    """``-b/--bootstrap`` and ``-X key=value`` (client configs, as kcat takes them)."""
    parser.add_argument(
        "-b",
        "--bootstrap",
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


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON for scripts")


def client_config(args: argparse.Namespace, **defaults: Any) -> dict[str, Any]:
    """The confluent-kafka config: ``defaults``, then bootstrap, then every ``-X`` (last wins)."""
    config: dict[str, Any] = dict(defaults)
    config["bootstrap.servers"] = args.bootstrap
    for item in args.client_configs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ToolError(f"-X {item!r} is not KEY=VALUE: write e.g. -X acks=all", EXIT_USAGE)
        config[key.strip()] = value
    return config


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
