"""Apache Kafka 4.0 as three KRaft nodes on loopback: the reference for bench/replication_bench.py.

Each node runs ``process.roles=broker,controller`` (a combined node, as a small cluster is
usually deployed) with its own ``node.id`` (1-3), client port, controller port and log dir;
``controller.quorum.voters`` names all three, so the metadata quorum survives the loss of any one
node. Storage is formatted with one cluster id before the clock starts. Heaps are small
(``-Xmx384m`` each, ``KAFKA_HEAP_OPTS`` overrides) so three JVMs fit beside the client on a
shared machine. The broker session timeout (``broker.session.timeout.ms``, Kafka's default 9 s)
is set to the kafkette cluster's ``zookeeper.session.timeout.ms`` so failover times compare like
for like: in both systems a killed broker is noticed when its session lapses.

Same surface as the bench's kafkette ``LocalCluster``: ``start()``, ``bootstrap`` (live nodes),
``kill(node_id)``, ``stop()``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient

from bench.harness.raw_wire import free_port

HOST = "127.0.0.1"


class KafkaKRaftCluster:
    def __init__(self, root: Path, home: Path, session_timeout_ms: int, brokers: int = 3) -> None:
        self.root = root
        self.home = home
        self.session_timeout_ms = session_timeout_ms
        self.ports = {i: free_port() for i in range(1, brokers + 1)}
        self.controller_ports = {i: free_port() for i in range(1, brokers + 1)}
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{p}" for i, p in self.ports.items() if i in self.procs)

    def _config(self, node_id: int) -> Path:
        voters = ",".join(f"{i}@{HOST}:{p}" for i, p in self.controller_ports.items())
        lines = {
            "process.roles": "broker,controller",
            "node.id": str(node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{HOST}:{self.ports[node_id]},"
            f"CONTROLLER://{HOST}:{self.controller_ports[node_id]}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.ports[node_id]}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.root / f"kafka-{node_id}" / "data"),
            "num.partitions": "1",
            "broker.session.timeout.ms": str(self.session_timeout_ms),
            "group.initial.rebalance.delay.ms": "0",
        }
        path = self.root / f"kafka-{node_id}" / "server.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
        return path

    def start(self, timeout: float = 180.0) -> None:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        env = {**os.environ, "KAFKA_HEAP_OPTS": os.environ.get("KAFKA_HEAP_OPTS", "-Xmx384m")}
        for node_id in self.ports:
            config = self._config(node_id)
            node_env = {**env, "LOG_DIR": str(config.parent / "logs")}
            subprocess.run(
                [str(self.home / "bin" / "kafka-storage.sh"), "format", "-t", cluster_id,
                 "-c", str(config)],
                capture_output=True, env=node_env, timeout=180, check=True,
            )
            self.procs[node_id] = subprocess.Popen(
                [str(self.home / "bin" / "kafka-server-start.sh"), str(config)],
                stdout=(config.parent / "server.out").open("wb"), stderr=subprocess.STDOUT,
                env=node_env,
            )
        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        while time.monotonic() < deadline:
            try:
                if len(admin.list_topics(timeout=5).brokers) == len(self.ports):
                    return
            except Exception:
                pass
            time.sleep(1)
        raise RuntimeError(f"Kafka's three nodes did not form within {timeout:g}s; see {self.root}")

    def controller(self) -> int:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return admin.describe_cluster(request_timeout=30).result(60).controller.id

    def kill(self, node_id: int) -> None:
        proc = self.procs.pop(node_id)
        proc.kill()
        proc.wait(30)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.kill()
            proc.wait(30)
        self.procs.clear()
