"""Fixtures for the Spark examples' tests: a real kafkette broker, one SparkSession, topics.

The broker is ``python -m kafkette serve`` on 127.0.0.1 port 0 with a temporary data dir. To
run the same tests against another Kafka-compatible broker (e.g. real Kafka, for comparison),
set ``KAFKETTE_SPARK_TEST_BOOTSTRAP=host:port``; topics get unique names so reruns don't mix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.jvm_options import SHORT_RUN_JVM

EXAMPLES_DIR = Path(__file__).resolve().parents[1]
if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))  # the examples are scripts, not an installed package

READY_PREFIX = "kafkette ready on "
STARTUP_TIMEOUT = 30.0
PARTITIONS = 3

# Spark's JVMs here (the tests' session and the command-line job each test starts) run
# seconds of small jobs: on the suite's short-run options (tests/jvm_options.py) they take half
# the CPU of Spark's defaults (measured: 155 -> 75 s of CPU for the two streaming pipeline
# tests). spark-submit hands SPARK_SUBMIT_OPTS to the driver JVM; a caller's own setting is kept.
os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join(SHORT_RUN_JVM))


def _wait_for_ready_line(proc: subprocess.Popen, timeout: float) -> str:
    """Return HOST:PORT from the broker's ready line; the rest of stdout is drained."""
    lines: list[str] = []
    ready = threading.Event()

    def pump() -> None:
        for line in proc.stdout:
            if not ready.is_set():
                lines.append(line)
                if line.startswith(READY_PREFIX):
                    ready.set()

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not ready.is_set():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"kafkette did not report ready; stdout so far: {lines!r}")
        ready.wait(0.05)
    return lines[-1][len(READY_PREFIX) :].strip()


@pytest.fixture(scope="session")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``host:port`` of a running broker for the whole test session."""
    external = os.environ.get("KAFKETTE_SPARK_TEST_BOOTSTRAP")
    if external:
        yield external
        return
    data_dir = tmp_path_factory.mktemp("kafkette-data")
    stderr_path = data_dir.parent / "kafkette.stderr"
    command = [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0"]
    command += ["--data-dir", str(data_dir), "--config", f"num.partitions={PARTITIONS}"]
    # The clickstream's events are dated from 2024-01-01, older than Kafka's default time
    # retention (7 days): the broker's retention check, every 5 minutes of this session-long
    # broker, would delete a topic's records mid-test (a job then reads 0 records). Seen on
    # CI: an --available-now job that started after a check had nothing to read.
    command += ["--config", "log.retention.ms=-1"]
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    try:
        try:
            address = _wait_for_ready_line(proc, STARTUP_TIMEOUT)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\nstderr:\n{stderr_path.read_text()[-4000:]}") from None
        yield address
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest):
    """One local[2] SparkSession with the Kafka connector; skips when that is impossible.

    The broker is started from here, after the skip checks, so that teardown stops Spark (and
    its pooled Kafka consumers) before the broker.
    """
    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.skip("pyspark is not installed: pip install 'kafkette[spark]' (pyspark 4.0.x)")
    from spark_session import MissingConnectorError, build_spark_session, resolve_connector

    try:
        resolve_connector()
    except MissingConnectorError as exc:
        if os.environ.get("KAFKETTE_SPARK_JARS"):  # named on purpose (as CI does): no skip
            pytest.fail(f"KAFKETTE_SPARK_JARS is set but unusable: {exc}", pytrace=False)
        pytest.skip(str(exc))
    request.getfixturevalue("bootstrap")
    session = build_spark_session("kafkette-spark-tests")
    yield session
    session.stop()


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Make a topic name unique to this test run: ``<test>-<label>-<random>``."""
    stem = request.node.name.removeprefix("test_").replace("_", "-")[:40]
    run = uuid.uuid4().hex[:8]
    return lambda label="clicks": f"{stem}-{label}-{run}"


@pytest.fixture
def produce_clickstream(bootstrap: str):
    """Create a topic (``PARTITIONS`` partitions) and produce generator events to it.

    Returns the delivery reports, so tests know each record's partition, offset and timestamp.
    """
    from clickstream_generator import ensure_topic, generate_page_views, produce_page_views

    def produce(topic: str, count: int, seed: int = 7, skip: int = 0):
        ensure_topic(bootstrap, topic, PARTITIONS)
        return produce_page_views(bootstrap, topic, generate_page_views(count, seed, skip))

    return produce


@pytest.fixture
def read_topic(bootstrap: str):
    """Read every record of a topic with a plain Kafka client (independent of Spark).

    Returns ``(partition, offset, key, value)`` tuples.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    def read(topic: str, timeout: float = 30.0) -> list[tuple[int, int, bytes, bytes]]:
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
             "enable.auto.commit": False}
        )
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            ends = {}
            for p in partitions:
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                ends[p] = high
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
            records = []
            positions = {p: 0 for p in partitions}
            deadline = time.monotonic() + timeout
            while any(positions[p] < ends[p] for p in partitions):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"read {len(records)} records of {topic}, ends {ends}")
                msg = consumer.poll(0.5)
                if msg is None or msg.error():
                    continue
                records.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
                positions[msg.partition()] = msg.offset() + 1
            return records
        finally:
            consumer.close()

    return read
