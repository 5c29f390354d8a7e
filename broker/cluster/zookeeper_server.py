"""A throwaway standalone ZooKeeper from the installed package, for local clusters and tests.

kafkette coordinates a cluster through ZooKeeper and does not ship one: it runs
the server the machine has (Debian's ``zookeeper`` package puts
``/usr/share/java/zookeeper.jar`` there, whose manifest names its dependencies;
an Apache tarball has ``$ZOOKEEPER_HOME/lib/*.jar``). ``kafkette cluster`` and
the cluster tests start it the same way, through this module, so that what the
tests exercise is what a developer runs.

The server is a child process: ``java ... QuorumPeerMain zoo.cfg`` with a
``zoo.cfg`` written into its own directory (``tickTime``, ``dataDir``,
``clientPort`` on 127.0.0.1, the admin HTTP server off, only ``ruok`` among the
four-letter words). It is ready when it answers ``ruok`` with ``imok``. Its log
goes to ``zookeeper.log`` beside ``zoo.cfg``, never to our stdout. Stopping is
SIGTERM, then SIGKILL after a grace period.

Both a blocking API (``start``/``stop``, for pytest fixtures) and a Trio one
(``start_async``/``stop_async``, for the launcher) are given; the Trio one waits
with ``trio.sleep`` and runs each short blocking step in a worker thread.
Nothing here imports kazoo: the readiness probe is one socket exchange.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

INSTALL_HINT = (
    "ZooKeeper is not installed: install it with `apt-get install zookeeper` "
    "(or set ZOOKEEPER_HOME to an Apache ZooKeeper directory)"
)
# Where packages put ZooKeeper's jars when ZOOKEEPER_HOME does not say.
DEFAULT_JAR_DIRS = (
    Path("/usr/share/java"),  # Debian, Ubuntu
    Path("/usr/share/zookeeper/lib"),
    Path("/usr/lib/zookeeper/lib"),
    Path("/opt/zookeeper/lib"),
)
SERVER_JAR = re.compile(r"zookeeper-\d[\d.]*\.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# A small heap and the serial collector: a test server holds a few hundred znodes,
# and on a shared two-core machine fewer GC threads start faster.
JVM_FLAGS = (
    "-Xms32m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
    "-Dzookeeper.jmx.log4j.disable=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
)
STOP_GRACE_SECONDS = 10.0
PROBE_TIMEOUT_SECONDS = 1.0
PROBE_INTERVAL_SECONDS = 0.1
LOG_TAIL_LINES = 20


class ZooKeeperNotInstalled(RuntimeError):
    """No ZooKeeper jar or no java: the message is one line saying how to install it."""


class ZooKeeperStartError(RuntimeError):
    """The server exited or did not answer ``ruok`` in time; the message ends with its log tail."""


@dataclass(frozen=True)
class ZooKeeperInstall:
    """What it takes to run the installed server: the java binary and a classpath."""

    java: str
    classpath: tuple[str, ...]

    def command(self, config_path: Path) -> list[str]:
        return [self.java, *JVM_FLAGS, "-cp", os.pathsep.join(self.classpath), MAIN_CLASS,
                str(config_path)]


def find_zookeeper(
    jar_dirs: Sequence[Path] | None = None, environ: dict[str, str] | None = None
) -> ZooKeeperInstall:
    """The installed ZooKeeper, or ZooKeeperNotInstalled naming ``apt-get install zookeeper``.

    ``ZOOKEEPER_HOME`` (its ``lib`` folder, or the folder itself) is searched
    alone when set: an operator who names a location means that one. The java
    binary is ``$JAVA_HOME/bin/java`` or the first ``java`` on ``PATH``.
    """
    env = os.environ if environ is None else environ
    if jar_dirs is None:
        home = env.get("ZOOKEEPER_HOME")
        jar_dirs = (Path(home) / "lib", Path(home)) if home else DEFAULT_JAR_DIRS
    classpath = _classpath(jar_dirs)
    if classpath is None:
        searched = ", ".join(str(d) for d in jar_dirs)
        raise ZooKeeperNotInstalled(f"{INSTALL_HINT}; no zookeeper jar in {searched}")
    java = _java(env)
    if java is None:
        raise ZooKeeperNotInstalled(
            "ZooKeeper needs java, which was not found on PATH or in JAVA_HOME: "
            "install it with `apt-get install zookeeper` (it pulls in a Java runtime)"
        )
    return ZooKeeperInstall(java, classpath)


def _classpath(jar_dirs: Iterable[Path]) -> tuple[str, ...] | None:
    for folder in jar_dirs:
        jar = _server_jar(folder)
        if jar is None:
            continue
        if _manifest_class_path(jar):
            # Debian: the jar's manifest names its dependencies in /usr/share/java. Add
            # slf4j's simple binding when it is there, so the server logs (to its log file).
            simple = folder / "slf4j-simple.jar"
            return (str(jar), str(simple)) if simple.is_file() else (str(jar),)
        return (str(folder / "*"),)  # a tarball's lib/: every jar beside it
    return None


def _server_jar(folder: Path) -> Path | None:
    """``zookeeper.jar`` or ``zookeeper-3.x.y.jar`` (not -jute, -recipes, -it, ...)."""
    plain = folder / "zookeeper.jar"
    if plain.is_file():
        return plain
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    versioned = [name for name in names if SERVER_JAR.fullmatch(name)]
    return folder / versioned[-1] if versioned else None


def _manifest_class_path(jar: Path) -> bool:
    try:
        with zipfile.ZipFile(jar) as archive:
            manifest = archive.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    return "\nClass-Path:" in "\n" + manifest


def _java(env: os._Environ[str] | dict[str, str]) -> str | None:
    java_home = env.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java", path=env.get("PATH", os.defpath))


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host``."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def ruok(host: str, port: int, timeout: float = PROBE_TIMEOUT_SECONDS) -> bool:
    """True if a ZooKeeper server at host:port answers ``ruok`` with ``imok`` now."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"ruok")
            answer = b""
            while len(answer) < 4:
                chunk = sock.recv(4 - len(answer))
                if not chunk:
                    break
                answer += chunk
    except OSError:
        return False
    return answer == b"imok"


class ZooKeeperServer:
    """One standalone ZooKeeper server in a child process, its files under ``directory``.

    ``directory`` holds ``zoo.cfg``, ``zookeeper.log`` and the ``data`` folder; a
    server started again on the same directory finds its znodes. ``port=0``
    picks a free port (and another one if that port was taken meanwhile).
    ``fsync=False`` (``forceSync=no``) suits throwaway test servers only.
    ``own_session`` runs it in its own session (out of the terminal's Ctrl-C).
    """

    def __init__(
        self,
        directory: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tick_time_ms: int = 2000,
        max_session_timeout_ms: int = 60_000,
        fsync: bool = True,
        own_session: bool = True,
        install: ZooKeeperInstall | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.host = host
        self.port = port
        self._fixed_port = port != 0
        self.tick_time_ms = tick_time_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.fsync = fsync
        self.own_session = own_session
        self._install = install
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect_string(self) -> str:
        """``host:port``, what ``zookeeper.connect`` takes (a chroot may follow)."""
        return f"{self.host}:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.directory / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    # --- blocking API -----------------------------------------------------------

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        """Launch and wait for ``imok``; ZooKeeperNotInstalled or ZooKeeperStartError."""
        deadline = time.monotonic() + timeout
        for attempt in range(3):
            self.launch()
            while not self._probe_once():
                if self._exited():
                    break
                if time.monotonic() > deadline:
                    self.stop()
                    raise ZooKeeperStartError(self._failure(f"no imok within {timeout:g}s"))
                time.sleep(PROBE_INTERVAL_SECONDS)
            else:
                return self
            if not self._retry_port(attempt):
                raise ZooKeeperStartError(self._failure("the server exited"))
        raise AssertionError("unreachable")  # pragma: no cover

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """SIGTERM, SIGKILL after ``grace`` seconds; returns the exit code (None if never run)."""
        process = self.process
        if process is None:
            return None
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        return process.returncode

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- Trio API ---------------------------------------------------------------

    async def start_async(self, timeout: float = 60.0) -> ZooKeeperServer:
        """``start`` for Trio: sleeps with trio between probes, each probe in a thread."""
        import trio

        with trio.move_on_after(timeout):
            for attempt in range(3):
                await trio.to_thread.run_sync(self.launch)
                while not await trio.to_thread.run_sync(self._probe_once):
                    if self._exited():
                        break
                    await trio.sleep(PROBE_INTERVAL_SECONDS)
                else:
                    return self
                if not self._retry_port(attempt):
                    raise ZooKeeperStartError(self._failure("the server exited"))
        await self.stop_async()
        raise ZooKeeperStartError(self._failure(f"no imok within {timeout:g}s"))

    async def stop_async(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """``stop`` in a worker thread; shielded, so a cancelled caller never leaks the JVM."""
        import trio

        with trio.CancelScope(shield=True):
            return await trio.to_thread.run_sync(self.stop, grace)

    # --- steps ------------------------------------------------------------------

    def launch(self) -> None:
        """Write ``zoo.cfg`` and start the JVM; returns at once (``start`` waits)."""
        install = self._install or find_zookeeper()
        self._install = install
        if not self._fixed_port and not self.port:
            self.port = free_port(self.host)
        data_dir = self.directory / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self._config_text(data_dir), encoding="utf-8")
        with self.log_path.open("ab") as log_file:
            self.process = subprocess.Popen(
                install.command(self.config_path),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
                # A Ctrl-C at the terminal then reaches the launcher only, which stops the
                # brokers before ZooKeeper. Tests keep it in their process group instead, so
                # that killing the group (a CI timeout) leaves no JVM behind.
                start_new_session=self.own_session,
            )

    def _config_text(self, data_dir: Path) -> str:
        lines = {
            "tickTime": str(self.tick_time_ms),
            "dataDir": str(data_dir.resolve()),
            "clientPort": str(self.port),
            "clientPortAddress": self.host,
            "maxClientCnxns": "0",
            "minSessionTimeout": str(2 * self.tick_time_ms),
            "maxSessionTimeout": str(self.max_session_timeout_ms),
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok",
            "forceSync": "yes" if self.fsync else "no",
        }
        return "".join(f"{key}={value}\n" for key, value in lines.items())

    def _probe_once(self) -> bool:
        return ruok(self.host, self.port)

    def _exited(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def _retry_port(self, attempt: int) -> bool:
        """After an exit: with a port we picked that someone else took, pick another."""
        if self._fixed_port or attempt == 2 or "Address already in use" not in self.log_tail():
            return False
        self.port = 0
        return True

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server's log, for error messages."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])

    def _failure(self, what: str) -> str:
        code = self.process.poll() if self.process else None
        return (
            f"ZooKeeper on {self.connect_string} did not start: {what} (exit code {code}); "
            f"log {self.log_path}:\n{self.log_tail()}"
        )
