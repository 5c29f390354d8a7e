"""``kafkette cluster`` and the ZooKeeper it starts, run as real processes.

``kafkette.broker.cluster.zookeeper_server`` runs the installed ZooKeeper (the one
the ``zookeeper`` fixture and ``kafkette cluster`` both use): it must answer
``ruok``, keep its znodes across a restart on the same directory, stop on SIGTERM,
and say ``apt-get install zookeeper`` in one line when there is nothing to run.
``kafkette cluster --brokers 3`` must print its one ready line, serve a replicated
topic to real clients, keep running when a broker is killed, and stop brokers then
ZooKeeper on SIGTERM, leaving no process behind; a broker that cannot start stops
the whole start.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kafkette.broker.cluster.zookeeper_server import (
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    find_zookeeper,
    ruok,
)


def test_session_zookeeper_answers_ruok_and_keeps_tests_apart_by_chroot(
    zookeeper, zookeeper_connect, kazoo_client
) -> None:
    assert ruok(zookeeper.host, zookeeper.port)
    root = kazoo_client()
    chroot = zookeeper_connect.removeprefix(zookeeper.connect_string)
    root.ensure_path(chroot)
    rooted = kazoo_client(zookeeper_connect)
    rooted.create("/brokers/ids/1", b'{"version":5}', makepath=True, ephemeral=True)
    assert root.get(f"{chroot}/brokers/ids/1")[0] == b'{"version":5}'
    assert rooted.get_children("/brokers/ids") == ["1"]


def test_server_writes_its_config_restarts_on_its_data_and_stops_on_sigterm(
    tmp_path: Path, kazoo_client
) -> None:
    try:
        install = find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))
    server = ZooKeeperServer(
        tmp_path / "zk", tick_time_ms=500, fsync=False, own_session=False, install=install
    )
    try:
        server.start(timeout=120)
        config = dict(
            line.split("=", 1) for line in server.config_path.read_text().splitlines()
        )
        assert config["clientPort"] == str(server.port)
        assert config["clientPortAddress"] == "127.0.0.1"
        assert config["admin.enableServer"] == "false"
        assert config["4lw.commands.whitelist"] == "ruok"
        assert Path(config["dataDir"]) == (tmp_path / "zk" / "data").resolve()
        client = kazoo_client(server.connect_string)
        client.create("/cluster/id", b'{"version":"1","id":"abc"}', makepath=True)
        client.stop()

        assert server.stop() is not None
        assert server.process is not None and server.process.poll() is not None
        assert not ruok(server.host, server.port)

        server.start(timeout=120)  # the same directory and port: the znode is still there
        again = kazoo_client(server.connect_string)
        assert again.get("/cluster/id")[0] == b'{"version":"1","id":"abc"}'
    finally:
        server.stop()


def test_missing_zookeeper_says_how_to_install_it(tmp_path: Path) -> None:
    empty = tmp_path / "no-zookeeper"
    empty.mkdir()
    with pytest.raises(ZooKeeperNotInstalled) as missing_jars:
        find_zookeeper(environ={"ZOOKEEPER_HOME": str(empty), "PATH": "/usr/bin:/bin"})
    jars = tmp_path / "lib"
    jars.mkdir()
    (jars / "zookeeper-3.8.4.jar").write_bytes(b"not looked into before java is found")
    with pytest.raises(ZooKeeperNotInstalled) as missing_java:
        find_zookeeper(jar_dirs=[jars], environ={"PATH": str(empty)})
    for message in (str(missing_jars.value), str(missing_java.value)):
        assert "apt-get install zookeeper" in message
        assert "\n" not in message
    assert str(empty) in str(missing_jars.value)
    assert "java" in str(missing_java.value)


def test_tarball_layout_runs_every_jar_of_its_lib_folder(tmp_path: Path) -> None:
    home = tmp_path / "apache-zookeeper-3.9.2-bin"
    (home / "lib").mkdir(parents=True)
    for name in ("zookeeper-jute-3.9.2.jar", "zookeeper-3.9.2.jar", "netty-handler-4.1.jar"):
        (home / "lib" / name).write_bytes(b"")  # no manifest: its dependencies sit beside it
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").write_text("#!/bin/sh\n")
    (java_home / "bin" / "java").chmod(0o755)
    install = find_zookeeper(environ={"ZOOKEEPER_HOME": str(home), "JAVA_HOME": str(java_home)})
    assert install.java == str(java_home / "bin" / "java")
    assert install.classpath == (str(home / "lib" / "*"),)
    command = install.command(tmp_path / "zoo.cfg")
    assert command[-2:] == ["org.apache.zookeeper.server.quorum.QuorumPeerMain",
                            str(tmp_path / "zoo.cfg")]


# --- kafkette cluster ------------------------------------------------------------

CLUSTER_READY = re.compile(r"^kafkette cluster ready on (\S+)$")


class Launcher:
    """``kafkette cluster`` as a child process; stdout lines collected by a thread."""

    def __init__(self, data_dir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.stderr_path = data_dir.parent / f"{data_dir.name}-launcher.log"
        self.stdout_lines: list[str] = []
        self._ready = threading.Event()
        with self.stderr_path.open("w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "kafkette", "cluster", "--data-dir", str(data_dir), *args],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, text=True,
                env={**os.environ, **(env or {})},
            )
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.stdout_lines.append(line.rstrip("\n"))
            if CLUSTER_READY.match(line.rstrip("\n")):
                self._ready.set()
        self._ready.set()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 180.0) -> list[str]:
        """The brokers' addresses from the ready line."""
        self._ready.wait(timeout)
        for line in self.stdout_lines:
            if match := CLUSTER_READY.match(line):
                return match.group(1).split(",")
        raise AssertionError(
            f"no ready line within {timeout:g}s (exit {self.process.poll()}, "
            f"stdout {self.stdout_lines!r}):\n{self.stderr()[-5000:]}"
        )

    def wait_exit(self, timeout: float = 90.0) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"kafkette cluster still running after {timeout:g}s") from None

    def zookeeper_port(self) -> int:
        config = (self.data_dir / "zookeeper" / "zoo.cfg").read_text()
        return int(re.search(r"^clientPort=(\d+)$", config, re.M).group(1))  # type: ignore[union-attr]

    def cleanup(self) -> None:
        """Whatever is left (the launcher, or children it left behind): SIGTERM, then SIGKILL."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        for pid in _pids_mentioning(str(self.data_dir)):
            os.kill(pid, signal.SIGKILL)


def _pids_mentioning(text: str) -> list[int]:
    """Processes whose command line names ``text`` (this test's own data dir)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def launcher(tmp_path: Path) -> Iterator[Callable[..., Launcher]]:
    started: list[Launcher] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Launcher:
        process = Launcher(tmp_path / f"cluster-{len(started)}", *args, env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.cleanup()


def test_cluster_command_without_zookeeper_says_how_to_install_it(
    tmp_path: Path, launcher
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    process = launcher("--brokers", "1", env={"ZOOKEEPER_HOME": str(empty)})
    assert process.wait_exit() == 1
    assert process.stdout_lines == []
    lines = process.stderr().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("kafkette: ZooKeeper is not installed")
    assert "apt-get install zookeeper" in lines[0]


def test_cluster_command_refuses_configs_it_sets_per_broker(launcher) -> None:
    process = launcher("--brokers", "2", "--config", "broker.id=7")
    assert process.wait_exit() == 1
    assert process.stdout_lines == []
    (line,) = process.stderr().splitlines()
    assert line.startswith("kafkette: --config broker.id: kafkette cluster sets these itself")
    assert not (process.data_dir / "zookeeper").exists()


@pytest.fixture
def zookeeper_installed() -> None:
    """Skip (with the install hint) where ``kafkette cluster`` has no ZooKeeper to start."""
    try:
        find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))


def test_broker_that_cannot_start_stops_the_cluster_and_its_zookeeper(
    zookeeper_installed, launcher
) -> None:
    process = launcher("--brokers", "2", "--config", "no.such.config=1")
    assert process.wait_exit() == 1
    assert process.stdout_lines == []
    last = process.stderr().splitlines()[-1]
    assert last.startswith("kafkette: broker "), last
    assert "before it was ready" in last and "no.such.config" in last
    assert not ruok("127.0.0.1", process.zookeeper_port())
    assert _pids_mentioning(str(process.data_dir)) == []


def test_three_brokers_serve_a_replicated_topic_survive_a_kill_and_stop_on_sigterm(
    zookeeper_installed, launcher, wait_until
) -> None:
    process = launcher(
        "--brokers", "3",
        "--config", "min.insync.replicas=2",
        "--config", "zookeeper.session.timeout.ms=6000",  # broker 3's death noticed soon
        "--schema-registry",
    )
    addresses = process.wait_ready()
    assert len(addresses) == 3
    assert process.stdout_lines == [f"kafkette cluster ready on {','.join(addresses)}"]
    bootstrap = ",".join(addresses)

    # --schema-registry: one registry per broker, their URLs on stderr; a schema registered
    # through one is read through another.
    (urls,) = re.findall(r"^kafkette cluster: schema registry on (\S+)$", process.stderr(), re.M)
    registries = urls.split(",")
    assert len(registries) == 3
    registered = SchemaRegistryClient({"url": registries[0]}).register_schema(
        "local-cluster-value", Schema('{"type":"string"}', "AVRO")
    )
    wait_until(
        lambda: SchemaRegistryClient({"url": registries[2]}).get_schema(registered).schema_str
        == '"string"',
        timeout=30, what="the schema read through broker 3's registry",
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    brokers = admin.list_topics(timeout=30).brokers
    assert sorted(f"{b.host}:{b.port}" for b in brokers.values()) == sorted(addresses)
    assert sorted(brokers) == [1, 2, 3]
    topic = f"local-cluster-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, 3, 3)], operation_timeout=30)[topic].result(timeout=60)

    def fully_replicated() -> bool:
        partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
        return len(partitions) == 3 and all(
            sorted(p.replicas) == sorted(p.isrs) == [1, 2, 3] and p.leader in (1, 2, 3)
            for p in partitions.values()
        )

    wait_until(fully_replicated, timeout=60, what="3 partitions with 3 replicas in sync")

    values = {f"value-{i}".encode() for i in range(300)}
    errors: list[object] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True}
    )
    for i, value in enumerate(sorted(values)):
        producer.produce(
            topic, key=str(i).encode(), value=value,
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    assert producer.flush(60) == 0
    assert errors == []

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < len(values) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.append(message.value())
    finally:
        consumer.close()
    assert sorted(seen) == sorted(values)

    # kill -9 of one broker (how a developer tries a failover): reported, the rest run on.
    (broker_3,) = _pids_mentioning(str(process.data_dir / "broker-3"))
    os.kill(broker_3, signal.SIGKILL)
    wait_until(
        lambda: "kafkette cluster: broker 3 exited with code -9" in process.stderr(),
        timeout=30, what="the launcher reporting broker 3's death",
    )
    assert process.process.poll() is None
    assert len(_pids_mentioning(str(process.data_dir / "broker-"))) == 2
    # Its session expires; the survivors' Metadata drops it.
    survivors = ",".join(addresses[:2])
    wait_until(
        lambda: sorted(AdminClient({"bootstrap.servers": survivors}).list_topics(
            timeout=10).brokers) == [1, 2],
        timeout=60, what="Metadata without broker 3",
    )

    process.process.send_signal(signal.SIGTERM)
    assert process.wait_exit() == 0
    assert process.stdout_lines == [f"kafkette cluster ready on {','.join(addresses)}"]
    assert _pids_mentioning(str(process.data_dir)) == []
    assert not ruok("127.0.0.1", process.zookeeper_port())
    # The two survivors shut down cleanly: each left Kafka's clean-shutdown marker.
    for broker_id in (1, 2):
        assert (process.data_dir / f"broker-{broker_id}" / ".kafka_cleanshutdown").exists()
    assert not (process.data_dir / "broker-3" / ".kafka_cleanshutdown").exists()


def test_given_zookeeper_is_used_and_left_running(zookeeper, zookeeper_connect, launcher,
                                                  kazoo_client) -> None:
    process = launcher("--brokers", "1", "--zookeeper", zookeeper_connect)
    (address,) = process.wait_ready()
    assert not (process.data_dir / "zookeeper").exists()
    chroot = zookeeper_connect.removeprefix(zookeeper.connect_string)
    registered = kazoo_client().get_children(f"{chroot}/brokers/ids")
    assert registered == ["1"]

    process.process.send_signal(signal.SIGTERM)
    assert process.wait_exit() == 0
    assert ruok(zookeeper.host, zookeeper.port)  # not ours to stop
    assert address.startswith("127.0.0.1:")
