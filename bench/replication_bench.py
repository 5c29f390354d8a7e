"""Replication cost and failover time on a local three-broker kafkette cluster (issue 15).

Run ``python -m bench.replication_bench`` from the repository root (``--records``, default
100,000 records of ``--size`` 1,000 bytes; ``--json``). It starts a ZooKeeper from the installed
package and three ``kafkette serve`` processes (ids 1-3, fresh data dirs, session timeout 6 s),
then measures with one confluent-kafka producer (``linger.ms=5``) on one partition:

- ``rf1-acks1``: a topic with replication factor 1, acks=1 (the single-node baseline);
- ``rf3-acks1``: replication factor 3, acks=1 (the followers fetch, nobody waits for them);
- ``rf3-acks-all``: replication factor 3, ``min.insync.replicas=2``, acks=all, idempotent:
  every answer waits for the high watermark, i.e. for both followers' next fetch;
- ``failover``: under acks=all idempotent load, kill -9 of the leader, then the time to the
  first record acknowledged after the kill (dominated by ``zookeeper.session.timeout.ms``:
  the controller elects only once the dead broker's session expires), and the records lost
  (acknowledged but not readable afterwards: must be 0).

Figures are records/s from the first produce to the last acknowledgement, and seconds. A script,
not a test: figures depend on the machine (two shared cores here: the three brokers, ZooKeeper
and the client compete for them).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafkette.broker.cluster.zookeeper_server import ZooKeeperServer, free_port

READY = re.compile(r"^kafkette ready on ")
SESSION_TIMEOUT_MS = 6000


class LocalCluster:
    def __init__(self, root: Path, brokers: int = 3) -> None:
        self.root = root
        self.zookeeper = ZooKeeperServer(root / "zk", tick_time_ms=500, fsync=False)
        self.ports = {i: free_port() for i in range(1, brokers + 1)}
        self.procs: dict[int, subprocess.Popen[str]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{p}" for i, p in self.ports.items() if i in self.procs)

    def start(self) -> None:
        self.zookeeper.start(timeout=120)
        connect = self.zookeeper.connect_string + "/bench"
        for broker_id, port in self.ports.items():
            self.procs[broker_id] = subprocess.Popen(
                [
                    sys.executable, "-m", "kafkette", "serve",
                    "--listen", f"127.0.0.1:{port}",
                    "--data-dir", str(self.root / f"broker-{broker_id}"),
                    "--config", f"broker.id={broker_id}",
                    "--config", f"zookeeper.connect={connect}",
                    "--config", f"zookeeper.session.timeout.ms={SESSION_TIMEOUT_MS}",
                ],
                stdout=subprocess.PIPE,
                stderr=(self.root / f"broker-{broker_id}.log").open("w"),
                text=True,
            )
        for proc in self.procs.values():
            assert proc.stdout is not None
            for line in proc.stdout:
                if READY.match(line):
                    break
            else:
                raise RuntimeError(f"a broker exited; see {self.root}")

    def kill(self, broker_id: int) -> None:
        proc = self.procs.pop(broker_id)
        proc.kill()
        proc.wait(30)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait(30)
        self.procs.clear()
        self.zookeeper.stop()


def create(bootstrap: str, rf: int, configs: dict[str, str] | None = None) -> str:
    topic = f"bench-rf{rf}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, rf, config=configs or {})])[topic].result(60)
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


def failover(cluster: LocalCluster) -> dict[str, float]:
    topic = create(cluster.bootstrap, 3, {"min.insync.replicas": "2"})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
         "linger.ms": 1, "message.timeout.ms": 120000}
    )
    acked: list[tuple[float, bytes]] = []
    stop = threading.Event()

    def load() -> None:
        n = 0
        while not stop.is_set():
            try:
                producer.produce(
                    topic, b"%d" % n, partition=0,
                    on_delivery=lambda err, msg: acked.append((time.monotonic(), msg.value()))
                    if err is None else None,
                )
                n += 1
            except BufferError:
                pass
            producer.poll(0.001)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    while len(acked) < 2000:
        time.sleep(0.05)
    killed_at = time.monotonic()
    cluster.kill(leader)
    deadline = killed_at + 120
    while not any(t > killed_at for t, _ in acked[-50:]) and time.monotonic() < deadline:
        time.sleep(0.01)
    first_after = min((t for t, _ in acked if t > killed_at), default=float("nan"))
    time.sleep(2)
    stop.set()
    thread.join(30)
    producer.flush(120)
    read = consume(cluster.bootstrap, topic)
    lost = {v for _, v in acked} - set(read)
    return {
        "failover_s": first_after - killed_at,
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="kafkette-repl-bench-") as tmp:
        cluster = LocalCluster(Path(tmp))
        try:
            cluster.start()
            for name, rf, acks, configs in (
                ("rf1-acks1", 1, "1", None),
                ("rf3-acks1", 3, "1", None),
                ("rf3-acks-all", 3, "all", {"min.insync.replicas": "2"}),
            ):
                topic = create(cluster.bootstrap, rf, configs)
                produce(cluster.bootstrap, topic, min(5000, args.records), args.size, acks)
                results[f"{name}_records_per_s"] = produce(
                    cluster.bootstrap, topic, args.records, args.size, acks
                )
            results.update(failover(cluster))
        finally:
            cluster.stop()
    if args.json:
        print(json.dumps(results))
    else:
        for key, value in results.items():
            print(f"{key:28s} {value:12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
