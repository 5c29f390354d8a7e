"""The admin tools' one way to reach a broker: an AdminClient whose every call is bounded.

The admin tools share it so that they fail alike: no broker at the
bootstrap address is exit 3 within seconds (a TCP probe before librdkafka starts retrying
for ever), a call that gets no answer within ``--timeout`` is exit 3 too, and a broker's
error code becomes one line that names what to do. confluent-kafka is imported inside the
functions, never at module import (``kafkette --help`` and ``kafkette serve`` stay light).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from kafkette.tools.common import (
    EXIT_UNREACHABLE,
    ToolError,
    add_client_options,
    add_json_option,
    client_config,
    partition_name,
    probe,
    split_outside_brackets,
)

DEFAULT_TIMEOUT_S = 10.0

# librdkafka's local errors that mean "nobody answered", not "the broker said no".
_UNREACHABLE_CODES = {"_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_WAIT_COORD"}


def _milliseconds(text: str) -> float:
    """``--timeout MS`` as the seconds every bound here counts in."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of ms") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of ms")
    return value / 1000


def add_timeout_option(parser: argparse.ArgumentParser, milliseconds: bool = False,
                       what: str = "a broker") -> None:
    """``--timeout``, kept in seconds in ``args.timeout``. Given in seconds, except where the
    matching Kafka script's ``--timeout`` is milliseconds (kafka-reassign-partitions.sh)."""
    if milliseconds:
        parser.add_argument(
            "--timeout", type=_milliseconds, default=DEFAULT_TIMEOUT_S, metavar="MS",
            help=f"give up on {what} that does not answer after this many milliseconds "
                 f"(default {DEFAULT_TIMEOUT_S * 1000:g}; milliseconds, as Kafka's script "
                 "takes it)",
        )
        return
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
        help=f"give up on {what} that does not answer after this long "
             f"(default {DEFAULT_TIMEOUT_S:g})",
    )


def add_tool(commands: argparse._SubParsersAction, name: str,
             **options: Any) -> argparse._SubParsersAction:
    """``kafkette NAME`` (``help``, ``description``, ``epilog`` in ``options``; the epilog's
    layout kept) and the subparsers of its actions, one of which is required."""
    parser = commands.add_parser(name, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 **options)
    return parser.add_subparsers(dest="action", required=True, metavar="ACTION")


def add_action(
    actions: argparse._SubParsersAction, name: str, help: str, examples: str,
    options: Callable[[argparse.ArgumentParser], None] | None = None,
    timeout_ms: bool = False,
) -> argparse.ArgumentParser:
    """One ``kafkette TOOL ACTION`` subparser with its examples in the epilog and the tools'
    common options: bootstrap, -X, --command-config, --timeout (``timeout_ms``: in
    milliseconds) and --json; or, for a tool that talks to something else (a schema
    registry), what ``options`` adds."""
    sub = actions.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".",
                             epilog="examples:\n" + examples,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    if options is not None:
        options(sub)
        return sub
    add_client_options(sub)
    add_timeout_option(sub, milliseconds=timeout_ms)
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


def list_offsets(admin: Any, args: argparse.Namespace, partitions: list[tuple[str, int]],
                 spec: Any) -> dict[tuple[str, int], int]:
    """ListOffsets of each partition for one ``OffsetSpec`` (earliest, latest, a time)."""
    from confluent_kafka import TopicPartition

    if not partitions:
        return {}
    request = {TopicPartition(t, p): spec for t, p in partitions}
    futures = admin.list_offsets(request, request_timeout=args.timeout)
    found = {}
    for tp, value in results(futures, args).items():
        if isinstance(value, Exception):
            where = partition_name(tp.topic, tp.partition)
            raise ToolError(f"could not read the offsets of {where}: {error_text(value)}")
        found[(tp.topic, tp.partition)] = value.offset
    return found


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
    ``[a,b]`` for a list value (as kafka-configs.sh's --add-config takes them: the brackets
    go, the list's commas stay)."""
    pairs: dict[str, str] = {}
    for item in items:
        parts = split_outside_brackets(item) if comma_list else [item]
        for part in parts:
            if comma_list:
                part = part.replace("[", "").replace("]", "")
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ToolError(f"{option} {part!r} is not KEY=VALUE: write e.g. "
                                f"{option} retention.ms=60000", 2)
            pairs[key.strip()] = value.strip()
    return pairs


def split_names(items: Iterable[str]) -> list[str]:
    names: list[str] = []
    for item in items:
        names.extend(part.strip() for part in item.split(",") if part.strip())
    return names


# ---------------------------------------------------------------- topics


INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def is_internal(name: str) -> bool:
    return name.startswith("__")


def missing_topic(name: str) -> ToolError:
    return ToolError(f"topic {name!r} does not exist: see `kafkette topics list`, "
                     f"or create it with `kafkette topics create {name}`")


def check_partitions(known: Mapping[str, Collection[int]],
                     wanted: Iterable[tuple[str, int]]) -> None:
    """Exit 1 before anything is changed when a wanted partition is not in ``known`` (each
    topic's partition numbers, from Metadata): a topic that does not exist, or a partition
    number past the topic's count."""
    for topic, partition in wanted:
        partitions = known.get(topic)
        if partitions is None:
            raise missing_topic(topic)
        if partition not in partitions:
            raise ToolError(f"topic {topic!r} has no partition {partition} (it has "
                            f"{len(partitions)}): see `kafkette topics describe {topic}`")


def known_topics(admin: Any, args: argparse.Namespace, internal: bool,
                 wanted: list[str] | None = None) -> dict[str, Any]:
    """Topic metadata by name; with ``internal`` (or when named), the internal topics too.

    Kafka (and kafkette since topic ids everywhere) lists internal topics in an all-topics
    Metadata answer; older kafkette brokers answer them only when asked by name, so those
    missing from the answer are asked for by name here.
    """
    topics = dict(cluster_metadata(admin, args).topics)
    extra = [n for n in (INTERNAL_TOPICS if internal else ()) if n not in topics]
    extra += [n for n in (wanted or []) if is_internal(n) and n not in topics and n not in extra]
    for name in extra:
        found = cluster_metadata(admin, args, topic=name).topics.get(name)
        if found is not None and found.error is None and found.partitions:
            topics[name] = found
    return topics


def kafka_topic_id(uuid: Any) -> str | None:
    """A topic id as Kafka writes it (kafka-topics.sh's ``TopicId:``): URL-safe base64 of its
    16 bytes without padding. librdkafka's ``str()`` uses the standard alphabet (``+``, ``/``),
    which would not match what Kafka's tools and logs show. None for no id (the zero id)."""
    import base64
    import struct

    if uuid is None:
        return None
    raw = struct.pack(">qq", uuid.get_most_significant_bits(), uuid.get_least_significant_bits())
    if raw == bytes(16):
        return None
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def describe_topics(admin: Any, args: argparse.Namespace, names: list[str]) -> dict[str, Any]:
    """TopicDescription by name (DescribeTopics: topic id, partitions with leader, replicas
    and ISR as nodes); a topic deleted since it was listed is left out, other errors stop."""
    from confluent_kafka import TopicCollection

    if not names:
        return {}
    futures = admin.describe_topics(TopicCollection(names), request_timeout=args.timeout)
    found = {}
    for name, value in results(futures, args).items():
        if isinstance(value, Exception):
            if error_code(value) == "UNKNOWN_TOPIC_OR_PART":
                continue
            raise ToolError(f"could not describe topic {name!r}: {error_text(value)}")
        found[name] = value
    return found
