"""Start-up failures: one line on stderr, a non-zero exit, and nobody else's data dir touched.

Each start runs ``kafkette serve`` in a subprocess, as an operator would. A broker that
owns a data dir must see nothing change in it while others fail to start on it: no
clean-shutdown marker written, no file's mtime moved.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from bench.harness.serve_process import serve_refused as serve
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.server import StartupError

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its mtime and size."""
    found = {}
    for path in [root, *root.rglob("*")]:
        stat = path.stat()
        found[str(path.relative_to(root))] = (stat.st_mtime_ns, stat.st_size)
    return found


@pytest.fixture
def owner(tmp_path, broker_process, create_topic):
    """A running broker with a topic in its data dir, and the dir's snapshot."""
    data_dir = tmp_path / "owned"
    process = broker_process(data_dir)
    create_topic(process.bootstrap, 2)
    yield process, data_dir
    assert process.terminate() == 0
    assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_second_broker_on_a_locked_dir_exits_naming_the_holder(owner) -> None:
    process, data_dir = owner
    before = snapshot(data_dir)
    code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(data_dir))
    assert code == 1
    assert lines == [
        f"kafkette: data dir {data_dir} is locked by another broker "
        f"(pid {process.proc.pid} on {socket.gethostname()})"
    ]
    assert snapshot(data_dir) == before
    assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()


def test_busy_port_is_one_line_and_touches_no_data_dir(owner, tmp_path) -> None:
    process, owned = owner
    before = snapshot(owned)
    fresh = tmp_path / "fresh"
    code, lines = serve("--listen", f"127.0.0.1:{process.port}", "--data-dir", str(fresh))
    assert code == 1
    assert lines == [f"kafkette: cannot listen on 127.0.0.1:{process.port}: address already in use"]
    # The port is checked before any log is opened: only the lock file was made.
    assert sorted(p.name for p in fresh.iterdir()) == [".lock"]
    assert snapshot(owned) == before


def test_address_not_on_this_machine(tmp_path) -> None:
    code, lines = serve("--listen", "192.0.2.1:9092", "--data-dir", str(tmp_path / "d"))
    assert code == 1
    assert lines == ["kafkette: cannot listen on 192.0.2.1:9092: cannot assign requested address"]


@pytest.mark.parametrize("port", ["99999", "65536"])
def test_port_outside_the_tcp_range_is_refused(tmp_path, port) -> None:
    code, lines = serve("--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "d"))
    assert code == 2
    assert lines == [f"kafkette: port {port} of '127.0.0.1:{port}' is outside 0-65535"]
    assert not (tmp_path / "d").exists()


def test_data_dir_that_is_a_file(tmp_path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a dir")
    code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(a_file))
    assert code == 1
    assert lines == [f"kafkette: data dir {a_file} is not a directory"]
    assert a_file.read_text() == "not a dir"


def test_data_dir_that_cannot_be_written(tmp_path) -> None:
    if os.geteuid() == 0:
        # root ignores permission bits; sysfs refuses new files even to root.
        read_only = Path("/sys/kernel")
    else:
        read_only = tmp_path / "read-only"
        read_only.mkdir()
        read_only.chmod(0o555)
    code, lines = serve("--listen", "127.0.0.1:0", "--data-dir", str(read_only))
    assert code == 1
    assert lines == [f"kafkette: cannot use data dir {read_only}: permission denied"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("num.partitions=0", "invalid value 0 for configuration num.partitions: "
         "value must be at least 1"),
        ("log.roll.hours=0", "value must be at least 1"),
        ("max.connections=-1", "value must be at least 0"),
        ("num.partitions=2147483648", "does not fit Kafka's INT type"),
        ("compression.type=brotli", "string must be one of"),
        ("log.retention.ms=0", "log.retention.ms must be unlimited (-1)"),
        ("queued.max.request.bytes=1024",
         "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"),
        ("max.connections.per.ip=0", "only if max.connections.per.ip.overrides"),
        ("connections.max.idle.ms=100", "connections.max.idle.ms must be above 100"),
        ("max.connections.per.ip.overrides=nohost", "expected HOST:COUNT"),
    ],
)
def test_configs_kafka_refuses_are_refused_at_start(tmp_path, config, message) -> None:
    code, lines = serve("--data-dir", str(tmp_path / "d"), "--config", config)
    assert code == 2
    assert len(lines) == 1
    assert lines[0].startswith("kafkette: ")
    assert message in lines[0]
    assert not (tmp_path / "d").exists()


def test_embedded_broker_on_a_locked_dir_raises_a_clear_error(tmp_path) -> None:
    data_dir = tmp_path / "data"
    with EmbeddedBroker.start(data_dir=data_dir):
        before = snapshot(data_dir)
        with pytest.raises(StartupError, match=r"is locked by another broker \(pid \d+ on "):
            EmbeddedBroker.start(data_dir=data_dir)
        assert snapshot(data_dir) == before
    assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()
    # The lock went with the broker: the dir opens again.
    with EmbeddedBroker.start(data_dir=data_dir):
        assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()
