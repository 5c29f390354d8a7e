"""ZooKeeper and N ``kafkette serve`` processes, each in its own network namespace.

The same processes as ``kafkette cluster`` and tests/cluster start (``ZooKeeperServer``,
``ServeProcess``), with ``ip netns exec`` in front of their command: every node listens on
port 9092 (ZooKeeper 2181) of its own address on the ``Network``'s bridge, and brokers find
each other and ZooKeeper through those addresses only, so cutting a link is a real partition.

Process faults beside the network's: ``kill`` (SIGKILL), ``freeze``/``thaw`` (SIGSTOP/SIGCONT)
of a broker or of ZooKeeper, and a full disk on one broker (its data dir is a small tmpfs;
``fill_disk`` takes all its free space, ``free_disk`` gives it back). ZooKeeper's view
(``partition_state``, ``controller``, ``registered``) is read from the root namespace with
kazoo, so it is only asked while ZooKeeper is reachable.
"""

from __future__ import annotations

import json
import logging
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.harness.nemesis.network import Network, Node
from bench.harness.serve_process import ServeProcess
from kafkette.broker.cluster.zookeeper_server import ZooKeeperServer, find_zookeeper

BROKER_PORT = 9092
ZOOKEEPER_PORT = 2181
CHROOT = "/kafkette"
READY_TIMEOUT = 60.0

# The cluster's defaults: Kafka's names. Short ZooKeeper sessions and ISR lag so a schedule
# sees expiries and ISR changes within seconds; min.insync.replicas=2 and unclean election
# off (Kafka's default) are the settings under which acks=all promises no loss.
DEFAULT_CONFIGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "6000",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.num.partitions": "5",
}


class _NetnsZooKeeper:
    """``find_zookeeper()``'s command, run inside ZooKeeper's namespace."""

    def __init__(self, node: Node) -> None:
        self._install = find_zookeeper()
        self._node = node

    def command(self, config_path: Path) -> list[str]:
        return [*self._node.exec_prefix(), *self._install.command(config_path)]


class NemesisCluster:
    """``Network`` + ZooKeeper + brokers 1..N; ``close`` stops and deletes everything."""

    def __init__(
        self,
        root: Path,
        brokers: int = 3,
        configs: Mapping[str, str] | None = None,
        small_disk_mb: Mapping[int, int] | None = None,
    ) -> None:
        self.root = Path(root)
        self.broker_ids = list(range(1, brokers + 1))
        self.configs = {**DEFAULT_CONFIGS, **(configs or {})}
        self.small_disk_mb = dict(small_disk_mb or {})
        self.network = Network()
        self.serves: dict[int, ServeProcess] = {}
        self.frozen: set[str] = set()
        self._mounts: list[Path] = []
        self._kazoo: Any = None
        try:
            self.zk_node = self.network.add("zk")
            self.nodes = {i: self.network.add(f"b{i}") for i in self.broker_ids}
            self.zookeeper = ZooKeeperServer(
                self.root / "zookeeper", host=self.zk_node.ip, port=ZOOKEEPER_PORT,
                tick_time_ms=500, fsync=False, own_session=False,
                install=_NetnsZooKeeper(self.zk_node),  # type: ignore[arg-type]
            )  # fmt: skip
        except BaseException:
            self.close()
            raise

    # --- addresses ----------------------------------------------------------------

    def address(self, broker_id: int) -> str:
        return f"{self.nodes[broker_id].ip}:{BROKER_PORT}"

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(i) for i in self.broker_ids)

    def node_name(self, broker_id: int) -> str:
        return f"b{broker_id}"

    def data_dir(self, broker_id: int) -> Path:
        return self.root / f"broker-{broker_id}"

    def log_path(self, broker_id: int) -> Path:
        return self.root / f"broker-{broker_id}.log"

    # --- lifecycle ----------------------------------------------------------------

    def start(self) -> NemesisCluster:
        """ZooKeeper, then every broker; returns once all are registered."""
        self.zookeeper.start(timeout=READY_TIMEOUT)
        for broker_id, size in self.small_disk_mb.items():
            target = self.data_dir(broker_id)
            target.mkdir(parents=True, exist_ok=True)
            self.network.record_mount(target)
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}m", "tmpfs", str(target)], check=True
            )
            self._mounts.append(target)
        for broker_id in self.broker_ids:
            self.start_broker(broker_id, wait=False)
        for broker_id in self.broker_ids:
            self.serves[broker_id].wait_ready(READY_TIMEOUT)
        self.wait_registered(self.broker_ids)
        return self

    def start_broker(self, broker_id: int, wait: bool = True) -> None:
        props = {
            "broker.id": str(broker_id),
            "zookeeper.connect": f"{self.zookeeper.connect_string}{CHROOT}",
            **self.configs,
        }
        args = ["--listen", self.address(broker_id), "--data-dir", str(self.data_dir(broker_id))]
        for key, value in props.items():
            args += ["--config", f"{key}={value}"]
        command = [*self.nodes[broker_id].exec_prefix(), sys.executable, "-m", "kafkette", "serve"]
        self.serves[broker_id] = ServeProcess(
            args, self.log_path(broker_id), append_log=True, command=command
        )
        self.frozen.discard(self.node_name(broker_id))
        if wait:
            self.serves[broker_id].wait_ready(READY_TIMEOUT)

    def running(self, broker_id: int) -> bool:
        serve = self.serves.get(broker_id)
        return serve is not None and serve.running

    def kill(self, name: str) -> None:
        """SIGKILL broker ``bN`` or ``zk``."""
        if name == "zk":
            process = self.zookeeper.process
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(30)
        else:
            self.serves[int(name[1:])].kill()
        self.frozen.discard(name)

    def restart(self, name: str) -> None:
        """Start a killed broker or ZooKeeper again (same address, same data)."""
        if name == "zk":
            self.zookeeper.start(timeout=READY_TIMEOUT)
        else:
            self.start_broker(int(name[1:]))

    def freeze(self, name: str) -> None:
        """SIGSTOP: the process keeps its sockets and says nothing (a long pause)."""
        self._signal(name, signal.SIGSTOP)
        self.frozen.add(name)

    def thaw(self, name: str) -> None:
        self._signal(name, signal.SIGCONT)
        self.frozen.discard(name)

    def _signal(self, name: str, sig: int) -> None:
        process = self.zookeeper.process if name == "zk" else self.serves[int(name[1:])].proc
        if process is not None and process.poll() is None:
            process.send_signal(sig)

    def fill_disk(self, broker_id: int, keep_bytes: int = 0) -> None:
        """Take all free space of the broker's small data dir but ``keep_bytes``. Only a
        data dir this cluster mounted as a small tmpfs: never the machine's own disk."""
        target = self.data_dir(broker_id)
        if target not in self._mounts:
            raise AssertionError(f"broker {broker_id}'s data dir is not a small disk of ours")
        free = shutil.disk_usage(target).free - keep_bytes
        chunk = b"\0" * (1 << 20)
        # Unbuffered: a write refused with ENOSPC is the goal, and nothing is left in a buffer
        # for close() to fail on again.
        with (target / "filler").open("ab", buffering=0) as filler:
            while free > 0:
                try:
                    written = filler.write(chunk[: min(free, len(chunk))])
                except OSError:
                    break  # full
                free -= written or len(chunk)

    def free_disk(self, broker_id: int) -> None:
        (self.data_dir(broker_id) / "filler").unlink(missing_ok=True)

    def stop_all(self) -> None:
        """SIGTERM every broker (thawed first), then ZooKeeper: the graceful end."""
        if self._kazoo is not None:
            _stop_kazoo(self._kazoo)
            self._kazoo = None
        for name in list(self.frozen):
            self.thaw(name)
        for serve in self.serves.values():
            if serve.running:
                serve.terminate(60)
        self.zookeeper.stop()

    def close(self) -> None:
        """Kill what runs, unmount, delete the network. Safe to call twice; each stage
        runs even when one before it failed."""
        try:
            if self._kazoo is not None:
                _stop_kazoo(self._kazoo)
                self._kazoo = None
            for serve in self.serves.values():
                serve.kill()
            zookeeper = getattr(self, "zookeeper", None)
            if zookeeper is not None and zookeeper.process is not None:
                zookeeper.process.kill()
                zookeeper.process.wait(30)
        finally:
            try:
                self.network.close()
            finally:
                for target in self._mounts:
                    subprocess.run(["umount", "-l", str(target)], check=False)
                self._mounts.clear()

    def __enter__(self) -> NemesisCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- ZooKeeper's view ---------------------------------------------------------

    def zk(self) -> Any:
        """A kazoo client on the cluster's chroot (reconnected if its session was lost)."""
        from kazoo.client import KazooClient
        from kazoo.protocol.states import KazooState

        if self._kazoo is not None and self._kazoo.state != KazooState.CONNECTED:
            _stop_kazoo(self._kazoo)
            self._kazoo = None
        if self._kazoo is None:
            # Its connection losses are the schedule's doing: the harness reports faults itself.
            logging.getLogger("kazoo").setLevel(logging.ERROR)
            client = KazooClient(
                hosts=f"{self.zookeeper.connect_string}{CHROOT}", timeout=10.0,
                connection_retry={"max_tries": 3, "delay": 0.2},
            )  # fmt: skip
            client.start(timeout=15)
            self._kazoo = client
        return self._kazoo

    def registered(self) -> list[int]:
        return sorted(int(child) for child in self.zk().get_children("/brokers/ids"))

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not self.zk().exists(path):
            return None
        return json.loads(self.zk().get(path)[0])

    def controller(self) -> int | None:
        if not self.zk().exists("/controller"):
            return None
        return int(json.loads(self.zk().get("/controller")[0])["brokerid"])

    def wait_registered(self, broker_ids: list[int], timeout: float = READY_TIMEOUT) -> None:
        wait_for(lambda: self.registered() == sorted(broker_ids), timeout,
                 f"brokers {broker_ids} registered")  # fmt: skip

    def wait_in_sync(self, topic: str, partitions: int, timeout: float = 120.0) -> None:
        """Every partition of ``topic`` led, with every broker in its ISR."""

        def in_sync() -> bool:
            for partition in range(partitions):
                state = self.partition_state(topic, partition)
                if state is None or state["leader"] < 0:
                    return False
                if sorted(state["isr"]) != self.broker_ids:
                    return False
            return True

        wait_for(in_sync, timeout, f"{topic}: every partition led with a full ISR")

    def logs(self, lines: int = 60) -> str:
        """The tail of every broker's log and ZooKeeper's, for a failure report."""
        parts = []
        for broker_id, serve in sorted(self.serves.items()):
            parts.append(f"--- broker {broker_id} ---\n{serve.log_tail(lines)}")
        parts.append(f"--- zookeeper ---\n{self.zookeeper.log_tail(lines)}")
        return "\n".join(parts)


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.25) -> Any:
    """The first truthy ``predicate()``; AssertionError naming ``what`` at the deadline.
    Errors of the predicate (ZooKeeper still unreachable) count as not yet."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as exc:
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what} (last error: {last!r})")


def _stop_kazoo(client: Any, timeout: float = 15.0) -> None:
    """Stop and close in a daemon thread, given up after ``timeout``: kazoo's stop can block
    on a server that is gone, and teardown must go on."""

    def stop() -> None:
        try:
            client.stop()
            client.close()
        except Exception:  # the server may be gone: nothing left to close cleanly
            pass

    worker = threading.Thread(target=stop, daemon=True)
    worker.start()
    worker.join(timeout)
