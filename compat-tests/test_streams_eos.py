"""Kafka Streams with ``processing.guarantee=exactly_once_v2`` (issue 14): the reference Kafka
4.0's own ``WordCountDemo``, killed with SIGKILL mid-stream and restarted, must still count
every word exactly once.

With the record cache off (``statestore.cache.max.bytes=0``) WordCount emits one update per
word occurrence, so under exactly-once the committed output of a word is exactly the sequence
1, 2, ..., N: a record processed twice would show as a repeated count, a lost one as a gap.
A read_committed consumer checks that sequence for every word, across a kill -9 that lands
while transactions are open: the restarted instance must abort the open transaction (its
records never become visible), restore its store from the changelog as of the last commit,
and continue from the committed input offsets.

By default the test starts its own ``kafkette serve`` (like ``test_streams_connect.py``);
``--bootstrap HOST:PORT`` (or ``KAFKETTE_BOOTSTRAP``) runs it against a broker already
running, e.g. the reference Kafka 4.0 (``kafka-ref start 39092``): the demo's fixed topics are
then deleted and recreated first and the application id is unique per run. Without Java or
the reference distribution the test skips with the reason.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_streams_connect as streams_ci
from compat_lib import broker_process
from test_streams_connect import (
    INPUT,
    OUTPUT,
    STREAMS_LOG4J,
    Jvms,
    lines_of,
    produce_lines,
    wait_until,
)

# The fixtures of test_streams_connect.py, shared: the reference's KAFKA_HOME (skips without
# Java or the reference), a fresh kafkette with a fast cleaner, JVMs killed in teardown.
kafka_home = streams_ci.kafka_home
kafkette = streams_ci.kafkette
jvms = streams_ci.jvms

DEMO = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
FIRST_LINES, SECOND_LINES = 2000, 8000


@pytest.fixture
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """The broker: ``--bootstrap``/``KAFKETTE_BOOTSTRAP`` if given, else a fresh kafkette."""
    given = request.config.getoption("--bootstrap") or broker_process.env_bootstrap()
    if given:
        try:
            broker_process.check_reachable(given)
        except broker_process.BrokerUnavailable as exc:
            pytest.fail(str(exc), pytrace=False)
        yield given
    else:
        yield request.getfixturevalue("kafkette")[0]


def fresh_topics(bootstrap: str, topics: tuple[str, ...]) -> None:
    """Delete ``topics`` if present (an earlier run on the same broker), then create them
    with one partition each, retrying while a deletion is still in progress."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    present = set(admin.list_topics(timeout=15).topics) & set(topics)
    if present:
        for future in admin.delete_topics(list(present)).values():
            future.result(timeout=15)
    deadline = time.monotonic() + 30
    for topic in topics:
        while True:
            try:
                admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
                break
            except KafkaException as exc:
                if time.monotonic() > deadline or "ALREADY_EXISTS" not in str(exc):
                    raise
                time.sleep(0.5)


class CountSequences:
    """Reads the output topic from the start at one isolation level, keeping every count
    emitted per word, in order."""

    def __init__(self, bootstrap: str, isolation: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"eos-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": isolation,
            }
        )
        self.consumer.assign([TopicPartition(OUTPUT, 0, 0)])
        self.seen: dict[str, list[int]] = {}
        self.records = 0

    def poll(self) -> dict[str, list[int]]:
        for message in self.consumer.consume(10000, timeout=0.5):
            if message.error() is None:
                self.records += 1
                count = int.from_bytes(message.value(), "big", signed=True)
                self.seen.setdefault(message.key().decode(), []).append(count)
        return self.seen

    def end_offset(self) -> int:
        """ListOffsets latest at this reader's isolation level: the last stable offset for
        read_committed, the high watermark for read_uncommitted."""
        from confluent_kafka import TopicPartition

        return self.consumer.get_watermark_offsets(
            TopicPartition(OUTPUT, 0), timeout=15, cached=False
        )[1]

    def latest(self) -> dict[str, int]:
        return {word: counts[-1] for word, counts in self.poll().items()}

    def close(self) -> None:
        self.consumer.close()


def produce_paced(
    bootstrap: str, lines: list[str], chunks: int = 20, pause_s: float = 0.25
) -> None:
    """``lines`` in ``chunks`` acknowledged pieces, ``pause_s`` apart."""
    size = max(1, len(lines) // chunks)
    for start in range(0, len(lines), size):
        produce_lines(bootstrap, lines[start : start + size])
        time.sleep(pause_s)


def test_streams_wordcount_exactly_once_across_kill(
    bootstrap: str, jvms: Jvms, tmp_path: Path
) -> None:
    app_id = f"eos-wordcount-{uuid.uuid4().hex[:8]}"
    props = tmp_path / "streams.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"application.id={app_id}\n"
        "processing.guarantee=exactly_once_v2\n"
        "dsl.store.suppliers.class=org.apache.kafka.streams.state."
        "BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers\n"
        # Long transactions, so that the kill below lands inside one.
        "commit.interval.ms=1000\n"
        f"state.dir={tmp_path / 'state'}\n"
        "statestore.cache.max.bytes=0\n"
        # The killed member never leaves the group: keep its session short (broker minimum).
        "session.timeout.ms=6000\n"
        "heartbeat.interval.ms=1500\n"
    )
    log4j = tmp_path / "streams-log4j2.yaml"
    log4j.write_text(STREAMS_LOG4J)
    streams_env = {"KAFKA_LOG4J_OPTS": f"-Dlog4j2.configurationFile={log4j}"}
    fresh_topics(bootstrap, (INPUT, OUTPUT))
    first, second = lines_of(21, FIRST_LINES), lines_of(22, SECOND_LINES)
    expected_first = Counter(w for line in first for w in line.split())
    expected_all = expected_first + Counter(w for line in second for w in line.split())
    produce_lines(bootstrap, first)

    committed = CountSequences(bootstrap, "read_committed")
    uncommitted = CountSequences(bootstrap, "read_uncommitted")
    try:
        app = jvms.start("streams", "kafka-run-class.sh", DEMO, str(props), env=streams_env)
        wait_until(
            "exactly-once WordCountDemo's counts equal Python's",
            lambda: jvms.alive(app, "streams") and committed.latest() == dict(expected_first),
            timeout_s=120,
        )
        # Kill -9 while the second batch is being processed: open transactions are left
        # behind (records written, no marker) and must be aborted, never read. The batch
        # arrives in paced chunks, so its processing spans several commit intervals (one
        # burst could be counted in one transaction, leaving no moment that is both part
        # committed and inside an open transaction).
        feeder = threading.Thread(
            target=produce_paced, args=(bootstrap, second), name="second-batch", daemon=True
        )
        feeder.start()

        def mid_transaction() -> bool:
            # Part of the second batch committed, and an open transaction holds records:
            # the last stable offset (ListOffsets latest, read_committed) is below the high
            # watermark.
            done = sum(committed.latest().values()) > sum(expected_first.values())
            return done and committed.end_offset() < uncommitted.end_offset()

        wait_until(
            "the app is inside a transaction, part of the second batch committed",
            lambda: jvms.alive(app, "streams") and mid_transaction(),
            timeout_s=60,
            every_s=0.05,
        )
        os.killpg(app.pid, signal.SIGKILL)  # no SIGTERM: Streams would close cleanly
        app.wait(10)
        # Informational: a kill that landed while the commit was completing leaves nothing
        # open (the coordinator finishes a prepared commit), which is exactly-once too.
        print(f"after the kill: LSO {committed.end_offset()}, HW {uncommitted.end_offset()}")
        feeder.join(60)
        assert not feeder.is_alive(), "the second batch was not all produced within 60 s"
        app = jvms.start("restarted", "kafka-run-class.sh", DEMO, str(props), env=streams_env)
        wait_until(
            "after the kill and restart, the counts equal Python's for all lines",
            lambda: jvms.alive(app, "restarted") and committed.latest() == dict(expected_all),
            timeout_s=180,
        )
        jvms.stop(app)
        committed.poll()
        wrong = {
            word: counts
            for word, counts in committed.seen.items()
            if counts != list(range(1, expected_all[word] + 1))
        }
        assert not wrong, (
            "read_committed output is not each word's counts 1..N exactly once: "
            + "; ".join(f"{w}: {c[:8]}...{c[-4:]} ({len(c)} updates, want "
                        f"{expected_all[w]})" for w, c in sorted(wrong.items())[:3])
        )
        assert committed.records == sum(expected_all.values())

        def read_all() -> bool:
            before = uncommitted.records
            uncommitted.poll()
            return uncommitted.records >= committed.records and uncommitted.records == before

        wait_until("a read_uncommitted consumer reads the whole output", read_all, 60, 0.5)
        aborted = uncommitted.records - committed.records
        print(
            f"committed output records: {committed.records}; read_uncommitted sees "
            f"{uncommitted.records} (aborted, left open by the kill: {aborted})"
        )
    except BaseException:
        print(f"--- streams log tail ---\n{jvms.tail('streams')}")
        print(f"--- restarted streams log tail ---\n{jvms.tail('restarted')}")
        raise
    finally:
        committed.close()
        uncommitted.close()
