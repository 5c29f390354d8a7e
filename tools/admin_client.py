"""The admin tools' one way to reach a broker: an AdminClient whose every call is bounded.

``topics``, ``configs`` and ``groups`` share it so that they fail alike: no broker at the
bootstrap address is exit 3 within seconds (a TCP probe before librdkafka starts retrying
for ever), a call that gets no answer within ``--timeout`` is exit 3 too, and a broker's
error code becomes one line that names what to do. confluent-kafka is imported inside the
functions, never at module import (``kafkette --help`` and ``kafkette serve`` stay light).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from typing import Any

from kafkette.tools.common import (
    EXIT_UNREACHABLE,
    ToolError,
    add_client_options,
    add_json_option,
    client_config,
    probe,
)

DEFAULT_TIMEOUT_S = 10.0

# librdkafka's local errors that mean "nobody answered", not "the broker said no".
_UNREACHABLE_CODES = {"_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_WAIT_COORD"}


def add_timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
        help="give up on a broker that does not answer after this long "
             f"(default {DEFAULT_TIMEOUT_S:g})",
    )


def add_action(
    actions: argparse._SubParsersAction, name: str, help: str, examples: str
) -> argparse.ArgumentParser:
    """One ``kafkette topics|groups ACTION`` subparser with the admin tools' common options
    (bootstrap, -X, --timeout, --json) and its examples in the epilog."""
    sub = actions.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                             epilog="examples:\n" + examples,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    add_client_options(sub)
    add_timeout_option(sub)
    add_json_option(sub)
    return sub


def admin_client(args: argparse.Namespace) -> Any:
    """An AdminClient for ``-b``/``-X``, after the probe; librdkafka's own log lines are off."""
    from confluent_kafka.admin import AdminClient

    config = client_config(args, **{"log_level": 0, "socket.connection.setup.timeout.ms": 5000})
    probe(args.bootstrap, args.timeout)
    try:
        return AdminClient(config)
    except Exception as exc:  # a bad -X key or value: librdkafka names it
        text = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
        raise ToolError(f"bad client config: {text}: fix or drop that -X option", 2) from exc


def consumer(args: argparse.Namespace, group: str) -> Any:
    """A Consumer of ``group`` (never subscribed) for what AdminClient lacks: offsets_for_times."""
    from confluent_kafka import Consumer

    config = client_config(args, **{"log_level": 0, "group.id": group,
                                    "enable.auto.commit": False})
    return Consumer(config)


def error_code(exc: BaseException) -> str:
    """The Kafka (or librdkafka) error name inside a client exception, '' if there is none."""
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args:
        error = exc.args[0]
        name = getattr(error, "name", None)
        if callable(name):
            return str(name())
    return ""


def error_text(exc: BaseException) -> str:
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args:
        error = exc.args[0]
        text = getattr(error, "str", None)
        if callable(text):
            return f"{text()} ({error.name()})"
    return str(exc)


def is_unreachable(exc: BaseException) -> bool:
    return error_code(exc) in _UNREACHABLE_CODES or isinstance(exc, TimeoutError)


def no_answer(args: argparse.Namespace) -> ToolError:
    return ToolError(
        f"the broker at {args.bootstrap} did not answer within {args.timeout:g} s: "
        "check it is up and reachable, or raise --timeout",
        EXIT_UNREACHABLE,
    )


def result(future: Any, args: argparse.Namespace) -> Any:
    """``future.result()`` bounded by ``--timeout``; no answer is exit 3, other errors re-raise."""
    import concurrent.futures

    try:
        return future.result(timeout=args.timeout + 1)
    except concurrent.futures.TimeoutError as exc:
        raise no_answer(args) from exc
    except Exception as exc:
        if is_unreachable(exc):
            raise no_answer(args) from exc
        raise


def results(futures: Mapping[Any, Any], args: argparse.Namespace) -> dict[Any, Any]:
    """Every future's result or its exception (callers report per item, as Kafka's tools do)."""
    outcome: dict[Any, Any] = {}
    for key, future in futures.items():
        try:
            outcome[key] = result(future, args)
        except ToolError:
            raise
        except Exception as exc:
            outcome[key] = exc
    return outcome


def cluster_metadata(admin: Any, args: argparse.Namespace, topic: str | None = None) -> Any:
    try:
        return admin.list_topics(topic=topic, timeout=args.timeout)
    except Exception as exc:
        if is_unreachable(exc):
            raise no_answer(args) from exc
        raise ToolError(f"metadata request failed: {error_text(exc)}") from exc


def request_timeout(args: argparse.Namespace) -> float:
    return float(args.timeout)


def parse_key_values(items: Iterable[str], option: str, comma_list: bool = False) -> dict[str, str]:
    """``k=v`` items; with ``comma_list`` each may hold several, comma-separated, with
    ``[a,b]`` for a list value (as kafka-configs.sh's --add-config takes them)."""
    pairs: dict[str, str] = {}
    for item in items:
        for part in (_split_config_list(item) if comma_list else [item]):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ToolError(f"{option} {part!r} is not KEY=VALUE: write e.g. "
                                f"{option} retention.ms=60000", 2)
            pairs[key.strip()] = value.strip()
    return pairs


def _split_config_list(item: str) -> list[str]:
    """Split on commas outside ``[...]`` (kafka-configs.sh's way to put a list in a value)."""
    parts, depth, current = [], 0, []
    for char in item:
        if char == "[":
            depth += 1
            continue
        if char == "]":
            depth -= 1
            continue
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if current:
        parts.append("".join(current))
    return [part for part in (p.strip() for p in parts) if part]


def split_names(items: Iterable[str]) -> list[str]:
    names: list[str] = []
    for item in items:
        names.extend(part.strip() for part in item.split(",") if part.strip())
    return names
