"""Replication cost and failover time on a local three-broker kafkette cluster (issue 15).

Run ``python -m bench.replication_bench`` from the repository root (``--records``, default
100,000 records of ``--size`` 1,000 bytes; ``--json``). It starts a ZooKeeper from the installed
package and three ``kafkette serve`` processes (ids 1-3, fresh data dirs, session timeout 6 s),
then measures with one confluent-kafka producer (``linger.ms=5``) on one partition:

- ``rf1-acks1``: a topic with replication factor 1, acks=1 (the single-node baseline);
- ``rf3-acks1``: replication factor 3, acks=1 (the followers fetch, nobody waits for them);
- ``rf3-acks-all``: replication factor 3, ``min.insync.replicas=2``, acks=all, idempotent:
  every answer waits for the high watermark, i.e. for both followers' next fetch;
- ``failover``: under acks=all idempotent load, kill -9 of a leader that is not the controller,
  then the time to the first acknowledgement of a record produced after the kill (dominated by
  ``zookeeper.session.timeout.ms``: the controller elects only once the dead broker's session
  expires), and the records lost (acknowledged but not readable afterwards: must be 0).

Then the same four measurements on Apache Kafka 4.0 as three combined KRaft nodes
(``bench/harness/kafka_kraft_cluster.py``; ``broker.session.timeout.ms`` set to the same 6 s),
when the reference distribution and java are there (``--systems kafkette`` skips it; the reason is
printed when it cannot run). Each system runs alone: the first is stopped before the second starts.

Figures are records/s from the first produce to the last acknowledgement, and seconds. A script,
not a test: figures depend on the machine (two shared cores here: the three brokers, ZooKeeper
and the client compete for them). Results: docs/performance.md, "Cluster".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import free_port
from bench.harness.serve_process import ServeProcess, serve_args
from kafkette.broker.cluster.zookeeper_server import ZooKeeperServer

try:  # run as ``python -m bench.replication_bench``
    from .harness.kafka_kraft_cluster import KafkaKRaftCluster
except ImportError:  # run as a file
    from kafka_kraft_cluster import KafkaKRaftCluster  # type: ignore[no-redef]

# ../shared/reference-kafka beside the checkout (or beside the folder of worktrees).
_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_KAFKA = next(
    (p for p in (_ROOT.parent / "shared" / "reference-kafka",
                 _ROOT.parent.parent / "shared" / "reference-kafka") if p.exists()),
    _ROOT.parent / "shared" / "reference-kafka",
)

SESSION_TIMEOUT_MS = 6000


class LocalCluster:
    def __init__(self, root: Path, brokers: int = 3) -> None:
        self.root = root
        self.zookeeper = ZooKeeperServer(root / "zk", tick_time_ms=500, fsync=False)
        self.ports = {i: free_port() for i in range(1, brokers + 1)}
        self.procs: dict[int, ServeProcess] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for i, p in self.ports.items() if i in self.procs)

    def start(self) -> None:
        self.zookeeper.start(timeout=120)
        connect = self.zookeeper.connect_string + "/bench"
        for broker_id, port in self.ports.items():
            configs = {
                "broker.id": str(broker_id), "zookeeper.connect": connect,
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
            }  # fmt: skip
            args = serve_args(self.root / f"broker-{broker_id}", f"127.0.0.1:{port}", configs)
            self.procs[broker_id] = ServeProcess(args, self.root / f"broker-{broker_id}.log")
        for serve in self.procs.values():
            serve.wait_ready(60)

    def controller(self) -> int:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return admin.describe_cluster(request_timeout=30).result(60).controller.id

    def kill(self, broker_id: int) -> None:
        self.procs.pop(broker_id).kill()

    def stop(self) -> None:
        for serve in self.procs.values():
            serve.kill()
        self.procs.clear()
        self.zookeeper.stop()


def create(bootstrap: str, rf: int, configs: dict[str, str] | None = None) -> str:
    topic = f"bench-rf{rf}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for attempt in range(5):
        try:
            admin.create_topics([NewTopic(topic, 1, rf, config=configs or {})])[topic].result(60)
            break
        except KafkaException as exc:
            # Right after start librdkafka may retire the bootstrap connection the request
            # went out on (_DESTROY_BROKER), or the topic exists from the lost answer.
            if exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                break
            if attempt == 4:
                raise
            time.sleep(1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        part = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
        if part is not None and part.leader >= 0 and len(part.isrs) == rf:
            return topic
        time.sleep(0.2)
    raise RuntimeError(f"{topic}: no leader with a full ISR")


def produce(bootstrap: str, topic: str, records: int, size: int, acks: str) -> float:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
         "enable.idempotence": acks == "all"}
    )
    value = b"x" * size
    failures: list[object] = []

    def delivered(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(120) or failures:
        raise RuntimeError(f"produce failed: {failures[:3]}")
    return records / (time.perf_counter() - started)


def failover(cluster: LocalCluster | KafkaKRaftCluster) -> dict[str, float]:
    """kill -9 of a partition leader that is not the controller (the same case on both
    systems), under acks=all idempotent load paced at about 1,000 records/s: seconds from the
    kill to the first acknowledgement of a record produced after the kill. (A record produced
    before the kill may be acknowledged by the old leader and its delivery report served just
    after the kill, so only records the dead broker never saw count.)"""
    controller = cluster.controller()
    leader = next(i for i in sorted(cluster.procs) if i != controller)
    others = [i for i in sorted(cluster.procs) if i != leader]
    topic = f"bench-failover-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[leader, *others]],
                                  config={"min.insync.replicas": "2"})])[topic].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        part = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
        if part is not None and part.leader == leader and len(part.isrs) == 3:
            break
        time.sleep(0.2)
    else:
        raise RuntimeError(f"{topic}: not led by {leader} with a full ISR")
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
         "linger.ms": 1, "message.timeout.ms": 120000}
    )
    acked: list[tuple[float, bytes]] = []
    sent_at: list[float] = []
    stop = threading.Event()

    def delivered(err: object, msg: object) -> None:
        if err is None:
            acked.append((time.monotonic(), msg.value()))  # type: ignore[attr-defined]

    def load() -> None:
        while not stop.is_set():
            try:
                producer.produce(topic, b"%d" % len(sent_at), partition=0, on_delivery=delivered)
                sent_at.append(time.monotonic())
            except BufferError:
                pass
            producer.poll(0.001)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    while len(acked) < 2000:
        time.sleep(0.05)
    killed_at = time.monotonic()
    cluster.kill(leader)

    def first_after() -> float | None:
        times = [t for t, v in list(acked) if sent_at[int(v)] > killed_at]
        return min(times) if times else None

    deadline = killed_at + 120
    while first_after() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    first = first_after()
    time.sleep(2)
    stop.set()
    thread.join(30)
    producer.flush(120)
    read = consume(cluster.bootstrap, topic)
    lost = {v for _, v in acked} - set(read)
    return {
        "failover_s": (first if first is not None else float("nan")) - killed_at,
        "acked": float(len(acked)),
        "lost": float(len(lost)),
        "duplicates": float(len(read) - len(set(read))),
    }


def consume(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 120
    while len(values) < high and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def kafka_home() -> tuple[Path | None, str]:
    """KAFKA_HOME of the reference Kafka 4.0, or None and why not."""
    if shutil.which("java") is None:
        return None, "java is not installed"
    script = REFERENCE_KAFKA / "kafka-ref"
    if os.environ.get("KAFKA_HOME"):
        return Path(os.environ["KAFKA_HOME"]), ""
    if not script.exists():
        return None, f"no reference Kafka at {REFERENCE_KAFKA} and KAFKA_HOME is not set"
    out = subprocess.run([str(script), "home"], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        return None, f"kafka-ref home failed: {out.stderr.strip()[-200:]}"
    return Path(out.stdout.strip()), ""


def measure(cluster: LocalCluster | KafkaKRaftCluster, records: int, size: int,
            throughput: bool) -> dict[str, float]:
    results: dict[str, float] = {}
    if throughput:
        for name, rf, acks, configs in (
            ("rf1-acks1", 1, "1", None),
            ("rf3-acks1", 3, "1", None),
            ("rf3-acks-all", 3, "all", {"min.insync.replicas": "2"}),
        ):
            topic = create(cluster.bootstrap, rf, configs)
            produce(cluster.bootstrap, topic, min(5000, records), size, acks)  # warm-up
            results[f"{name}_records_per_s"] = produce(
                cluster.bootstrap, topic, records, size, acks
            )
    results.update(failover(cluster))
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--systems", default="kafkette,kafka",
                        help="comma-separated: kafkette, kafka (Apache Kafka 4.0, 3 KRaft nodes)")
    parser.add_argument("--failover-only", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    skipped: dict[str, str] = {}
    for system in args.systems.split(","):
        with tempfile.TemporaryDirectory(prefix=f"kafkette-repl-bench-{system}-") as tmp:
            cluster: LocalCluster | KafkaKRaftCluster
            if system == "kafkette":
                cluster = LocalCluster(Path(tmp))
            elif system == "kafka":
                home, why = kafka_home()
                if home is None:
                    skipped[system] = why
                    continue
                cluster = KafkaKRaftCluster(Path(tmp), home, SESSION_TIMEOUT_MS)
            else:
                raise SystemExit(f"unknown system {system!r}")
            try:
                cluster.start()
                results[system] = measure(
                    cluster, args.records, args.size, not args.failover_only
                )
            except Exception as exc:  # report the other system's figures all the same
                skipped[system] = f"failed: {exc!r} (logs in a temporary folder, removed)"
            finally:
                cluster.stop()
            if not args.json and system in results:
                for key, value in results[system].items():
                    print(f"{system:9s} {key:28s} {value:12.2f}", flush=True)
    if args.json:
        print(json.dumps({"results": results, "skipped": skipped}))
    else:
        for system, why in skipped.items():
            print(f"{system:9s} skipped: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
