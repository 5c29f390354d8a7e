"""``kafkette consume TOPIC``: records to stdout, as kcat -C / -G does.

Where to start: kcat's default, the beginning of every partition; ``--from-end`` for new
records only, ``--offset N`` (an absolute offset, or ``-N``: the last N of each partition),
``--from-timestamp MS|ISO-8601`` (the first record at or after it). With ``-G GROUP`` the
group's committed offsets decide, and the start flags apply only to partitions where the
group has none (Kafka's ``auto.offset.reset``; kafkette consume's default there is
``earliest``); offsets are committed as records are printed and when the tool exits.

When to stop: follow (until Ctrl-C, exit 130) by default; ``-e`` at the end of every
partition (exit 0), ``-c N`` after N records. A missing topic is an error (exit 1) unless
following, which waits for it to be created.

Output: ``-f`` format strings with kcat's tokens (default ``%s\\n``), or ``--json``, one
object per line (record_format.py). Records are rendered a batch at a time by one generated
list comprehension and written to ``sys.stdout.buffer`` in one write per batch.

``isolation.level`` defaults to Apache Kafka's ``read_uncommitted`` (librdkafka's and kcat's
default is ``read_committed``): records of open and aborted transactions are shown unless
``--isolation-level read_committed``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime
from typing import Any

from kafkette.tools.client_session import (
    Progress,
    check_partitions,
    is_missing,
    quiet,
    topic_metadata,
)
from kafkette.tools.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    ToolError,
    add_client_options,
    client_config,
    run_tool,
)

EXAMPLES = """examples:
  kafkette consume clicks -e                        # everything there is, then exit
  kafkette consume clicks --from-end                # follow new records (Ctrl-C stops)
  kafkette consume clicks -c 10 -f '%p/%o %k=%s\\n'
  kafkette consume clicks --offset -5 -e            # the last 5 records of each partition
  kafkette consume clicks --from-timestamp 2026-11-23T10:00:00Z -e --json
  kafkette consume clicks -G my-app -e              # as a group member: commits offsets
  kafkette consume clicks -e --isolation-level read_committed

format tokens: %s value, %k key, %S/%K value/key size (-1 for null), %t topic,
%p partition, %o offset, %T timestamp (ms), %h headers (n=v,...), %% a percent sign;
escapes \\n \\r \\t \\\\ \\xNN. Null keys and values print as nothing.
--json: {"topic","partition","offset","timestamp","timestamp_type","key","value","headers"};
key/value/header values are strings (UTF-8), null, or {"base64": "..."} for other bytes.
"""

BATCH = 1000  # records taken from librdkafka's local queue per consume() call
POLL_TIMEOUT_S = 0.5  # how long an idle consume() waits; Ctrl-C is seen between calls
TOPIC_WAIT_S = 1.0


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "consume",
        help="print a topic's records (kcat-like formats, JSON)",
        description="Print the records of TOPIC (as kcat -C, or kcat -G with -G).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("topics", nargs="+", metavar="TOPIC")
    add_client_options(parser)
    start = parser.add_mutually_exclusive_group()
    start.add_argument("--from-beginning", action="store_true",
                       help="start at the beginning of each partition (the default)")
    start.add_argument("--from-end", action="store_true",
                       help="start at the end: only records produced from now on")
    start.add_argument("--offset", type=int, metavar="N",
                       help="start at offset N; -N: the last N records of each partition")
    start.add_argument("--from-timestamp", metavar="MS|ISO",
                       help="start at the first record at or after this time (epoch ms or "
                            "ISO 8601; no zone means local time)")
    parser.add_argument("-G", "--group", metavar="GROUP",
                        help="consume as a member of GROUP, committing offsets")
    parser.add_argument("-p", "--partition", dest="partitions", type=int, action="append",
                        metavar="N", help="only partition N (repeatable; not with -G)")
    parser.add_argument("-c", "--count", type=int, metavar="N", help="exit after N records")
    parser.add_argument("-e", "--exit-at-end", action="store_true",
                        help="exit when the end of every partition is reached (as kcat -e)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("-f", "--format", metavar="FORMAT",
                        help="kcat-like format string (default '%%s\\n'); tokens below")
    output.add_argument("-K", dest="key_delimiter", metavar="SEP",
                        help="print KEY SEP VALUE (as kcat -K); short for -f '%%kSEP%%s\\n'")
    output.add_argument("--json", action="store_true",
                        help="one JSON object per record and line")
    parser.add_argument("--isolation-level", default="read_uncommitted",
                        choices=("read_uncommitted", "read_committed"),
                        help="read_committed hides records of open and aborted transactions "
                             "(default read_uncommitted, as Kafka's consumer)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return run_tool(consume, args)


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or an ISO 8601 time (local when it names no zone) -> epoch ms."""
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ToolError(f"--from-timestamp {text!r} is neither epoch milliseconds nor "
                        "ISO 8601: write e.g. 1763892000000 or 2026-11-23T10:00:00Z",
                        EXIT_USAGE) from None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # local time, as kafka-consumer-groups.sh --to-datetime
    return int(moment.timestamp() * 1000)


def renderer(args: argparse.Namespace) -> Any:
    from kafkette.tools.record_format import (
        DEFAULT_FORMAT,
        FormatError,
        compile_format,
        render_json,
    )

    if args.json:
        return render_json
    text = args.format
    if text is None:
        text = (DEFAULT_FORMAT if args.key_delimiter is None
                else "%k" + args.key_delimiter.replace("%", "%%") + DEFAULT_FORMAT)
    try:
        return compile_format(text)
    except FormatError as exc:
        raise ToolError(f"-f: {exc}", EXIT_USAGE) from None


def check_usage(args: argparse.Namespace) -> None:
    if args.group is not None:
        if args.partitions:
            raise ToolError("-p does not go with -G: a group's partitions are assigned by the "
                            "group; drop -p, or -G to read chosen partitions", EXIT_USAGE)
        if args.offset is not None or args.from_timestamp is not None:
            raise ToolError("with -G the group's committed offsets decide where to start: move "
                            "them with `kafkette groups reset-offsets`", EXIT_USAGE)
    elif any(topic.startswith("^") for topic in args.topics):
        raise ToolError("a ^regex topic is a group subscription: add -G GROUP", EXIT_USAGE)
    if args.count is not None and args.count < 0:
        raise ToolError("-c must be 0 or more", EXIT_USAGE)


def consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    defaults: dict[str, Any] = {
        "isolation.level": args.isolation_level,
        "enable.partition.eof": bool(args.exit_at_end),
        # confluent-kafka's librdkafka stops fetching for 1 s once its local queue holds
        # queued.min.messages; a reader that drains 100,000 records in a fraction of that
        # then sits idle: measured 5.2 s -> 0.9 s for 1M x 100 B. 10 ms keeps fetching going.
        "fetch.queue.backoff.ms": 10,
    }
    if args.exit_at_end:
        # The end shows as a fetch at the end that comes back empty: do not let the broker
        # hold that fetch for librdkafka's default 500 ms before -e can exit.
        defaults["fetch.wait.max.ms"] = 100
    if args.group is not None:
        defaults["group.id"] = args.group
        defaults["auto.offset.reset"] = "latest" if args.from_end else "earliest"
    else:
        # Partitions are assigned by hand: no group is joined and nothing is committed, but
        # librdkafka's consumer still wants a group.id.
        defaults["group.id"] = f"kafkette-consume-{os.getpid()}"
        defaults["enable.auto.commit"] = False
        defaults["enable.auto.offset.store"] = False
        defaults["auto.offset.reset"] = "latest"  # an --offset past the end waits there
    return quiet(client_config(args, **defaults))


def consume(args: argparse.Namespace) -> None:
    from confluent_kafka import Consumer, KafkaException

    check_usage(args)
    render = renderer(args)
    start_ms = parse_timestamp(args.from_timestamp) if args.from_timestamp else None
    try:
        consumer = Consumer(consumer_config(args))
    except KafkaException as exc:
        raise ToolError(f"bad client config: {exc.args[0].str()}", EXIT_USAGE) from None
    try:
        metadata = {topic: wait_for_topic(consumer, topic, args) for topic in args.topics}
        if args.group is not None:
            try:
                consumer.subscribe(list(args.topics))
            except KafkaException as exc:  # e.g. a ^regex librdkafka cannot compile
                raise ToolError(f"cannot subscribe to {' '.join(args.topics)}: "
                                f"{exc.args[0].str()}: check the topic names and ^regexes",
                                EXIT_USAGE) from None
        else:
            positions = start_positions(consumer, args, metadata, start_ms)
            try:
                consumer.assign(positions)
            except KafkaException as exc:
                raise ToolError(f"cannot assign the partitions: {exc.args[0].str()}",
                                EXIT_USAGE) from None
        if args.count != 0:
            read_loop(consumer, args, render)
    finally:
        consumer.close()  # a group member commits its offsets and leaves at once


def wait_for_topic(consumer: Any, topic: str, args: argparse.Namespace) -> Any:
    """The topic's metadata; a missing topic fails unless following, which waits for it."""
    if topic.startswith("^"):  # a regex subscription (-G): librdkafka matches it
        return None
    following = not args.exit_at_end
    waiting = False
    while True:
        metadata = topic_metadata(consumer, topic, args.bootstrap)
        if not is_missing(metadata) and metadata.partitions:
            if waiting and sys.stderr.isatty():
                sys.stderr.write(f"kafkette: topic {topic} is here\n")
            return metadata
        if not following:
            raise ToolError(f"topic {topic} does not exist: see `kafkette topics list`, or "
                            "leave out -e to wait for it")
        if not waiting and sys.stderr.isatty():
            sys.stderr.write(f"kafkette: waiting for topic {topic} to be created...\n")
        waiting = True
        time.sleep(TOPIC_WAIT_S)


def start_positions(consumer: Any, args: argparse.Namespace, metadata: dict[str, Any],
                    start_ms: int | None) -> list[Any]:
    """One ``TopicPartition`` per partition to read, at the offset the flags ask for."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

    partitions = []
    for topic, topic_meta in metadata.items():
        if args.partitions:
            check_partitions(topic, topic_meta, args.partitions)
            numbers = sorted(set(args.partitions))
        else:
            numbers = sorted(topic_meta.partitions)
        partitions += [TopicPartition(topic, number) for number in numbers]
    if args.from_end:
        offsets = [OFFSET_END] * len(partitions)
    elif start_ms is not None:
        query = [TopicPartition(tp.topic, tp.partition, start_ms) for tp in partitions]
        try:
            found = consumer.offsets_for_times(query, timeout=10.0)
        except KafkaException as exc:
            raise ToolError(f"offsets for --from-timestamp: {exc.args[0].str()}") from None
        # -1: no record at or after that time yet: start at the end
        offsets = [tp.offset if tp.offset >= 0 else OFFSET_END for tp in found]
    elif args.offset is not None and args.offset < 0:
        offsets = []
        for tp in partitions:
            try:
                low, high = consumer.get_watermark_offsets(tp, timeout=10.0)
            except KafkaException as exc:
                raise ToolError(f"offsets of {tp.topic} partition {tp.partition} for "
                                f"--offset {args.offset}: {exc.args[0].str()}") from None
            offsets.append(max(low, high + args.offset))
    elif args.offset is not None:
        offsets = [args.offset] * len(partitions)
    else:
        offsets = [OFFSET_BEGINNING] * len(partitions)
    return [TopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in zip(partitions, offsets, strict=True)]


def read_loop(consumer: Any, args: argparse.Namespace, render: Any) -> None:
    """Consume, render and write a batch at a time until the count, the end or Ctrl-C."""
    from confluent_kafka import KafkaError

    write = sys.stdout.buffer.write
    flush = sys.stdout.buffer.flush
    remaining = args.count
    exit_at_end = args.exit_at_end
    at_end: set[tuple[str, int]] = set()
    transient = _transient_codes()
    reader_gone = pipe_reader_gone_check(sys.stdout.fileno())
    progress = Progress("consumed", enabled=sys.stderr.isatty() and not sys.stdout.isatty())
    printed = 0
    while True:
        wanted = BATCH if remaining is None else min(BATCH, remaining)
        # What is already fetched, at once; else wait for the first record, then take what
        # came with it. (consume(n, timeout) alone waits for n records or the timeout.)
        batch = consumer.consume(wanted, 0)
        if not batch:
            batch = consumer.consume(1, POLL_TIMEOUT_S)
            if batch and wanted > 1:
                batch += consumer.consume(wanted - 1, 0)
        if not batch:
            if reader_gone():
                raise BrokenPipeError  # `| head` left while we had nothing to write
            continue
        out = render(batch)
        if out:
            write(b"".join(out))
            flush()
            printed += len(out)
            progress.update(printed)
            if remaining is not None:
                remaining -= len(out)
                if remaining <= 0:
                    break
        if len(out) == len(batch):
            continue
        for message in batch:
            error = message.error()
            if error is None:
                continue
            code = error.code()
            if code == KafkaError._PARTITION_EOF:
                at_end.add((message.topic(), message.partition()))
            elif code == KafkaError.UNKNOWN_TOPIC_OR_PART and not exit_at_end:
                continue  # following: the topic may come (back)
            elif error.fatal() or (not error.retriable() and code not in transient):
                raise ToolError(f"consuming {message.topic() or args.topics[0]}: {error.str()}",
                                EXIT_FAILED)
        if exit_at_end and at_end and _all_at_end(consumer, at_end):
            break
    progress.finish(printed)


def pipe_reader_gone_check(fd: int) -> Any:
    """A function telling whether the reader of our stdout pipe has gone (``| head`` done).

    A writer learns of it only at its next write; a follower with nothing to write would
    wait forever after ``head`` exited. On a pipe, poll() reports POLLERR once the read end
    is closed, so an idle follower checks between empty polls. Not a pipe: never gone.
    """
    import select
    import stat

    try:
        is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        is_pipe = False
    if not is_pipe or not hasattr(select, "poll"):
        return lambda: False
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR and POLLHUP are always reported

    def gone() -> bool:
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))

    return gone


def _all_at_end(consumer: Any, at_end: set[tuple[str, int]]) -> bool:
    assignment = {(tp.topic, tp.partition) for tp in consumer.assignment()}
    return bool(assignment) and assignment <= at_end


def _transient_codes() -> frozenset[int]:
    """Errors librdkafka recovers from by itself (it reports them, then retries)."""
    from confluent_kafka import KafkaError

    return frozenset({
        KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT,
        KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError._MAX_POLL_EXCEEDED,
    })
