"""``kafkette serve`` as operators and tools use it: the ready line, configs, signals."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Producer
from kafka.protocol.metadata import MetadataRequest

from kafkette import __version__

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


def test_ready_line_then_sigterm_exits_cleanly(tmp_path, broker_process, create_topic) -> None:
    data_dir = tmp_path / "data"
    process = broker_process(data_dir)
    assert process.stdout_lines == [f"kafkette ready on 127.0.0.1:{process.port}"]
    assert process.port > 0
    # It really serves on that address.
    create_topic(process.bootstrap, 1)
    assert not (data_dir / CLEAN_SHUTDOWN_FILE).exists()

    assert process.terminate() == 0
    assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()
    # Logs go to stderr: stdout never carried more than the ready line.
    assert process.stdout_lines == [f"kafkette ready on 127.0.0.1:{process.port}"]


def test_sigterm_closes_idle_client_connections(tmp_path, broker_process, raw_client) -> None:
    data_dir = tmp_path / "data"
    process = broker_process(data_dir)
    idle = raw_client(process.bootstrap, timeout=30)
    assert process.terminate() == 0
    assert idle.is_closed_by_peer(timeout=5)
    assert (data_dir / CLEAN_SHUTDOWN_FILE).exists()


def failed_start(broker_process, tmp_path, *args: str) -> str:
    process = broker_process(tmp_path / "data", *args, ready=False)
    code = process.proc.wait(30)
    assert code != 0
    assert not any("ready" in line for line in process.stdout_lines)
    return process.stderr_text()


def test_unknown_config_name_is_refused(tmp_path, broker_process) -> None:
    message = failed_start(broker_process, tmp_path, "--config", "num.partitons=3")
    assert "unknown broker config" in message
    assert "num.partitons" in message


def test_bad_config_value_is_refused(tmp_path, broker_process) -> None:
    message = failed_start(broker_process, tmp_path, "--config", "num.partitions=three")
    assert "num.partitions" in message
    assert "three" in message


def test_config_without_equals_is_refused(tmp_path, broker_process) -> None:
    message = failed_start(broker_process, tmp_path, "--config", "num.partitions")
    assert "KEY=VALUE" in message


def auto_created_partitions(connection, topic: str) -> int:
    """Metadata with auto-creation on, as a producer sends it; the new topic's partition count."""
    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
    )
    [answer] = connection.request(request, 9).topics
    assert (answer.name, answer.error_code) == (topic, 0)
    connection.close()
    return len(answer.partitions)


def test_config_file_with_kafka_style_properties(tmp_path, broker_process, raw_client) -> None:
    log_dir = tmp_path / "from-properties"
    properties = tmp_path / "server.properties"
    properties.write_text(
        "\n".join(
            [
                "# A server.properties as Kafka's quick start lays one out.",
                "! Comments start with # or !, blank lines are skipped.",
                "",
                "process.roles=broker,controller",
                "node.id=1",
                "listeners=PLAINTEXT://:9092,CONTROLLER://:9093",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "controller.quorum.bootstrap.servers=localhost:9093",
                "num.network.threads=3",
                f"log.dirs={log_dir}",
                "num.partitions = 2",
                "log.retention.hours=168",
                "offsets.topic.replication.factor=1",
                "",
            ]
        ),
        encoding="utf-8",
    )
    # No --data-dir: log.dirs from the file decides where data goes.
    process = broker_process(None, "--config-file", str(properties))
    assert auto_created_partitions(raw_client(process.bootstrap), "auto-created") == 2
    assert process.terminate() == 0
    assert (log_dir / CLEAN_SHUTDOWN_FILE).exists()
    assert any(path.name.startswith("auto-created-") for path in log_dir.iterdir())

    # --config beats the file, as later settings do in Kafka's tools.
    again = broker_process(None, "--config-file", str(properties), "--config", "num.partitions=4")
    assert auto_created_partitions(raw_client(again.bootstrap), "auto-created-2") == 4
    assert again.terminate() == 0


def test_version_flag() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kafkette", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"kafkette {__version__}"


def _kafkette(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkette", *args], capture_output=True, text=True, timeout=30
    )


def test_a_config_file_that_cannot_be_read_is_one_line_naming_the_flag(tmp_path) -> None:
    missing = tmp_path / "missing.properties"
    result = _kafkette("serve", "--config-file", str(missing), "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert result.stderr == f"kafkette: --config-file {missing}: No such file or directory\n"


def test_cluster_with_no_brokers_is_a_usage_error() -> None:
    result = _kafkette("cluster", "--brokers", "0")
    assert result.returncode == 2
    assert "argument --brokers: a cluster has at least 1 broker, not 0" in result.stderr


# --- serve --temp: a throwaway data dir --------------------------------------------------------


def temp_dirs(root: Path) -> list[Path]:
    return sorted(root.glob("kafkette-temp-*"))


def test_temp_data_dir_is_named_in_the_log_and_removed_after_sigterm(
    tmp_path, broker_process, monkeypatch
) -> None:
    """``--temp``: the data lives under the system temp dir ($TMPDIR here) while the broker
    runs, the log says where and that it goes, and a clean stop removes it."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    process = broker_process(None, "--temp")
    [data_dir] = temp_dirs(system_tmp)
    assert f"--temp: data in {data_dir}, removed when the broker stops" in process.stderr_text()

    producer = Producer({"bootstrap.servers": process.bootstrap, "linger.ms": 0})
    producer.produce("temp-demo", b"hello")
    assert producer.flush(30) == 0
    del producer  # closed now, not reconnecting to the stopped broker
    assert (data_dir / "temp-demo-0").is_dir()

    assert process.terminate() == 0
    assert not data_dir.exists()
    assert list(system_tmp.iterdir()) == []
    assert f"removed the temporary data dir {data_dir}" in process.stderr_text()


def test_temp_data_dir_is_removed_when_the_start_fails(
    tmp_path, broker_process, monkeypatch
) -> None:
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = broker_process(None, "--temp", "--listen", f"127.0.0.1:{port}", ready=False)
        code, lines = process.wait_exit(30)
    assert code == 1
    assert f"kafkette: cannot listen on 127.0.0.1:{port}: address already in use" in lines
    # It was made (and said so), then removed.
    made = f"--temp: data in {system_tmp}/kafkette-temp-"
    assert any(made in line for line in lines), lines
    assert any("removed the temporary data dir" in line for line in lines), lines
    assert list(system_tmp.iterdir()) == []


def test_temp_and_data_dir_together_are_a_usage_error(tmp_path) -> None:
    result = _kafkette("serve", "--temp", "--data-dir", str(tmp_path / "d"))
    assert result.returncode == 2
    assert "argument --data-dir: not allowed with argument --temp" in result.stderr
    assert not (tmp_path / "d").exists()
