"""``kafkette produce TOPIC``: records from lines of stdin or a file, as kcat -P does.

One record per line (``-D`` changes the delimiter). kcat's habits carry over: ``-K SEP``
splits each line into key and value at the first SEP (a line without SEP has a null key),
``-k KEY`` is a fixed key, ``-H name=value`` adds a header to every record, empty lines are
skipped unless ``-Z`` sends them as null values (tombstones), and ``-Z`` makes an empty key
null. ``--json`` reads one JSON object per line instead (``key``, ``value``, ``headers``,
``partition``, ``timestamp``: the objects ``kafkette consume --json`` writes).

Defaults are Apache Kafka's producer defaults where librdkafka's differ: ``acks=all`` with
idempotence, and the Java client's murmur2 partitioner, so that a key lands on the partition
a Java, Go or Python-Java-compatible producer would choose. ``-X`` overrides any of them.

Speed: librdkafka reports only failed deliveries (``delivery.report.only.error``), so the
per-record Python work is the split of the line and one ``produce`` call.

Output: nothing on stdout, ever. Exit 0 when every record was acknowledged, 1 with one line
naming how many failed and why, 3 when no broker answered. On a terminal (stderr, with the
input not typed at that terminal) a progress line and a final count.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

from kafkette.tools.client_session import (
    Progress,
    check_partitions,
    is_missing,
    quiet,
    topic_metadata,
)
from kafkette.tools.common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    ToolError,
    add_client_options,
    client_config,
    run_tool,
)

EXAMPLES = """examples:
  printf 'hello\\nworld\\n' | kafkette produce clicks
  printf 'user-1:hello\\nuser-2:world\\n' | kafkette produce clicks -K:
  kafkette produce clicks --file events.txt -H source=batch -z zstd
  kafkette produce clicks -p 2 -k user-1 --acks 1 --rate 100 < lines.txt
  echo '{"key":"u1","value":"hi","headers":[["trace","7"]]}' | kafkette produce clicks --json
  kafkette topics create clicks-copy --partitions 3   # as many partitions as clicks, then
  kafkette consume clicks -e --json | kafkette produce clicks-copy --json   # copy a topic

Every line is one record; empty lines are skipped (-Z sends them as null values).
Nothing is printed on stdout; exit 1 with one line if any record was not delivered.
"""

READ_CHUNK = 1 << 16
POLL_EVERY = 1024  # records between polls that serve (error-only) delivery reports
AUTO_CREATE_WAIT_S = 5.0
UNKNOWN_TOPIC_WAIT_S = 2.0
FLUSH_AFTER_INTERRUPT_S = 10.0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "produce",
        help="produce lines of stdin (or a file) as records",
        description="Produce records to TOPIC, one per line of stdin or --file (as kcat -P).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topic", metavar="TOPIC")
    add_client_options(parser)
    parser.add_argument("--file", "-l", metavar="PATH",
                        help="read records from PATH instead of stdin")
    parser.add_argument("-D", dest="delimiter", default="\\n", metavar="DELIM",
                        help="record delimiter (default \\n; escapes \\n \\t \\r \\xNN)")
    parser.add_argument("-K", dest="key_delimiter", metavar="SEP",
                        help="split each line into KEY SEP VALUE at the first SEP")
    parser.add_argument("-k", dest="key", metavar="KEY",
                        help="a fixed key for every record (-K keys take precedence)")
    parser.add_argument("-H", dest="headers", action="append", default=[],
                        metavar="NAME=VALUE", help="a header on every record (repeatable)")
    parser.add_argument("-p", "--partition", type=int, metavar="N",
                        help="produce to partition N (default: the key's partition, "
                             "or a sticky random one for null keys)")
    parser.add_argument("-z", "--compression", default="none",
                        choices=("none", "gzip", "snappy", "lz4", "zstd"),
                        help="compression codec (default none)")
    parser.add_argument("--acks", default="all", choices=("0", "1", "all", "-1"),
                        help="acknowledgements to wait for (default all, as Kafka's producer)")
    parser.add_argument("--rate", type=float, metavar="N",
                        help="at most N records per second")
    parser.add_argument("-Z", "--null-empty", action="store_true",
                        help="send empty lines as null values and empty keys as null keys")
    parser.add_argument("--json", action="store_true",
                        help="each line is a JSON object: key, value, headers, partition, "
                             "timestamp (ms)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_tool(produce, args)


def unescape(text: str) -> bytes:
    """kcat's delimiter syntax: \\n \\r \\t \\\\ \\xNN, anything else as UTF-8."""
    from kafkette.tools.record_format import FormatError, parse_format

    if "%" in text:
        return text.encode()
    try:
        parts = parse_format(text)
    except FormatError as exc:
        raise ToolError(str(exc), EXIT_USAGE) from None
    return b"".join(part for part in parts if isinstance(part, bytes))


def split_records(stream: BinaryIO, delimiter: bytes) -> Iterator[list[bytes]]:
    """The records of ``stream``, a list per read: the pieces between delimiters.

    ``read1`` returns what is available, so a line typed at a terminal is sent at once; a
    last piece without a delimiter is a record too. Lists (not one record at a time) keep
    the generator's per-record cost off the produce loop.
    """
    rest = b""
    read = getattr(stream, "read1", stream.read)
    while True:
        chunk = read(READ_CHUNK)
        if not chunk:
            break
        pieces = (rest + chunk).split(delimiter) if rest else chunk.split(delimiter)
        rest = pieces.pop()
        if pieces:
            yield pieces
    if rest:
        yield [rest]


def parse_headers(items: list[str]) -> list[tuple[str, bytes]]:
    headers = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ToolError(f"-H {item!r} is not NAME=VALUE: write e.g. -H source=batch",
                            EXIT_USAGE)
        headers.append((name, value.encode()))
    return headers


def producer_config(args: argparse.Namespace, on_delivery: Any) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "acks": args.acks,
        "compression.type": args.compression,
        "partitioner": "murmur2_random",  # the Java client's key -> partition mapping
        "delivery.report.only.error": True,
        "queue.buffering.max.messages": 500_000,
    }
    if args.acks in ("all", "-1"):
        defaults["enable.idempotence"] = True  # Apache Kafka's producer default since 3.0
    config = quiet(client_config(args, **defaults))
    config["on_delivery"] = on_delivery
    return config


class Failures:
    """Failed deliveries, counted by reason (librdkafka reports only those)."""

    def __init__(self) -> None:
        self.reasons: Counter[str] = Counter()

    def __call__(self, error: Any, message: Any) -> None:
        if error is not None:
            self.reasons[error.str()] += 1

    @property
    def count(self) -> int:
        return sum(self.reasons.values())


def produce(args: argparse.Namespace) -> None:
    delimiter = unescape(args.delimiter)
    if not delimiter:
        raise ToolError("-D must not be empty", EXIT_USAGE)
    key_delimiter = unescape(args.key_delimiter) if args.key_delimiter else None
    if args.rate is not None and args.rate <= 0:
        raise ToolError("--rate must be a positive number of records per second", EXIT_USAGE)
    headers = parse_headers(args.headers)
    # The file first: a wrong path is a usage error, before any broker is asked anything.
    stream = open_input(args.file)
    try:
        produce_stream(args, stream, delimiter, key_delimiter, headers)
    finally:
        if args.file:
            stream.close()


def open_input(path: str | None) -> BinaryIO:
    if not path:
        return sys.stdin.buffer
    try:
        return open(path, "rb")
    except OSError as exc:
        raise ToolError(f"--file {path}: {exc.strerror or exc}", EXIT_USAGE) from None


def produce_stream(args: argparse.Namespace, stream: BinaryIO, delimiter: bytes,
                   key_delimiter: bytes | None, headers: list[tuple[str, bytes]]) -> None:
    from confluent_kafka import KafkaException, Producer

    failures = Failures()
    config = producer_config(args, failures)
    try:
        producer = Producer(config)
    except KafkaException as exc:
        raise ToolError(f"bad client config: {exc.args[0].str()}", EXIT_USAGE) from None
    metadata = wait_for_topic(producer, args.topic, args.bootstrap)
    if args.partition is not None:
        check_partitions(args.topic, metadata, [args.partition])
    transactional = "transactional.id" in config
    if transactional:  # as kcat: all records in one transaction, committed at the end
        try:
            producer.init_transactions()
            producer.begin_transaction()
        except KafkaException as exc:
            error = exc.args[0]
            raise ToolError(f"transactional.id={config['transactional.id']}: "
                            f"{error.name()}: {error.str()}") from None

    interactive = not args.file and sys.stdin.isatty()
    progress = Progress("produced", enabled=sys.stderr.isatty() and not interactive)
    sent = 0
    interrupted = False
    bad: BadRecord | None = None
    try:
        chunks = split_records(stream, delimiter)
        if args.json:
            sent, bad = produce_json(producer, args, chunks, headers, progress)
        else:
            sent, bad = produce_lines(producer, args, chunks, key_delimiter, headers,
                                      progress)
    except KeyboardInterrupt:
        interrupted = True
    try:
        left = producer.flush(FLUSH_AFTER_INTERRUPT_S if interrupted else -1)
    except KeyboardInterrupt:
        interrupted, left = True, len(producer)
    if transactional and not interrupted and not failures.count and bad is None:
        producer.commit_transaction()
    elif transactional:
        producer.abort_transaction()
    progress.finish(sent)
    if interrupted:
        raise ToolError(f"interrupted after {sent:,} records"
                        + (f"; {left:,} were not yet delivered" if left else ""),
                        EXIT_INTERRUPTED)
    if failures.count:
        reasons = "; ".join(f"{reason} ({n:,})" for reason, n in failures.reasons.most_common())
        raise ToolError(f"{failures.count:,} of {sent:,} records were not delivered to "
                        f"{args.topic}: {reasons}", EXIT_FAILED)
    if bad is not None:
        if transactional:
            before = f"the transaction of the {sent:,} records before it was aborted"
        else:
            before = f"the {sent:,} records before it were produced"
        raise ToolError(f"input line {bad.line}: {bad.reason}; {before}", EXIT_FAILED)


class BadRecord(NamedTuple):
    """The input record that stopped producing: its line number (1-based) and why."""

    line: int
    reason: str


def wait_for_topic(producer: Any, topic: str, bootstrap: str) -> Any:
    """The topic's metadata; asking for it creates it where the broker allows, as any client.

    A broker creating the topic answers LEADER_NOT_AVAILABLE until it is ready: wait for
    it. One that does not create topics on Metadata answers UNKNOWN_TOPIC_OR_PART; so does
    Apache Kafka for a moment after a CreateTopics (its metadata catches up
    asynchronously): keep asking for a short while, then say so.
    """
    from confluent_kafka import KafkaError

    started = time.monotonic()
    while True:
        metadata = topic_metadata(producer, topic, bootstrap)
        if not is_missing(metadata) and metadata.partitions:
            return metadata
        unknown = (metadata.error is not None
                   and metadata.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)
        waited = time.monotonic() - started
        if waited > AUTO_CREATE_WAIT_S or (unknown and waited > UNKNOWN_TOPIC_WAIT_S):
            raise ToolError(
                f"topic {topic} does not exist and the broker does not create topics on "
                f"produce (auto.create.topics.enable=false): create it with "
                f"`kafkette topics create {topic}`")
        time.sleep(0.2)


def _send_when_room(producer: Any, topic: str, value: bytes | None, key: bytes | None,
                    partition: int, extra: dict[str, Any]) -> None:
    """``produce`` after librdkafka's queue was full: serve it until there is room."""
    while True:
        producer.poll(0.05)
        try:
            producer.produce(topic, value, key, partition, **extra)
            return
        except BufferError:
            continue


class _Pacer:
    """Keeps to ``--rate`` records per second by sleeping until each record's slot."""

    def __init__(self, rate: float | None) -> None:
        self.interval = 1.0 / rate if rate else 0.0
        self.next_at = time.monotonic()

    def wait(self, producer: Any) -> None:
        now = time.monotonic()
        while now < self.next_at:
            # serve reports while waiting; poll returns early when it served one
            producer.poll(self.next_at - now)
            now = time.monotonic()
        self.next_at = max(self.next_at, now - 1.0) + self.interval


def produce_lines(producer: Any, args: argparse.Namespace, chunks: Iterator[list[bytes]],
                  key_delimiter: bytes | None, headers: list[tuple[str, bytes]],
                  progress: Progress) -> tuple[int, BadRecord | None]:
    """Records from lines; stops at the first one librdkafka refuses and says which one.

    ``produce`` raises at once for a record it will never send (over message.max.bytes, a
    partition the topic lacks): the records before it are flushed and the transaction, if
    any, aborted by the caller. The line number is worked out only then, so the loop keeps
    its one call per line.
    """
    from confluent_kafka import KafkaException

    topic = args.topic
    partition = -1 if args.partition is None else args.partition
    fixed_key = args.key.encode() if args.key is not None else None
    null_empty = args.null_empty
    extra: dict[str, Any] = {"headers": headers} if headers else {}
    pacer = _Pacer(args.rate) if args.rate else None
    produce, poll = producer.produce, producer.poll
    # Plain lines (no key, header, partition, rate): the loop is one produce call per line.
    plain = (key_delimiter is None and fixed_key is None and partition == -1 and not extra
             and not null_empty and pacer is None)
    sent = 0
    lines_before = 0
    for lines in chunks:
        sent_before = sent
        try:
            if plain:
                for value in lines:
                    if not value:
                        continue  # an empty line: kcat skips it
                    try:
                        produce(topic, value)
                    except BufferError:
                        _send_when_room(producer, topic, value, None, -1, extra)
                    sent += 1
            else:
                for line in lines:
                    key = fixed_key
                    value: bytes | None = line
                    if not line:
                        if not null_empty:
                            continue
                        value = None
                    else:
                        if key_delimiter is not None:
                            found_key, sep, rest = line.partition(key_delimiter)
                            if sep:
                                key, value = found_key, rest
                        if null_empty:
                            value = value or None
                            key = key or None
                    if pacer is not None:
                        pacer.wait(producer)
                    try:
                        produce(topic, value, key, partition, **extra)
                    except BufferError:
                        _send_when_room(producer, topic, value, key, partition, extra)
                    sent += 1
        except KafkaException as exc:
            index = _index_of_record(lines, sent - sent_before, null_empty)
            return sent, BadRecord(lines_before + index + 1, exc.args[0].str())
        lines_before += len(lines)
        poll(0)
        progress.update(sent)
    return sent, None


def _index_of_record(lines: list[bytes], produced: int, null_empty: bool) -> int:
    """The index in ``lines`` of the record after the first ``produced`` ones sent."""
    for index, line in enumerate(lines):
        if not line and not null_empty:
            continue  # skipped, not a record
        if produced == 0:
            return index
        produced -= 1
    return len(lines) - 1


def produce_json(producer: Any, args: argparse.Namespace, chunks: Iterator[list[bytes]],
                 headers: list[tuple[str, bytes]], progress: Progress
                 ) -> tuple[int, BadRecord | None]:
    """Records from JSON lines; stops at the first bad line and says which one."""
    from confluent_kafka import KafkaException

    from kafkette.tools.record_format import parse_json_record

    default_partition = -1 if args.partition is None else args.partition
    pacer = _Pacer(args.rate) if args.rate else None
    sent = 0
    records = (line for lines in chunks for line in lines)
    for number, line in enumerate(records, start=1):
        if not line.strip():
            continue
        try:
            record = parse_json_record(line)
        except ValueError as exc:
            return sent, BadRecord(number, str(exc))
        extra: dict[str, Any] = {}
        if record.headers or headers:
            extra["headers"] = [*record.headers, *headers]
        if record.timestamp is not None:
            extra["timestamp"] = record.timestamp
        partition = default_partition if record.partition is None else record.partition
        if pacer is not None:
            pacer.wait(producer)
        try:
            try:
                producer.produce(args.topic, record.value, record.key, partition, **extra)
            except BufferError:
                _send_when_room(producer, args.topic, record.value, record.key, partition,
                                extra)
        except KafkaException as exc:  # e.g. a partition the topic lacks
            return sent, BadRecord(number, exc.args[0].str())
        sent += 1
        if sent % POLL_EVERY == 0:
            producer.poll(0)
            progress.update(sent)
    return sent, None
