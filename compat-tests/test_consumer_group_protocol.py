"""KIP-848 with the Java 4.0 client: ``group.protocol=consumer`` consumers share a topic's
partitions, rebalance when one leaves, and commit; a static member's restart keeps its
partitions. Runs against the suite's broker (kafkette, or any broker given with
``--bootstrap``, e.g. the reference Kafka 4.0 to check the test itself).

The client is the reference distribution's own kafka-clients 4.0 jar
(``kafka-ref home``/libs), run by ``java/Consume848.java`` as a single source file:
skipped without Java or the reference distribution.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker import group_helpers as helpers
from tests.jvm_options import SHORT_RUN_JVM

HERE = Path(__file__).resolve().parent
KAFKA_REF = Path("/work/shared/reference-kafka/kafka-ref")
JAR_PREFIXES = (
    "kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-",
    "opentelemetry-proto-", "protobuf-java-",  # client telemetry (KIP-714) classes
)
PARTITIONS = 4
WAIT = 60.0  # Kafka's default 5 s heartbeat interval: a rebalance takes a few of them




def _classpath() -> str:
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip("no java/javac")
    if not KAFKA_REF.exists():
        pytest.skip("no reference Kafka distribution (kafka-ref)")
    home = subprocess.run([str(KAFKA_REF), "home"], capture_output=True, text=True, timeout=30)
    libs = Path(home.stdout.strip()) / "libs"
    jars = sorted(j for j in libs.glob("*.jar") if j.name.startswith(JAR_PREFIXES))
    if not any(j.name.startswith("kafka-clients-4.") for j in jars):
        pytest.skip(f"no kafka-clients 4.x jar under {libs}")
    return ":".join(str(j) for j in jars)


@pytest.fixture(scope="module")
def classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The jars plus ``Consume848`` compiled once (a source-file launch compiles per JVM)."""
    jars = _classpath()
    out = tmp_path_factory.mktemp("j848-classes")
    subprocess.run(
        ["javac", "-cp", jars, "-d", str(out), str(HERE / "java" / "Consume848.java")],
        check=True, timeout=120,
    )
    return f"{out}:{jars}"


class JavaConsumers:
    def __init__(self, bootstrap: str, topic: str, group: str, classpath: str, logs: Path):
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.classpath, self.logs = classpath, logs
        self.running: list = []

    def start(self, name: str, instance_id: str = ""):
        stderr = (self.logs / f"java-{name}.log").open("ab")
        proc = subprocess.Popen(
            ["java", *SHORT_RUN_JVM, "-Xshare:auto", "-cp", self.classpath, "Consume848",
             self.bootstrap, self.group, self.topic, instance_id],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )
        stderr.close()
        consumer = helpers.ConsumerProcess(name, {}, proc)
        threading.Thread(target=consumer._read, daemon=True).start()
        self.running.append(consumer)
        return consumer

    def describe(self) -> str:
        return "; ".join(c.describe() for c in self.running)


# kafkette started by this module hands out a 500 ms heartbeat interval, so rebalances
# settle in about a second instead of Kafka's default 5 s heartbeats.
FAST_GROUPS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "offsets.topic.num.partitions": "3",
}


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The suite's ``--bootstrap`` broker when one is given (the reference, say), else a
    kafkette of this module's own with fast heartbeats."""
    from compat_lib import broker_process

    given = request.config.getoption("--bootstrap") or broker_process.env_bootstrap()
    if given:
        yield given
        return
    base = tmp_path_factory.mktemp("j848")
    (base / "data").mkdir()
    own = helpers.GroupBroker(base / "data", base, FAST_GROUPS).start()
    try:
        yield own.bootstrap
    finally:
        own.terminate()


@pytest.fixture
def java(broker: str, classpath: str, tmp_path: Path) -> Iterator[JavaConsumers]:
    topic = "j848-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": broker})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    made = JavaConsumers(broker, topic, "j848-" + uuid.uuid4().hex[:6], classpath, tmp_path)
    try:
        yield made
    finally:
        for consumer in made.running:
            consumer.kill()


def _split(a, b) -> bool:
    pa, pb = a.partitions(), b.partitions()
    return len(pa) == len(pb) == PARTITIONS // 2 and sorted(pa + pb) == list(range(PARTITIONS))


def test_java_consumers_share_rebalance_and_commit(java: JavaConsumers) -> None:
    values = [f"j{i}" for i in range(20)]
    producer = Producer({"bootstrap.servers": java.bootstrap})
    for i, value in enumerate(values):
        producer.produce(java.topic, value.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    first = java.start("first")
    wait_until = helpers.wait_until
    wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, java.describe)
    second = java.start("second")
    wait_until(lambda: _split(first, second), WAIT, java.describe)
    wait_until(lambda: set(first.values()) | set(second.values()) >= set(values), WAIT,
               java.describe)
    second.stop(timeout=WAIT)
    wait_until(lambda: first.partitions() == list(range(PARTITIONS)), WAIT, java.describe)
    first.stop(timeout=WAIT)
    assert not first.errors and not second.errors, (first.errors, second.errors)
    admin = AdminClient({"bootstrap.servers": java.bootstrap})
    request = ConsumerGroupTopicPartitions(
        java.group, [TopicPartition(java.topic, p) for p in range(PARTITIONS)]
    )
    (offsets,) = admin.list_consumer_group_offsets([request]).values()
    committed = {tp.partition: tp.offset for tp in offsets.result(30).topic_partitions}
    assert committed == dict.fromkeys(range(PARTITIONS), len(values) // PARTITIONS)


def test_java_static_member_restart_keeps_its_partitions(java: JavaConsumers) -> None:
    first = java.start("static-a", instance_id="a")
    other = java.start("static-b", instance_id="b")
    helpers.wait_until(lambda: _split(first, other), WAIT, java.describe)
    before = first.partitions()
    first.stop(timeout=WAIT)  # leaves with epoch -2: its partitions wait for it
    again = java.start("static-a2", instance_id="a")
    helpers.wait_until(lambda: again.partitions() == before, WAIT, java.describe)


def test_kafka_consumer_groups_tool_describes_a_consumer_group(broker: str, tmp_path) -> None:
    """Kafka 4.0's own ``kafka-consumer-groups.sh`` lists the group as a Consumer group and
    describes its members' epochs and assignments (ListGroups v5, ConsumerGroupDescribe)."""
    if not KAFKA_REF.exists() or shutil.which("java") is None:
        pytest.skip("no reference Kafka distribution or java")
    topic = "j848-tool-" + uuid.uuid4().hex[:6]
    group = "j848-tool-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": broker})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    consumer = helpers.ConsumerProcess.start(
        "tool", tmp_path, bootstrap=broker, group=group, topic=topic, client="confluent",
        auto_commit=True, session_timeout_ms=0, heartbeat_interval_ms=0,
        max_poll_interval_ms=20000, extra={"group.protocol": "consumer"},
        unset=["session.timeout.ms", "heartbeat.interval.ms"],
    )
    try:
        helpers.wait_until(lambda: consumer.partitions() == [0, 1], WAIT, consumer.describe)
        tool = [str(KAFKA_REF), "bin", "kafka-consumer-groups.sh", "--bootstrap-server", broker]
        listed = subprocess.run([*tool, "--list", "--type"], capture_output=True, text=True,
                                timeout=120)
        assert any(line.split() == [group, "Consumer"] for line in listed.stdout.splitlines()), (
            listed.stdout + listed.stderr)
        described = subprocess.run(
            [*tool, "--describe", "--group", group, "--members", "--verbose"],
            capture_output=True, text=True, timeout=120,
        )
        rows = [line.split() for line in described.stdout.splitlines() if line.startswith(group)]
        assert len(rows) == 1, described.stdout + described.stderr
        # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT ...
        assert rows[0][4] == "2" and rows[0][6] == f"{topic}:0,1", rows
    finally:
        consumer.stop()
