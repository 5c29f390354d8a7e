"""Joining and leaving a cluster: refusals at start, a session that expires, and what
brokers must not decide alone (producer ids).

A broker that cannot reach ZooKeeper, whose id is held by a live broker, or
whose data dir belongs to another cluster stops with one line naming why (Kafka's
messages). A broker frozen (SIGSTOP) past ``zookeeper.session.timeout.ms`` loses
its session: the others see it gone; thawed, it opens a new session, registers
again and is part of the cluster once more.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cluster import zk_wire

FAILOVER_TIMEOUT_S = 45


def _serve(data_dir: Path, *configs: str, timeout: float = 90) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0",
               "--data-dir", str(data_dir)]
    for config in configs:
        command += ["--config", config]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def _last_line(result: subprocess.CompletedProcess) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_zookeeper_unreachable_stops_the_start_with_one_line(tmp_path) -> None:
    result = _serve(
        tmp_path / "data", "broker.id=1", "zookeeper.connect=127.0.0.1:1/nowhere",
        "zookeeper.connection.timeout.ms=1500",
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert _last_line(result).startswith("kafkette: cannot reach ZooKeeper at 127.0.0.1:1")
    assert not (tmp_path / "data" / "topics.json").exists()  # no log was opened


def test_broker_id_held_by_a_live_broker_is_refused(cluster, tmp_path) -> None:
    built = cluster(1)
    result = _serve(
        tmp_path / "second", "broker.id=1", f"zookeeper.connect={built.zookeeper_connect}",
        "zookeeper.session.timeout.ms=6000",
    )
    assert result.returncode == 1
    line = _last_line(result)
    assert "Error while creating ephemeral at /brokers/ids/1, node already exists" in line
    # The first broker is untouched.
    assert [b[0] for b in zk_wire.metadata(built.brokers[1].address, [])["brokers"]] == [1]


def test_data_dir_of_another_cluster_is_refused(cluster, zookeeper) -> None:
    built = cluster(1)
    assert built.stop(1) == 0
    data_dir = built.brokers[1].data_dir
    result = _serve(
        data_dir, "broker.id=1", f"zookeeper.connect={zookeeper.connect_string}/another-cluster",
    )
    assert result.returncode == 1
    assert "doesn't match stored clusterId" in _last_line(result)
    assert "trying to join the wrong cluster" in _last_line(result)


def test_frozen_past_the_session_timeout_the_broker_registers_again(cluster, wait_until) -> None:
    built = cluster(3)

    def brokers_seen(address):
        view = zk_wire.metadata(address, [])
        return [b[0] for b in view["brokers"]], view["controller_id"]

    controller = wait_until(lambda: brokers_seen(built.brokers[1].address))[1]
    frozen = next(b for b in (1, 2, 3) if b != controller)
    built.freeze(frozen)
    survivors = [b for b in (1, 2, 3) if b != frozen]
    wait_until(
        lambda: all(
            brokers_seen(built.brokers[s].address)[0] == survivors for s in survivors
        ),
        timeout=FAILOVER_TIMEOUT_S, what="the frozen broker's registration expired",
    )
    built.thaw(frozen)
    wait_until(
        lambda: all(
            brokers_seen(built.brokers[b].address) == ([1, 2, 3], controller)
            for b in (1, 2, 3)
        ),
        timeout=FAILOVER_TIMEOUT_S, what="the thawed broker registered again",
    )


def test_producer_ids_are_unique_across_the_cluster(cluster) -> None:
    """Idempotent producers connected to different brokers never share an id: blocks of
    1000 are claimed from /latest_producer_id_block, as Kafka's brokers claim them."""
    built = cluster(3)
    ids = []
    for _ in range(3):
        for broker in built.brokers.values():
            error, producer_id = zk_wire.init_producer_id(broker.address)
            assert error == 0
            ids.append(producer_id)
    assert len(set(ids)) == len(ids), ids
    block = json.loads(built.zk().get("/latest_producer_id_block")[0])
    assert block["version"] == 1 and block["broker"] in (1, 2, 3)
    assert int(block["block_end"]) - int(block["block_start"]) == 999
    assert int(block["block_end"]) == 2999  # three brokers, one block each


def test_advertised_listeners_is_what_the_cluster_is_told(cluster) -> None:
    # Port 0: the bound port, as with --advertised-listener.
    built = cluster(1, broker_configs={1: {"advertised.listeners": "PLAINTEXT://localhost:0"}})
    broker = built.brokers[1]
    assert zk_wire.metadata(broker.address, [])["brokers"] == [
        (1, "localhost", broker.port, None)
    ]
    registration = json.loads(built.zk().get("/brokers/ids/1")[0])
    assert registration["endpoints"] == [f"PLAINTEXT://localhost:{broker.port}"]
