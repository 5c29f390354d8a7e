"""Kafka Streams and Kafka Connect (the reference Kafka 4.0's own jars) on kafkette (issue 13).

Both need compacted topics, so this is the end-to-end check of the log cleaner:

* ``test_streams_wordcount_restores_from_compacted_changelog``: Kafka Streams' ``WordCountDemo``
  (in-memory stores; changelog with 64 KiB segments and ``min.cleanable.dirty.ratio=0.01`` so
  the cleaner really compacts it) counts exactly what Python counts; the changelog was created
  ``cleanup.policy=compact`` and was cleaned; then the app restarts with its state dir deleted,
  restores from the compacted changelog, counts more lines, and the totals are still exact
  (without the restore the counts of the first lines would be missing).
* ``test_streams_windowed_count_restores_from_compacted_changelog``: our own
  ``java/streams/WindowedCountApp.java`` (compiled with ``javac`` against the reference's jars)
  counts timestamped records per key in tumbling windows in an in-memory window store, exactly
  as Python counts per (key, window); its changelog was created ``compact,delete`` and was
  cleaned; after a restart with the state dir deleted it restores from the changelog, and more
  records into the still-open windows give exact totals.
* ``test_connect_distributed_filestream``: Kafka Connect in distributed mode (it refuses to start
  unless its config/offset/status topics are compacted) moves a file through a topic with the
  FileStream source and sink, byte for byte.

Each test starts its own ``kafkette serve`` (with a fast cleaner backoff) and JVMs in their own
process groups, every wait has a deadline, and teardown kills the groups. The reference is found
at ``$KAFKETTE_KAFKA_REF`` or ``../shared/reference-kafka`` beside the repo; without it, or
without Java (``javac`` too for the windowed app), the tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
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
from compat_lib.build_lock import build_lock

from bench.harness.raw_wire import free_port
from tests.jvm_options import SHORT_RUN_JVM
from tests.reference_kafka import reference_script

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


@pytest.fixture(scope="module")
def kafka_home() -> Path:
    """KAFKA_HOME of the reference Kafka 4.0 (``kafka-ref home`` extracts it on first use)."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed (Kafka Streams/Connect run on the JVM)")
    script = reference_script()
    if script is None:
        pytest.skip(
            "reference Kafka not found (../shared/reference-kafka): "
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
        self.names: dict[int, str] = {}

    def start(
        self, name: str, tool: str, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen:
        """Run one of the distribution's ``bin/`` scripts (``tool``) with ``args``."""
        return self._spawn(name, [str(self.home / "bin" / tool), *args], env)

    def start_java(
        self, name: str, classpath: str, main: str, *args: str, jvm_opts: tuple[str, ...] = ()
    ) -> subprocess.Popen:
        """Run ``java -cp classpath main args`` (our own apps, compiled at test time)."""
        heap = JVM_ENV["KAFKA_HEAP_OPTS"].split()
        argv = ["java", *heap, *SHORT_RUN_JVM, *jvm_opts, "-cp", classpath, main, *args]
        return self._spawn(name, argv, None)

    def _spawn(
        self, name: str, argv: list[str], env: dict[str, str] | None
    ) -> subprocess.Popen:
        env = {**os.environ, **JVM_ENV, "LOG_DIR": str(self.logs / "jvm-logs"), **(env or {})}
        with open(self.logs / f"{name}.log", "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.procs.append(proc)
        self.names[proc.pid] = name
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
        print(f"stopped {self.names.get(proc.pid, proc.args[-1])}: {time.monotonic() - start:.1f}s")

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


def _exists(bootstrap: str, topic: str) -> bool:
    """Described without error (never a Metadata request for it: that could auto-create it
    with the wrong cleanup.policy before Connect does)."""
    from confluent_kafka import KafkaException

    try:
        topic_config(bootstrap, topic, "cleanup.policy")
    except KafkaException:
        return False
    return True


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


def streams_properties(tmp_path: Path, bootstrap: str, app_id: str, state: Path) -> Path:
    """A Streams config file: in-memory stores, fast commits, no record cache (every update
    reaches the changelog and the output), and changelogs with 64 KiB segments and
    ``min.cleanable.dirty.ratio=0.01`` so the cleaner really compacts them."""
    props = tmp_path / f"{app_id}.properties"
    props.write_text(
        f"bootstrap.servers={bootstrap}\n"
        f"application.id={app_id}\n"
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
    return props


def log4j_option(tmp_path: Path) -> str:
    """``-Dlog4j2.configurationFile=`` of STREAMS_LOG4J, written under ``tmp_path``."""
    log4j = tmp_path / "streams-log4j2.yaml"
    log4j.write_text(STREAMS_LOG4J)
    return f"-Dlog4j2.configurationFile={log4j}"


def restored_records(log_text: str) -> dict[str, int]:
    """{changelog partition: records restored} from StoreChangelogReader's log lines."""
    return {changelog: int(records) for changelog, records in RESTORED.findall(log_text)}


def test_streams_wordcount_restores_from_compacted_changelog(
    kafkette: tuple[str, Path], jvms: Jvms, tmp_path: Path
) -> None:
    bootstrap, data = kafkette
    state = tmp_path / "state"
    props = streams_properties(tmp_path, bootstrap, APP_ID, state)
    streams_env = {"KAFKA_LOG4J_OPTS": log4j_option(tmp_path)}
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
        restored = restored_records(jvms.tail("restarted", chars=10**7))
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


# The windowed aggregation: our own app (java/streams/WindowedCountApp.java), compiled at test
# time against the reference's jars into the gitignored compat-tests/.build/streams.
STREAMS_SOURCES = REPO / "compat-tests" / "java" / "streams"
STREAMS_BUILD = REPO / "compat-tests" / ".build" / "streams"
WINDOWED_MAIN = "WindowedCountApp"
W_INPUT, W_OUTPUT = "windowed-input", "windowed-counts-output"
W_APP_ID, W_STORE = "ci-windowed", "windowed-counts"
W_CHANGELOG = f"{W_APP_ID}-{W_STORE}-changelog"
WINDOW_MS, GRACE_MS = 60_000, 3_600_000
W_KEYS = [f"k{i:02d}" for i in range(30)]
# Streams keeps a window changelog for the store's retention (window + grace) plus this margin
# (windowstore.changelog.additional.retention.ms, default one day).
W_CHANGELOG_RETENTION_MS = WINDOW_MS + GRACE_MS + 86_400_000


@pytest.fixture(scope="module")
def windowed_app_classpath(kafka_home: Path) -> str:
    """Classpath of WindowedCountApp, compiled (when its source is newer) with ``javac``
    against ``kafka_home/libs``; skips without ``javac``."""
    if shutil.which("javac") is None:
        pytest.skip("javac is not installed (a JDK 17 compiles the windowed Streams app)")
    libs = str(kafka_home / "libs" / "*")  # javac and java expand a trailing /*
    sources = sorted(STREAMS_SOURCES.glob("*.java"))
    stamp = STREAMS_BUILD / f"{WINDOWED_MAIN}.class"
    with build_lock(STREAMS_BUILD):
        if not stamp.exists() or stamp.stat().st_mtime < max(s.stat().st_mtime for s in sources):
            done = subprocess.run(
                ["javac", "-d", str(STREAMS_BUILD), "-cp", libs, *map(str, sources)],
                capture_output=True, text=True, timeout=180, check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"javac failed: {done.stderr.strip()[-1000:]}", pytrace=False)
    return os.pathsep.join([str(STREAMS_BUILD), libs])


def timed_records(seed: int, count: int, base_ms: int, windows: range) -> list[tuple[str, int]]:
    """``count`` (key, timestamp) pairs, timestamps spread over ``windows`` (window numbers
    from ``base_ms``) and shuffled, so records arrive out of order within the grace period."""
    rng = random.Random(seed)
    return [
        (rng.choice(W_KEYS), base_ms + rng.randrange(windows.start * WINDOW_MS,
                                                     windows.stop * WINDOW_MS))
        for _ in range(count)
    ]


def window_counts(records: list[tuple[str, int]]) -> Counter[tuple[str, int]]:
    """Plain Python's answer: records per (key, start of its tumbling window)."""
    return Counter((key, ts - ts % WINDOW_MS) for key, ts in records)


def produce_timed(bootstrap: str, topic: str, records: list[tuple[str, int]]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for key, ts in records:
        producer.produce(topic, key=key.encode(), value=b"x", timestamp=ts)
        producer.poll(0)
    assert producer.flush(30) == 0, "input records not all acknowledged"
    del producer


class LatestWindowCounts:
    """Reads WindowedCountApp's output from the start: the latest count per (key, window
    start), from keys ``key@windowStartMs`` and decimal values."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "ci-windowed-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.assign([TopicPartition(W_OUTPUT, 0, 0)])
        self.latest: dict[tuple[str, int], int] = {}

    def poll(self) -> dict[tuple[str, int], int]:
        for message in self.consumer.consume(10000, timeout=0.5):
            if message.error() is None:
                key, start = message.key().decode().rsplit("@", 1)
                self.latest[(key, int(start))] = int(message.value())
        return self.latest

    def close(self) -> None:
        self.consumer.close()


def test_streams_windowed_count_restores_from_compacted_changelog(
    kafkette: tuple[str, Path], jvms: Jvms, windowed_app_classpath: str, tmp_path: Path
) -> None:
    bootstrap, data = kafkette
    state = tmp_path / "state"
    props = streams_properties(tmp_path, bootstrap, W_APP_ID, state)
    app_args = (str(props), W_INPUT, W_OUTPUT, W_STORE, str(WINDOW_MS), str(GRACE_MS))
    log4j = (log4j_option(tmp_path),)
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1) for t in (W_INPUT, W_OUTPUT)]).values():
        future.result(timeout=15)
    # Recent timestamps: the changelog is also `delete` with a ~1-day retention.ms, measured
    # from the records' timestamps. Stream time, not the clock, decides which windows are open.
    base = (time.time_ns() // 1_000_000 // WINDOW_MS - 10) * WINDOW_MS
    first = timed_records(11, 16000, base, range(0, 6))
    second = timed_records(12, 2000, base, range(3, 8))  # windows 3-5 already hold counts
    expected_first = window_counts(first)
    expected_all = expected_first + window_counts(second)
    reopened = set(expected_first) & set(window_counts(second))
    assert len(reopened) > 50  # the restore check relies on windows counted in both runs
    produce_timed(bootstrap, W_INPUT, first)

    reader = LatestWindowCounts(bootstrap)
    try:
        app = jvms.start_java("windowed", windowed_app_classpath, WINDOWED_MAIN, *app_args,
                              jvm_opts=log4j)
        wait_until(
            "WindowedCountApp's counts per (key, window) equal Python's",
            lambda: jvms.alive(app, "windowed") and reader.poll() == dict(expected_first),
            timeout_s=90,
        )
        assert topic_config(bootstrap, W_CHANGELOG, "cleanup.policy") == "compact,delete"
        assert topic_config(bootstrap, W_CHANGELOG, "retention.ms") == str(
            W_CHANGELOG_RETENTION_MS
        )
        checkpoint = data / "cleaner-offset-checkpoint"
        wait_until(
            "the cleaner cleans the window changelog (cleaner-offset-checkpoint names it)",
            lambda: checkpoint.exists() and f"{W_CHANGELOG} 0" in checkpoint.read_text(),
            timeout_s=40,
        )
        jvms.stop(app)
        kept, end = readable_records(bootstrap, W_CHANGELOG)
        assert kept < end, f"window changelog not compacted: {kept} records readable of {end}"
        print(f"window changelog after compaction: {kept} records readable of {end}")

        # The window store is in memory: after the restart its counts can only come from
        # the changelog, and the records into windows 3-5 must add to the restored counts.
        shutil.rmtree(state, ignore_errors=True)
        produce_timed(bootstrap, W_INPUT, second)
        app = jvms.start_java("windowed-restarted", windowed_app_classpath, WINDOWED_MAIN,
                              *app_args, jvm_opts=log4j)
        wait_until(
            "after the restore, the counts per (key, window) equal Python's for all records",
            lambda: jvms.alive(app, "windowed-restarted")
            and reader.poll() == dict(expected_all),
            timeout_s=90,
        )
        jvms.stop(app)
        restored = restored_records(jvms.tail("windowed-restarted", chars=10**7))
        from_changelog = restored.get(f"{W_CHANGELOG}-0", 0)
        print(f"restored from the window changelog: {from_changelog} records")
        assert from_changelog > 0, f"no restore from the window changelog: {restored}"
        assert from_changelog <= kept, (
            f"restored {from_changelog} records, more than the {kept} left after compaction"
        )
    except BaseException:
        print(f"--- windowed app log tail ---\n{jvms.tail('windowed')}")
        print(f"--- restarted windowed app log tail ---\n{jvms.tail('windowed-restarted')}")
        wrong = {
            k: (reader.latest.get(k), v) for k, v in expected_all.items()
            if reader.latest.get(k) != v
        }
        print(f"--- (key, window): (read, expected in the end), where they differ: {wrong}")
        raise
    finally:
        reader.close()


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
            # Connect's REST server answers before its herder has made the internal topics
            # (seen in CI on a loaded machine): wait, bounded, for each to exist.
            wait_until(f"Connect created {internal}", lambda t=internal: _exists(bootstrap, t),
                       timeout_s=60)  # fmt: skip
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
