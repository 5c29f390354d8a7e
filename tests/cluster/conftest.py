"""Fixtures for the cluster tests: a real ZooKeeper and real ``kafkette serve`` processes.

Test modules cannot import this file (pytest runs with ``--import-mode=importlib``),
so everything reaches them as fixtures:

- ``zookeeper``: one ZooKeeper server per session, from the installed package, on a
  free port (``kafkette.broker.cluster.zookeeper_server``, the same code
  ``kafkette cluster`` runs). Skips with the reason when java or the ZooKeeper
  jars are missing (``apt-get install zookeeper``).
- ``zookeeper_connect``: ``host:port/<chroot>``, a chroot no other test uses.
- ``kazoo_client``: factory of started kazoo clients (``kazoo_client(hosts=None)``,
  the server's root by default), stopped at teardown.
- ``cluster``: factory ``cluster(brokers=3, configs=None, broker_configs=None,
  wait=True, schema_registry=False) -> Cluster``: N ``kafkette serve`` processes with
  broker ids 1..N, each with its own free port and data dir (and, with
  ``schema_registry``, a schema registry on a free port of its own:
  ``ClusterBroker.schema_registry_url``), all on their own ZooKeeper chroot, returned
  once every broker printed its ready line and lists all the others. See
  ``Cluster`` for ``bootstrap``, ``brokers``, ``kill``/``stop``/``freeze``/``thaw``/
  ``start``, ``zk()``, and ZooKeeper's view: ``partition_state(topic, p)``,
  ``controller()``, ``wait_leader(topic, p, exclude=(...))``. Every broker still
  running at teardown is killed.
- ``wait_until``: ``wait_until(predicate, timeout=30, what="...")``, a bounded poll.

Helper modules: ``failover_load.py`` (the loads and checks the failover tests share),
``zk_wire.py`` (raw requests to one broker); test modules import them
(``from tests.cluster import failover_load as fl``).

Each broker logs to ``<tmp>/broker-<id>.log`` (appended across restarts); a test
that fails gets the tail of every broker's log and of ZooKeeper's in its report.
Every wait has a deadline: a test that hits one fails, it never hangs.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bench.harness.raw_wire import exchange, free_port
from bench.harness.serve_process import ServeProcess
from kafkette.broker.cluster.zookeeper_server import (
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    find_zookeeper,
)

HOST = "127.0.0.1"
# Short enough that a killed broker's registration vanishes within seconds, long enough
# that a loaded two-core machine does not expire live sessions.
SESSION_TIMEOUT_MS = 6000
READY_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0
LOG_TAIL_LINES = 80


# --- ZooKeeper -------------------------------------------------------------------


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper for the whole session; tests keep apart by chroot."""
    try:
        install = find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))
    # tickTime 500: sessions are checked for expiry every half second, so a killed
    # broker's znodes go close to its session timeout (min session 1 s, max 60 s).
    server = ZooKeeperServer(
        tmp_path_factory.mktemp("zookeeper"), tick_time_ms=500, fsync=False,
        own_session=False, install=install,
    )
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


def _chroot_for(node: pytest.Item) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", node.name)[:60].strip("-")
    return f"/kafkette-test-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def zookeeper_connect(zookeeper: ZooKeeperServer, request: pytest.FixtureRequest) -> str:
    """``host:port/<chroot>``: this test's own corner of the session's ZooKeeper."""
    return zookeeper.connect_string + _chroot_for(request.node)


@pytest.fixture
def zk_member(tmp_path: Path, zookeeper_connect: str) -> Callable[[int], Any]:
    """``zk_member(broker_id)``: an in-process broker of this test's ZooKeeper cluster (data
    in ``tmp_path/b<id>``), for tests that need brokers sharing ZooKeeper state but no
    replication (the offsets topic on one replica). The caller stops it (``with``)."""
    from kafkette.broker.embedded import EmbeddedBroker

    def start(broker_id: int) -> EmbeddedBroker:
        return EmbeddedBroker.start(tmp_path / f"b{broker_id}", {
            "zookeeper.connect": zookeeper_connect, "broker.id": str(broker_id),
            "offsets.topic.replication.factor": "1",
        })  # fmt: skip

    return start


@pytest.fixture
def kazoo_client(zookeeper: ZooKeeperServer) -> Iterator[Callable[..., Any]]:
    """Factory: ``kazoo_client(hosts=None, timeout=15) -> KazooClient`` (started)."""
    clients: list[Any] = []

    def connect(hosts: str | None = None, timeout: float = 15.0) -> Any:
        client = _start_kazoo(hosts or zookeeper.connect_string, timeout)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        _stop_kazoo(client)


def _start_kazoo(hosts: str, timeout: float) -> Any:
    from kazoo.client import KazooClient  # only cluster tests need kazoo

    client = KazooClient(hosts=hosts, timeout=10.0)
    client.start(timeout=timeout)
    return client


def _stop_kazoo(client: Any) -> None:
    try:
        client.stop()
    finally:
        client.close()


# --- brokers ---------------------------------------------------------------------


class ClusterBroker:
    """One ``kafkette serve`` of a cluster: fixed id, port and data dir across restarts.

    ``serve`` is the current ``ServeProcess`` (None before the first start), ``process``
    its ``subprocess.Popen``; ``stdout_lines`` what the current process printed;
    ``log_path`` its stderr, appended to by every start.
    """

    def __init__(self, broker_id: int, port: int, data_dir: Path, log_path: Path,
                 args: list[str], schema_registry_url: str | None = None) -> None:
        self.id = broker_id
        self.host = HOST
        self.port = port
        self.data_dir = data_dir
        self.log_path = log_path
        self.args = args
        self.serve: ServeProcess | None = None
        # Its schema registry (the same port across restarts); None when it serves none.
        self.schema_registry_url = schema_registry_url

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def process(self) -> subprocess.Popen[str] | None:
        return None if self.serve is None else self.serve.proc

    @property
    def stdout_lines(self) -> list[str]:
        return [] if self.serve is None else self.serve.stdout_lines

    @property
    def frozen(self) -> bool:
        return self.serve is not None and self.serve.frozen

    @property
    def running(self) -> bool:
        """Alive (frozen counts as alive: the process exists, it just does not run)."""
        return self.serve is not None and self.serve.running

    def launch(self) -> None:
        if self.running:
            raise AssertionError(f"broker {self.id} is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = ["--listen", self.address, "--data-dir", str(self.data_dir), *self.args]
        self.serve = ServeProcess(args, self.log_path, append_log=True)

    def wait_ready(self, timeout: float = READY_TIMEOUT_SECONDS) -> None:
        assert self.serve is not None, f"broker {self.id} was never started"
        self.serve.wait_ready(timeout)

    def kill(self) -> None:
        """SIGKILL (works on a frozen process too) and reap."""
        if self.serve is not None:
            self.serve.kill()

    def stop(self, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        """SIGTERM and wait (a frozen broker is thawed first); returns the exit code."""
        assert self.serve is not None, f"broker {self.id} was never started"
        return self.serve.terminate(timeout)

    def freeze(self) -> None:
        """SIGSTOP: the process stays, holds its sockets and sends nothing (a long GC pause)."""
        assert self.running, f"broker {self.id} is not running"
        self.serve.freeze()  # type: ignore[union-attr]

    def thaw(self) -> None:
        """SIGCONT after ``freeze``."""
        assert self.running, f"broker {self.id} is not running"
        self.serve.thaw()  # type: ignore[union-attr]

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def _brokers_listed(address: str) -> int:
    """How many brokers ``address`` lists in a Metadata v1 answer for no topics (-1 when
    it does not answer). Hand-encoded, so this works whatever client a test uses."""
    client_id = b"cluster-fixture"
    request = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id + struct.pack(">i", 0)
    try:
        answer = exchange(address, struct.pack(">i", len(request)) + request, timeout=5)
    except OSError:  # refused, reset, closed before answering (ConnectionClosed), timed out
        return -1
    return struct.unpack_from(">i", answer, 4)[0]  # after the correlation id


class Cluster:
    """N brokers on one ZooKeeper chroot; ids 1..N.

    ``bootstrap`` lists every broker (clients skip the dead ones); ``brokers`` maps
    id -> ``ClusterBroker`` (``.address``, ``.process``, ``.data_dir``, ``.log_path``).
    ``start(id)`` restarts a stopped or killed broker on the same port and data dir.
    ``zk()`` is a started kazoo client rooted at the cluster's chroot.
    """

    def __init__(self, brokers: dict[int, ClusterBroker], zookeeper: ZooKeeperServer,
                 chroot: str) -> None:
        self.brokers = brokers
        self.zookeeper = zookeeper
        self.chroot = chroot
        self._kazoo_clients: list[Any] = []

    @property
    def zookeeper_connect(self) -> str:
        return self.zookeeper.connect_string + self.chroot

    @property
    def bootstrap(self) -> str:
        return ",".join(broker.address for broker in self.brokers.values())

    def bootstrap_of(self, *broker_ids: int) -> str:
        """The bootstrap string of some brokers only (e.g. the survivors)."""
        return ",".join(self.brokers[i].address for i in broker_ids)

    def running(self) -> list[int]:
        return [i for i, broker in self.brokers.items() if broker.running]

    def start(self, broker_id: int, wait: bool = True) -> ClusterBroker:
        """(Re)start a broker on its port and data dir; with ``wait``, until it printed its
        ready line and every running broker lists all running brokers."""
        broker = self.brokers[broker_id]
        broker.launch()
        if wait:
            broker.wait_ready()
            self.wait_formed()
        return broker

    def wait_ready(self, *broker_ids: int) -> None:
        """Ready lines of the given brokers (all by default), then ``wait_formed``."""
        for broker_id in broker_ids or tuple(self.brokers):
            self.brokers[broker_id].wait_ready()
        self.wait_formed()

    def wait_formed(self, timeout: float = READY_TIMEOUT_SECONDS) -> None:
        """Until every running, unfrozen broker lists at least all of those in Metadata.

        A broker prints its ready line once it registered in ZooKeeper; the others
        see it through their watches a moment later. Tests start from a cluster
        whose members all know each other (a replication factor N topic can be
        created at once).
        """
        members = [b for b in self.brokers.values() if b.running and not b.frozen]
        deadline = time.monotonic() + timeout
        while True:
            counts = {b.id: _brokers_listed(b.address) for b in members}
            if all(count >= len(members) for count in counts.values()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"brokers {[b.id for b in members]} do not all list each other within "
                    f"{timeout:g}s (brokers listed by each: {counts}):\n{self.logs()}"
                )
            time.sleep(0.1)

    def kill(self, broker_id: int) -> None:
        self.brokers[broker_id].kill()

    def stop(self, broker_id: int, timeout: float = STOP_TIMEOUT_SECONDS) -> int:
        return self.brokers[broker_id].stop(timeout)

    def freeze(self, broker_id: int) -> None:
        self.brokers[broker_id].freeze()

    def thaw(self, broker_id: int) -> None:
        self.brokers[broker_id].thaw()

    def zk(self, timeout: float = 15.0) -> Any:
        """A started kazoo client on this cluster's chroot (stopped at teardown)."""
        client = _start_kazoo(self.zookeeper_connect, timeout)
        self._kazoo_clients.append(client)
        return client

    def _reader(self) -> Any:
        if not self._kazoo_clients:
            self.zk()
        return self._kazoo_clients[0]

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        """Kafka's state znode of a partition as a dict (leader, leader_epoch, isr, ...), or
        None while it does not exist."""
        from kazoo.exceptions import NoNodeError

        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        try:
            data, _ = self._reader().get(path)
        except NoNodeError:
            return None
        return json.loads(data)

    def controller(self) -> int | None:
        """The controller's broker id from ``/controller``, None while there is none."""
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self._reader().get("/controller")
        except NoNodeError:
            return None
        return int(json.loads(data)["brokerid"])

    def wait_leader(
        self, topic: str, partition: int, exclude: tuple[int, ...] = (), timeout: float = 60.0
    ) -> int:
        """The partition's leader once ZooKeeper names one not in ``exclude`` (e.g. the
        broker just killed); AssertionError with the brokers' logs at the deadline."""
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            state = self.partition_state(topic, partition)
            if state is not None and state["leader"] >= 0 and state["leader"] not in exclude:
                return int(state["leader"])
            time.sleep(0.2)
        raise AssertionError(
            f"{topic}-{partition}: no leader outside {list(exclude)} within {timeout:g}s "
            f"(state {state}):\n{self.logs()}"
        )

    def logs(self, lines: int = LOG_TAIL_LINES) -> str:
        """Every broker's log tail, for an assertion message."""
        return "\n".join(
            f"--- broker {i} ({broker.log_path}):\n{broker.log_tail(lines)}"
            for i, broker in self.brokers.items()
        )

    def close(self) -> None:
        for client in self._kazoo_clients:
            _stop_kazoo(client)
        for broker in self.brokers.values():
            broker.kill()


class ClusterFactory:
    """``cluster(brokers=3, configs=None, broker_configs=None, wait=True,
    schema_registry=False) -> Cluster``.

    ``configs`` go to every broker, ``broker_configs[id]`` to one (both override the
    defaults below). With ``wait=False`` the processes are launched and
    ``Cluster.wait_ready()`` is left to the test. ``schema_registry``: every broker also
    serves a schema registry, on a free port of its own.
    """

    def __init__(self, zookeeper: ZooKeeperServer, tmp_path: Path, node: pytest.Item) -> None:
        self.zookeeper = zookeeper
        self.tmp_path = tmp_path
        self.node = node
        self.clusters: list[Cluster] = []

    def __call__(
        self,
        brokers: int = 3,
        configs: Mapping[str, str] | None = None,
        broker_configs: Mapping[int, Mapping[str, str]] | None = None,
        wait: bool = True,
        schema_registry: bool = False,
    ) -> Cluster:
        chroot = _chroot_for(self.node)
        root = self.tmp_path / f"cluster-{len(self.clusters)}"
        root.mkdir()
        members: dict[int, ClusterBroker] = {}
        cluster = Cluster(members, self.zookeeper, chroot)
        self.clusters.append(cluster)
        for broker_id in range(1, brokers + 1):
            registry_url = f"http://{HOST}:{free_port(HOST)}" if schema_registry else None
            props = {
                "broker.id": str(broker_id),
                "zookeeper.connect": cluster.zookeeper_connect,
                "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                # Kafka refuses to create the internal topics with fewer live brokers
                # than their replication factor; small test clusters size them down.
                "offsets.topic.replication.factor": str(min(brokers, 3)),
                "transaction.state.log.replication.factor": str(min(brokers, 3)),
                "transaction.state.log.min.isr": str(min(brokers, 2)),
                **({"schema.registry.listeners": registry_url} if registry_url else {}),
                **(configs or {}),
                **((broker_configs or {}).get(broker_id, {})),
            }
            args = [arg for key, value in props.items() for arg in ("--config", f"{key}={value}")]
            members[broker_id] = ClusterBroker(
                broker_id, free_port(HOST), root / f"broker-{broker_id}",
                root / f"broker-{broker_id}.log", args, registry_url,
            )
        for broker in members.values():
            broker.launch()  # all at once: they register and elect in parallel
        if wait:
            cluster.wait_ready()
        return cluster

    def close(self) -> None:
        for cluster in self.clusters:
            cluster.close()


@pytest.fixture
def cluster(
    zookeeper: ZooKeeperServer, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ClusterFactory]:
    factory = ClusterFactory(zookeeper, tmp_path, request.node)
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def wait_until() -> Callable[..., Any]:
    """``wait_until(predicate, timeout=30, interval=0.2, what="...")``: the first truthy
    value of ``predicate()``; AssertionError naming ``what`` at the deadline."""

    def wait(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2,
             what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not true within {timeout:g}s (last: {value!r})")
            time.sleep(interval)

    return wait


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A failing cluster test reports every broker's and ZooKeeper's log tail."""
    report = yield
    if report.failed and report.when in ("setup", "call"):
        factory = getattr(item, "funcargs", {}).get("cluster")
        if isinstance(factory, ClusterFactory):
            for index, built in enumerate(factory.clusters):
                for broker_id, broker in built.brokers.items():
                    report.sections.append(
                        (f"cluster {index} broker {broker_id} log (tail)", broker.log_tail())
                    )
            server = factory.zookeeper
            report.sections.append(("zookeeper log (tail)", server.log_tail()))
    return report
