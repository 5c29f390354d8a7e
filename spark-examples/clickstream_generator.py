"""Produce a deterministic clickstream of JSON page views to a Kafka topic, keyed by user.

Same seed -> same events, and a longer run extends a shorter one (event ``i`` never depends on
how many events follow it), so tests and the streaming job can recompute expected results in
plain Python. Events arrive slightly out of order (at most ``max_lateness_ms`` behind the newest
one), which is what a watermark is for.

Usage::

    python spark-examples/clickstream_generator.py --bootstrap-server 127.0.0.1:9092 \\
        --topic clickstream --count 2000 --seed 7 [--skip 2000] [--partitions 3]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/help")
PAGE_WEIGHTS = (30, 25, 20, 12, 8, 5)
DEFAULT_START = datetime(2024, 1, 1, tzinfo=UTC)
SOURCE_HEADER = ("source", b"kafkette-clickstream")


@dataclass(frozen=True)
class PageView:
    """One page view. ``timestamp_ms`` is event time in milliseconds since the epoch (UTC)."""

    seq: int
    user: str
    page: str
    timestamp_ms: int

    @property
    def key(self) -> bytes:
        return self.user.encode()

    @property
    def value(self) -> bytes:
        """JSON body; ``timestamp`` is ISO-8601 UTC with milliseconds, as Spark's parser expects."""
        when = datetime.fromtimestamp(self.timestamp_ms / 1000, tz=UTC)
        iso = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.timestamp_ms % 1000:03d}Z"
        return json.dumps(
            {"user": self.user, "page": self.page, "timestamp": iso}, separators=(",", ":")
        ).encode()

    @property
    def headers(self) -> list[tuple[str, bytes]]:
        return [SOURCE_HEADER, ("seq", str(self.seq).encode())]


@dataclass(frozen=True)
class DeliveredRecord:
    """Where the broker put a produced page view (from the producer's delivery report)."""

    view: PageView
    topic: str
    partition: int
    offset: int
    timestamp_ms: int


def generate_page_views(
    count: int,
    seed: int = 7,
    skip: int = 0,
    users: int = 40,
    start: datetime = DEFAULT_START,
    mean_gap_ms: int = 3_000,
    max_lateness_ms: int = 20_000,
) -> list[PageView]:
    """Events ``skip`` .. ``skip + count - 1`` of the stream defined by ``seed``.

    Event time advances by a random gap (mean ``mean_gap_ms``) and each event lags that clock by
    up to ``max_lateness_ms``, so no event is more than ``max_lateness_ms`` older than any event
    before it.
    """
    rng = random.Random(seed)
    clock_ms = int(start.timestamp() * 1000)
    views: list[PageView] = []
    for seq in range(skip + count):
        clock_ms += rng.randint(1, 2 * mean_gap_ms)
        lateness = rng.randint(0, max_lateness_ms)
        user = f"user-{rng.randrange(users):03d}"
        page = rng.choices(PAGES, weights=PAGE_WEIGHTS)[0]
        if seq >= skip:
            views.append(PageView(seq, user, page, clock_ms - lateness))
    return views


def ensure_topic(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Create ``topic`` with ``partitions`` partitions unless it already exists.

    A topic made here keeps its records whatever their age (``retention.ms=-1``): the events
    are dated from 2024-01-01, which a broker's default time retention (7 days) deletes at its
    next retention check, within minutes. An existing topic is left as it is.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})
    future = admin.create_topics([new])[topic]
    try:
        future.result(timeout)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def produce_page_views(
    bootstrap: str, topic: str, views: Iterable[PageView], timeout: float = 60.0
) -> list[DeliveredRecord]:
    """Produce ``views`` keyed by user, record timestamp = event time; wait for every ack.

    Uses the murmur2 partitioner so a user lands on the partition the Java client would pick.
    Returns the delivery reports in acknowledgement order; raises if any delivery failed.
    """
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "linger.ms": 5}
    )
    delivered: list[DeliveredRecord] = []
    errors: list[str] = []

    def on_delivery(view: PageView):
        def report(err, msg) -> None:
            if err is not None:
                errors.append(f"seq {view.seq}: {err}")
                return
            _, timestamp_ms = msg.timestamp()
            delivered.append(
                DeliveredRecord(view, msg.topic(), msg.partition(), msg.offset(), timestamp_ms)
            )

        return report

    sent = 0
    for view in views:
        producer.produce(
            topic,
            key=view.key,
            value=view.value,
            headers=view.headers,
            timestamp=view.timestamp_ms,
            on_delivery=on_delivery(view),
        )
        sent += 1
        producer.poll(0)
    remaining = producer.flush(timeout)
    if errors or remaining or len(delivered) != sent:
        raise RuntimeError(
            f"produced {len(delivered)}/{sent} page views to {topic} "
            f"({remaining} unacknowledged); errors: {errors[:5]}"
        )
    return delivered


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="clickstream")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip", type=int, default=0, help="start at this event of the stream")
    parser.add_argument("--partitions", type=int, default=3, help="used if the topic is new")
    args = parser.parse_args(argv)
    ensure_topic(args.bootstrap_server, args.topic, args.partitions)
    views = generate_page_views(args.count, seed=args.seed, skip=args.skip)
    delivered = produce_page_views(args.bootstrap_server, args.topic, views)
    per_partition: dict[int, int] = {}
    for record in delivered:
        per_partition[record.partition] = per_partition.get(record.partition, 0) + 1
    print(
        f"produced {len(delivered)} page views (seq {args.skip}..{args.skip + args.count - 1}) "
        f"to {args.topic}; per partition: {dict(sorted(per_partition.items()))}"
    )


if __name__ == "__main__":
    main()
