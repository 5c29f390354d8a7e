"""Kafka Streams and Kafka Connect (the reference Kafka 4.0's own jars) on kafkette (issue 13).

Both need compacted topics, so this is the end-to-end check of the log cleaner:

* ``test_streams_wordcount_restores_from_compacted_changelog``: Kafka Streams' ``WordCountDemo``
  (in-memory stores; changelog with 64 KiB segments and ``min.cleanable.dirty.ratio=0.01`` so
  the cleaner really compacts it) counts exactly what Python counts; the changelog was created
  ``cleanup.policy=compact`` and was cleaned; then the app restarts with its state dir deleted,
  restores from the compacted changelog, counts more lines, and the totals are still exact
  (without the restore the counts of the first lines would be missing).
* ``test_connect_distributed_filestream``: Kafka Connect in distributed mode (it refuses to start
  unless its config/offset/status topics are compacted) moves a file through a topic with the
  FileStream source and sink, byte for byte.

Each test starts its own ``kafkette serve`` (with a fast cleaner backoff) and JVMs in their own
process groups, every wait has a deadline, and teardown kills the groups. The reference is found
at ``$KAFKETTE_KAFKA_REF`` or ``../shared/reference-kafka`` beside the repo; without it, or
without Java, the tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from compat_lib import broker_process

REPO = Path(__file__).resolve().parents[1]
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "0", "log.cleaner.backoff.ms": "500"}
JVM_ENV = {"KAFKA_HEAP_OPTS": "-Xmx512m"}
INPUT, OUTPUT = "streams-plaintext-input", "streams-wordcount-output"
APP_ID = "ci-wordcount"
CHANGELOG = f"{APP_ID}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog"
WORDS = [f"w{i}" for i in range(40)]
# Root at WARN like Kafka's tools-log4j2.yaml, but the changelog reader says what it restored.
STREAMS_LOG4J = """\
Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDERR
    Logger:
      - name: org.apache.kafka.streams.processor.internals.StoreChangelogReader
        level: INFO
"""
RESTORED = re.compile(
    r"Finished restoring changelog (\S+) to store \S+ with a total number of (\d+) records"
)


def _reference_script() -> Path:
    """``kafka-ref``: from ``$KAFKETTE_KAFKA_REF`` (its dir or the script), else the
    ``shared/reference-kafka`` checked out beside the repo (as in CI)."""
    given = os.environ.get("KAFKETTE_KAFKA_REF")
    base = Path(given) if given else REPO.parent / "shared" / "reference-kafka"
    return base if base.name == "kafka-ref" else base / "kafka-ref"


@pytest.fixture(scope="module")
def kafka_home() -> Path:
    """KAFKA_HOME of the reference Kafka 4.0 (``kafka-ref home`` extracts it on first use)."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed (Kafka Streams/Connect run on the JVM)")
    script = _reference_script()
    if not script.is_file():
        pytest.skip(
            f"reference Kafka not found at {script}: "
            "set KAFKETTE_KAFKA_REF to the reference-kafka dir"
        )
    done = subprocess.run(
        [str(script), "home"], capture_output=True, text=True, timeout=180, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"kafka-ref home failed: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip())


@pytest.fixture
def kafkette(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(bootstrap, data dir) of a fresh kafkette whose cleaner runs every 500 ms."""
    data = tmp_path / "data"
    data.mkdir()
    try:
        proc = broker_process.start_kafkette(data, BROKER_CONFIGS, tmp_path / "kafkette.log")
    except broker_process.BrokerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield proc.bootstrap, data
    finally:
        proc.stop()


class Jvms:
    """JVMs started in their own sessions; ``stop`` ends a whole process group."""

    def __init__(self, home: Path, logs: Path) -> None:
        self.home, self.logs = home, logs
        self.procs: list[subprocess.Popen] = []

    def start(
        self, name: str, tool: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        env = {**os.environ, **JVM_ENV, "LOG_DIR": str(self.logs / "jvm-logs"), **(env or {})}
        with open(self.logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                [str(self.home / "bin" / tool), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen, grace_s: float = 20.0) -> None:
        """SIGTERM the group (Streams closes cleanly on it), SIGKILL it after ``grace_s``."""
        start = time.monotonic()
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError):  # stragglers of the group
            os.killpg(proc.pid, signal.SIGKILL)
        print(f"stopped {proc.args[-1]}: {time.monotonic() - start:.1f}s")

    def stop_all(self) -> None:
        for proc in reversed(self.procs):
            self.stop(proc, grace_s=10.0)

    def alive(self, proc: subprocess.Popen, name: str) -> bool:
        """True while ``proc`` runs; fails the test at once (with its log) if it exited."""
        if proc.poll() is not None:
            pytest.fail(f"{name} exited ({proc.returncode}): {self.tail(name)}", pytrace=False)
        return True

    def tail(self, name: str, chars: int = 1500) -> str:
        try:
            return (self.logs / f"{name}.log").read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


@pytest.fixture
def jvms(kafka_home: Path, tmp_path: Path) -> Iterator[Jvms]:
    started = Jvms(kafka_home, tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


def wait_until(what: str, check: Callable[[], object], timeout_s: float, every_s: float = 1.0):
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after the deadline.
    Prints how long it took (pytest shows it with the output of a failing test)."""
    start = time.monotonic()
    deadline = start + timeout_s
    while True:
        result = check()
        if result:
            print(f"{what}: {time.monotonic() - start:.1f}s")
            return result
        if time.monotonic() >= deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f}s", pytrace=False)
        time.sleep(every_s)


def lines_of(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(count)]


def produce_lines(bootstrap: str, lines: list[str]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for line in lines:
        producer.produce(INPUT, value=line.encode())
        producer.poll(0)
    assert producer.flush(30) == 0, "input lines not all acknowledged"
    del producer  # destroyed now, not when the broker is already gone


class LatestCounts:
    """Reads the output topic from the start and keeps the latest count per word."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "ci-wordcount-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        self.consumer.assign([TopicPartition(OUTPUT, 0, 0)])
        self.latest: dict[str, int] = {}

    def poll(self) -> dict[str, int]:
        for message in self.consumer.consume(10000, timeout=0.5):
            if message.error() is None:
                (count,) = struct.unpack(">q", message.value())
                self.latest[message.key().decode()] = count
        return self.latest

    def close(self) -> None:
        self.consumer.close()


def topic_config(bootstrap: str, topic: str, name: str) -> str | None:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    entry = entries.get(name)
    return None if entry is None else entry.value


def readable_records(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records a consumer reads from the start, the partition's end offset)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "ci-changelog-reader",
         "enable.auto.commit": False}
    )
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=15)
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen, last = 0, -1
        deadline = time.monotonic() + 30
        while last < end - 1 and time.monotonic() < deadline:
            for message in consumer.consume(10000, timeout=0.5):
                if message.error() is None:
                    seen += 1
                    last = message.offset()
        assert last >= end - 1, f"{topic}: read up to offset {last}, end offset {end}"
        return seen, end
    finally:
        consumer.close()


def test_streams_wordcount_restores_from_compacted_changelog(
    kafkette: tuple[str, Path], jvms: Jvms, tmp_path: Path
) -> None:
    bootstrap, data = kafkette
    state = tmp_path / "state"
    props = tmp_path / "streams.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"application.id={APP_ID}\n"
        "dsl.store.suppliers.class=org.apache.kafka.streams.state."
        "BuiltInDslStoreSuppliers$InMemoryDslStoreSuppliers\n"
        "commit.interval.ms=200\n"
        f"state.dir={state}\n"
        "topic.segment.bytes=65536\n"
        "topic.min.cleanable.dirty.ratio=0.01\n"
        "statestore.cache.max.bytes=0\n"
        # Streams' members do not leave the group on close: the restarted app waits for the
        # old member's session to expire (45 s by default), so keep it at the broker minimum.
        "session.timeout.ms=6000\n"
        "heartbeat.interval.ms=1500\n"
    )
    log4j = tmp_path / "streams-log4j2.yaml"
    log4j.write_text(STREAMS_LOG4J)
    streams_env = {"KAFKA_LOG4J_OPTS": f"-Dlog4j2.configurationFile={log4j}"}
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (INPUT, OUTPUT)]).values():
        future.result(timeout=15)
    first, second = lines_of(7, 6000), lines_of(8, 300)
    expected_first = Counter(w for line in first for w in line.split())
    expected_all = expected_first + Counter(w for line in second for w in line.split())
    assert set(expected_first) == set(expected_all)  # the restore check relies on the overlap
    produce_lines(bootstrap, first)

    demo = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
    reader = LatestCounts(bootstrap)
    try:
        app = jvms.start("streams", "kafka-run-class.sh", demo, str(props), env=streams_env)
        wait_until(
            "WordCountDemo's counts equal Python's",
            lambda: jvms.alive(app, "streams") and reader.poll() == dict(expected_first),
            timeout_s=90,
        )
        assert topic_config(bootstrap, CHANGELOG, "cleanup.policy") == "compact"
        checkpoint = data / "cleaner-offset-checkpoint"
        wait_until(
            "the cleaner cleans the changelog (cleaner-offset-checkpoint names it)",
            lambda: checkpoint.exists() and f"{CHANGELOG} 0" in checkpoint.read_text(),
            timeout_s=40,
        )
        jvms.stop(app)
        kept, end = readable_records(bootstrap, CHANGELOG)
        assert kept < end, f"changelog not compacted: {kept} records readable of {end}"

        # In-memory stores keep nothing on disk but Streams' bookkeeping; deleting the state
        # dir anyway rules out any local shortcut: the restart must restore from the changelog.
        shutil.rmtree(state, ignore_errors=True)
        produce_lines(bootstrap, second)
        app = jvms.start("restarted", "kafka-run-class.sh", demo, str(props), env=streams_env)
        wait_until(
            "after the restore, the counts equal Python's for all lines",
            lambda: jvms.alive(app, "restarted") and reader.poll() == dict(expected_all),
            timeout_s=90,
        )
        jvms.stop(app)
        restored = {
            changelog: int(records)
            for changelog, records in RESTORED.findall(jvms.tail("restarted", chars=10**7))
        }
        assert restored.get(f"{CHANGELOG}-0", 0) > 0, f"no restore from the changelog: {restored}"
        assert restored[f"{CHANGELOG}-0"] <= kept, (
            f"restored {restored[f'{CHANGELOG}-0']} records, more than the {kept} left "
            "after compaction"
        )
    except BaseException:
        print(f"--- streams log tail ---\n{jvms.tail('streams')}")
        print(f"--- restarted streams log tail ---\n{jvms.tail('restarted')}")
        print(f"--- counts read: {dict(sorted(reader.latest.items()))}")
        raise
    finally:
        reader.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rest(url: str, body: dict | None = None) -> object:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read() or b"null")


def answers(url: str) -> bool:
    try:
        rest(url)
    except (OSError, urllib.error.URLError, ValueError):
        return False
    return True


def test_connect_distributed_filestream(
    kafkette: tuple[str, Path], jvms: Jvms, kafka_home: Path, tmp_path: Path
) -> None:
    bootstrap, _ = kafkette
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    shipped = (kafka_home / "config" / "connect-distributed.properties").read_text()
    replaced = ("bootstrap.servers=", "plugin.path=", "#plugin.path=", "listeners=")
    kept = [line for line in shipped.splitlines() if not line.startswith(replaced)]
    props = tmp_path / "connect.properties"
    props.write_text(
        "\n".join(kept)
        + f"\nbootstrap.servers={bootstrap}\n"
        + f"plugin.path={kafka_home / 'libs' / 'connect-file-4.0.0.jar'}\n"
        + f"listeners=HTTP://127.0.0.1:{port}\n"
    )
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(b"".join(b"line-%d\n" % i for i in range(1, 501)))
    connect = jvms.start("connect", "connect-distributed.sh", str(props))
    try:
        wait_until(
            "Connect's REST API answers",
            lambda: jvms.alive(connect, "connect") and answers(base + "/"),
            timeout_s=90,
        )
        for internal in ("connect-configs", "connect-offsets", "connect-status"):
            assert topic_config(bootstrap, internal, "cleanup.policy") == "compact", internal
        rest(base + "/connectors", {"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": str(source), "topic": "connect-test"}})
        rest(base + "/connectors", {"name": "sink", "config": {
            "connector.class": "FileStreamSink", "file": str(sink), "topics": "connect-test"}})
        wait_until(
            "the sink file holds all 500 lines",
            lambda: sink.exists() and sink.read_bytes().count(b"\n") >= 500,
            timeout_s=60,
        )
        assert sink.read_bytes() == source.read_bytes()
    except BaseException:
        print(f"--- connect log tail ---\n{jvms.tail('connect')}")
        raise
