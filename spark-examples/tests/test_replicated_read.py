"""Spark's streaming Kafka source on a replicated topic across a leader change (issue 15).

Three kafkette brokers on a real ZooKeeper, a topic with replication factor 3 and
``min.insync.replicas=2``, records written with ``acks=all``. One streaming query reads a first
micro-batch; then the leader of partition 0 is killed with SIGKILL, ZooKeeper names a new leader,
more records are written, and the same query (same cached Kafka consumers, which must find the
new leader on their own) reads on. Spark must have seen every acknowledged record exactly once,
at the partition and offset the producer was told: a leader change neither loses nor repeats
anything, and offsets stay those of the old leader.

The cluster runs as subprocesses here (``tests/cluster/conftest.py`` cannot be imported from
this suite): ZooKeeper from the installed package through
``kafkette.broker.cluster.zookeeper_server`` (skip with the reason when java or ZooKeeper is
missing), then three ``python -m kafkette serve`` with broker ids 1..3. Every wait is bounded.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed: pip install 'kafkette[spark]'")

from streaming_page_counts import read_clickstream

from kafkette.broker.cluster.zookeeper_server import (
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    find_zookeeper,
    free_port,
)

HOST = "127.0.0.1"
BROKERS = 3
PARTITIONS = 3
READY_LINE = re.compile(r"^kafkette ready on (\S+)$")
# A killed broker's registration vanishes after this; long enough for a loaded machine.
SESSION_TIMEOUT_MS = 6000
WAIT_SECONDS = 45.0
# kafka-clients' admin (Spark's offset reader) pins a listOffsets call to the leader its lookup
# named; once that broker is killed and leaves the metadata, the call finds no node and waits
# out default.api.timeout.ms (60 s) before Spark retries with a new admin client. Apache Kafka
# 4.0 stalls the same 60 s in the same scenario (kafka-clients 3.9.0, a 3-node KRaft cluster,
# its leader killed): client behaviour, so the test only shortens the client's deadline (above
# the 6 s session and the election; request.timeout.ms may not exceed it).
CLIENT_TIMEOUTS = {"default.api.timeout.ms": "15000", "request.timeout.ms": "10000"}


class ReplicatedCluster:
    """Three ``kafkette serve`` processes on one ZooKeeper chroot; ids 1..3."""

    def __init__(self, zookeeper: ZooKeeperServer, root: Path) -> None:
        self.zookeeper_connect = f"{zookeeper.connect_string}/kafkette-spark-{uuid.uuid4().hex[:8]}"
        self.root = root
        self.ports = {broker_id: free_port(HOST) for broker_id in range(1, BROKERS + 1)}
        self.processes: dict[int, subprocess.Popen[str]] = {}
        self._zk = None

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{port}" for port in self.ports.values())

    def start(self) -> None:
        ready = {broker_id: threading.Event() for broker_id in self.ports}
        for broker_id, port in self.ports.items():
            configs = {
                "broker.id": broker_id,
                "zookeeper.connect": self.zookeeper_connect,
                "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS,
                "offsets.topic.replication.factor": BROKERS,
                "transaction.state.log.replication.factor": BROKERS,
                "transaction.state.log.min.isr": 2,
            }
            command = [sys.executable, "-m", "kafkette", "serve", "--listen", f"{HOST}:{port}",
                       "--data-dir", str(self.root / f"broker-{broker_id}")]
            for key, value in configs.items():
                command += ["--config", f"{key}={value}"]
            with self._log_path(broker_id).open("w") as log:
                process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log,
                                           stdin=subprocess.DEVNULL, text=True)
            self.processes[broker_id] = process
            threading.Thread(target=_pump, args=(process, ready[broker_id]), daemon=True).start()
        deadline = time.monotonic() + WAIT_SECONDS
        for broker_id, event in ready.items():
            if not event.wait(max(0.0, deadline - time.monotonic())):
                raise AssertionError(
                    f"broker {broker_id} did not print its ready line\n{self.logs()}"
                )

    def create_topic(self, topic: str) -> None:
        """RF 3, ``min.insync.replicas=2``; retried while a broker does not yet see all three
        (INVALID_REPLICATION_FACTOR), then until every partition has a leader and a full ISR."""
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        new = NewTopic(topic, PARTITIONS, BROKERS, config={"min.insync.replicas": "2"})
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            try:
                admin.create_topics([new])[topic].result(15)
                break
            except Exception as exc:  # KafkaException: the cluster is still forming
                if time.monotonic() > deadline:
                    raise AssertionError(f"creating {topic}: {exc}\n{self.logs()}") from exc
                time.sleep(0.5)
        for partition in range(PARTITIONS):
            self._wait_state(
                topic, partition, lambda s: s["leader"] > 0 and len(s["isr"]) == BROKERS
            )

    def leader(self, topic: str, partition: int) -> int:
        return int(self._wait_state(topic, partition, lambda s: s["leader"] > 0)["leader"])

    def wait_new_leader(self, topic: str, partition: int, old: int) -> dict:
        """The state znode once the controller elected a leader other than ``old``."""
        return self._wait_state(topic, partition, lambda s: s["leader"] not in (old, -1))

    def kill(self, broker_id: int) -> None:
        process = self.processes[broker_id]
        process.kill()  # SIGKILL: no controlled shutdown, the leader simply vanishes
        process.wait(30)

    def _wait_state(self, topic: str, partition: int, good) -> dict:
        from kazoo.exceptions import NoNodeError

        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        deadline = time.monotonic() + WAIT_SECONDS
        state = None
        while time.monotonic() < deadline:
            try:
                state = json.loads(self._kazoo().get(path)[0])
            except NoNodeError:
                state = None
            if state is not None and good(state):
                return state
            time.sleep(0.2)
        raise AssertionError(f"{path}: last state {state}\n{self.logs()}")

    def _kazoo(self):
        if self._zk is None:
            from kazoo.client import KazooClient

            self._zk = KazooClient(hosts=self.zookeeper_connect, timeout=10.0)
            self._zk.start(timeout=15)
        return self._zk

    def _log_path(self, broker_id: int) -> Path:
        return self.root / f"broker-{broker_id}.log"

    def logs(self, lines: int = 30) -> str:
        return "\n".join(
            f"--- broker {broker_id}:\n"
            + "\n".join(self._log_path(broker_id).read_text(errors="replace").splitlines()[-lines:])
            for broker_id in self.processes
        )

    def close(self) -> None:
        if self._zk is not None:
            self._zk.stop()
            self._zk.close()
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
            process.wait(30)


def _pump(process: subprocess.Popen[str], ready: threading.Event) -> None:
    for line in process.stdout:
        if READY_LINE.match(line.strip()):
            ready.set()


@pytest.fixture
def replicated_cluster(tmp_path: Path) -> Iterator[ReplicatedCluster]:
    try:
        install = find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))
    zookeeper = ZooKeeperServer(tmp_path / "zookeeper", tick_time_ms=500, fsync=False,
                                own_session=False, install=install)
    zookeeper.start(timeout=60)
    cluster = ReplicatedCluster(zookeeper, tmp_path)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()
        zookeeper.stop()


def _produce(
    bootstrap: str, topic: str, label: str, per_partition: int
) -> list[tuple[int, int, bytes]]:
    """``per_partition`` records to every partition with acks=all (idempotent); returns what the
    producer was acknowledged: ``(partition, offset, value)``."""
    from confluent_kafka import Producer

    acknowledged, errors = [], []

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            acknowledged.append((msg.partition(), msg.offset(), msg.value()))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    for partition in range(PARTITIONS):
        for i in range(per_partition):
            producer.produce(topic, value=f"{label} p{partition} #{i}".encode(),
                             partition=partition, on_delivery=on_delivery)
    assert producer.flush(WAIT_SECONDS) == 0, "records still unacknowledged"
    assert errors == []
    assert len(acknowledged) == PARTITIONS * per_partition
    return acknowledged


def test_stream_reads_exactly_once_across_a_leader_kill(spark, replicated_cluster, tmp_path):
    cluster = replicated_cluster
    topic = f"replicated-read-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic)
    before = _produce(cluster.bootstrap, topic, "before", 40)

    query = (
        # earliest, failOnDataLoss=true
        read_clickstream(spark, cluster.bootstrap, topic=topic, kafka_options=CLIENT_TIMEOUTS)
        .select("partition", "offset", "value")
        .writeStream.format("memory")
        .queryName("replicated_read")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )

    def seen() -> list[tuple[int, int, bytes]]:
        return sorted((r.partition, r.offset, bytes(r.value))
                      for r in spark.table("replicated_read").collect())

    try:
        query.processAllAvailable()
        assert seen() == sorted(before)

        old_leader = cluster.leader(topic, 0)
        cluster.kill(old_leader)
        state = cluster.wait_new_leader(topic, 0, old_leader)
        after = _produce(cluster.bootstrap, topic, "after", 40)
        query.processAllAvailable()

        assert seen() == sorted(before + after), f"partition 0 state after the kill: {state}"
    finally:
        query.stop()
