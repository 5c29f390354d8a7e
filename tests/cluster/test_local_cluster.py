"""The local cluster launcher and the ZooKeeper it starts, run as real processes.

``kafkette.broker.cluster.zookeeper_server`` runs the installed ZooKeeper (the one
the ``zookeeper`` fixture and ``kafkette cluster`` both use): it must answer
``ruok``, keep its znodes across a restart on the same directory, stop on SIGTERM,
and say ``apt-get install zookeeper`` in one line when there is nothing to run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

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
    server = ZooKeeperServer(tmp_path / "zk", tick_time_ms=500, fsync=False, install=install)
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
