"""``kafkette cluster``: a ZooKeeper and N brokers on this machine, one command, one ready line.

For developers and tests who want replication and failover without writing
configs: it starts the installed ZooKeeper (unless ``--zookeeper`` names one),
then N ``kafkette serve`` processes with ``broker.id`` 1..N, free ports on
127.0.0.1 and data dirs ``DIR/broker-N``. Once every broker printed its own
``kafkette ready on HOST:PORT`` line and lists all N brokers in its Metadata
answers, it prints exactly one line on stdout,
``kafkette cluster ready on HOST:PORT,HOST:PORT,...`` (tools wait for it), and
nothing else there: broker logs go to stderr, each line prefixed with
``[broker N]``; ZooKeeper logs to ``DIR/zookeeper/zookeeper.log``. With
``--schema-registry`` every broker also serves a schema registry on a free port; their
URLs go to stderr (``kafkette cluster: schema registry on http://...,...``) just
before the ready line.

The brokers are plain ``kafkette serve`` processes: killing one (``kill -9``) is
how a developer tries failover, so a broker that dies after the ready line is
reported on stderr and the rest keep running. One that dies before it stops the
start. On SIGINT or SIGTERM the brokers are stopped first, one at a time (SIGTERM,
SIGKILL after a grace), then ZooKeeper, so brokers deregister while it still runs.
Children run in their own sessions: a Ctrl-C at the terminal reaches this
process only, which stops them in that order.

``DIR`` is locked for the launcher's life (``DIR/.lock``), so two launchers never
share a ZooKeeper data dir; each broker locks its own dir as usual.
"""

from __future__ import annotations

import logging
import re
import signal
import struct
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import trio

from kafkette.broker.cluster.zookeeper_server import ZooKeeperServer, find_zookeeper, free_port
from kafkette.log.dir_lock import DirLock

log = logging.getLogger("kafkette.cluster")

DEFAULT_DATA_DIR = Path("kafkette-cluster-data")
HOST = "127.0.0.1"
READY_LINE = re.compile(r"^kafkette ready on (\S+:\d+)$")
BROKER_READY_TIMEOUT_SECONDS = 120.0
METADATA_API_KEY = 3
ZOOKEEPER_START_TIMEOUT_SECONDS = 120.0
# A broker's own shutdown grace is 10 s plus flushing; controlled shutdown adds moves.
BROKER_STOP_GRACE_SECONDS = 30.0
# Per-broker settings the launcher gives; the same value for every broker would be wrong.
LAUNCHER_CONFIGS = frozenset({"broker.id", "node.id", "zookeeper.connect"})


class ClusterStartError(Exception):
    """The cluster cannot start; the message is one line for the operator."""


@dataclass(frozen=True)
class LocalClusterSpec:
    """What ``kafkette cluster`` was asked for."""

    brokers: int
    data_dir: Path = DEFAULT_DATA_DIR
    zookeeper: str | None = None  # host:port[/chroot]; None: start the installed one
    configs: Mapping[str, str] = field(default_factory=dict)  # to every broker
    log_level: str = "INFO"
    schema_registry: bool = False  # a registry on every broker (--schema-registry-listen)


@dataclass
class BrokerChild:
    """One ``kafkette serve`` child and what it reported."""

    broker_id: int
    port: int
    data_dir: Path
    process: trio.Process | None = None
    address: str | None = None
    ready: trio.Event = field(default_factory=trio.Event)
    exited: trio.Event = field(default_factory=trio.Event)
    last_line: str = ""
    stopping: bool = False  # we sent SIGTERM: its exit is no news
    registry_port: int | None = None  # its schema registry's port, when asked for

    @property
    def registry_url(self) -> str | None:
        return None if self.registry_port is None else f"http://{HOST}:{self.registry_port}"

    def command(self, zookeeper_connect: str, spec: LocalClusterSpec) -> list[str]:
        props = {
            "broker.id": str(self.broker_id),
            "zookeeper.connect": zookeeper_connect,
            # Kafka refuses to create the internal topics with fewer live brokers than
            # their replication factor; a small local cluster sizes them to itself.
            "offsets.topic.replication.factor": str(min(spec.brokers, 3)),
            "transaction.state.log.replication.factor": str(min(spec.brokers, 3)),
            "transaction.state.log.min.isr": str(min(spec.brokers, 2)),
            **spec.configs,
        }
        registry = []
        if self.registry_port is not None:
            registry = ["--schema-registry-listen", f"{HOST}:{self.registry_port}"]
        return [
            sys.executable, "-m", "kafkette", "serve",
            "--listen", f"{HOST}:{self.port}",
            "--data-dir", str(self.data_dir),
            "--log-level", spec.log_level,
            *registry,
            *(arg for key, value in props.items() for arg in ("--config", f"{key}={value}")),
        ]


async def run_local_cluster(
    spec: LocalClusterSpec,
    *,
    announce: Callable[[str], None] | None = None,
    stderr: TextIO | None = None,
) -> None:
    """Start everything, ``announce`` the ready line, run until SIGINT/SIGTERM, stop all.

    Raises ``ClusterStartError`` (or ``ZooKeeperNotInstalled``) when the start fails;
    everything started so far is stopped first.
    """
    if spec.brokers < 1:
        raise ClusterStartError(f"--brokers must be at least 1, not {spec.brokers}")
    owned = sorted(set(spec.configs) & LAUNCHER_CONFIGS)
    if owned:
        raise ClusterStartError(
            f"--config {', '.join(owned)}: kafkette cluster sets these itself "
            "(broker ids 1..N, --zookeeper for the ZooKeeper)"
        )
    announce = announce or _print_ready
    out = stderr or sys.stderr
    data_dir = spec.data_dir.resolve()
    lock = _lock(data_dir)
    try:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            await _run(spec, data_dir, signals, announce, out)
    finally:
        lock.release()


def _lock(data_dir: Path) -> DirLock:
    from kafkette.log.dir_lock import DataDirError

    try:
        return DirLock.acquire(data_dir)
    except DataDirError as exc:
        raise ClusterStartError(str(exc).replace("another broker", "another process")) from None


async def _run(
    spec: LocalClusterSpec, data_dir: Path, signals: trio.abc.AsyncIterator[int],
    announce: Callable[[str], None], out: TextIO,
) -> None:
    zookeeper: ZooKeeperServer | None = None
    children = [
        BrokerChild(
            i,
            free_port(HOST),
            data_dir / f"broker-{i}",
            registry_port=free_port(HOST) if spec.schema_registry else None,
        )
        for i in range(1, spec.brokers + 1)
    ]
    try:
        if spec.zookeeper is None:
            zookeeper = ZooKeeperServer(data_dir / "zookeeper", install=find_zookeeper())
            _say(out, f"starting ZooKeeper (log: {zookeeper.log_path})")
            await zookeeper.start_async(ZOOKEEPER_START_TIMEOUT_SECONDS)
            connect = zookeeper.connect_string
        else:
            connect = spec.zookeeper
        _say(out, f"ZooKeeper on {connect}; starting {spec.brokers} broker(s)")
        async with trio.open_nursery() as nursery:
            try:
                for child in children:
                    await _start_child(nursery, child, connect, spec, out)
                await _wait_all_ready(children, signals)
                if any(not child.ready.is_set() for child in children):
                    return  # interrupted during the start
                if spec.schema_registry:
                    urls = ",".join(child.registry_url or "" for child in children)
                    _say(out, f"schema registry on {urls}")
                announce(",".join(child.address or "" for child in children))
                async for signum in signals:
                    _say(out, f"received {signal.Signals(signum).name}: stopping the cluster")
                    break
            finally:
                with trio.CancelScope(shield=True):
                    await _stop_children(children, out)
                nursery.cancel_scope.cancel()
    finally:
        if zookeeper is not None:
            await zookeeper.stop_async()


async def _start_child(
    nursery: trio.Nursery, child: BrokerChild, connect: str, spec: LocalClusterSpec, out: TextIO
) -> None:
    child.data_dir.mkdir(parents=True, exist_ok=True)
    child.process = await trio.lowlevel.open_process(
        child.command(connect, spec),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    nursery.start_soon(_pump, child, child.process.stdout, out, True)
    nursery.start_soon(_pump, child, child.process.stderr, out, False)
    nursery.start_soon(_watch_exit, child, out)


async def _pump(
    child: BrokerChild, stream: trio.abc.ReceiveStream | None, out: TextIO, is_stdout: bool
) -> None:
    """Forward a child's lines to our stderr, prefixed; spot its ready line on stdout."""
    if stream is None:
        return
    prefix = f"[broker {child.broker_id}] "
    pending = b""
    async for chunk in stream:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            match = READY_LINE.match(line) if is_stdout else None
            if match and not child.ready.is_set():
                child.address = match.group(1)
                child.ready.set()
            else:
                child.last_line = line or child.last_line
            out.write(prefix + line + "\n")
        out.flush()
    if pending:
        out.write(prefix + pending.decode("utf-8", "replace") + "\n")
        out.flush()


async def _watch_exit(child: BrokerChild, out: TextIO) -> None:
    assert child.process is not None
    code = await child.process.wait()
    child.exited.set()
    if child.ready.is_set() and not child.stopping:
        _say(out, f"broker {child.broker_id} exited with code {code}")


async def _wait_all_ready(
    children: Sequence[BrokerChild], signals: trio.abc.AsyncIterator[int]
) -> None:
    """Every broker ready; ClusterStartError if one exits first or the deadline passes.

    A signal meanwhile ends the wait early (the caller sees not every child ready).
    """
    async with trio.open_nursery() as nursery:
        async def stop_on_signal() -> None:
            async for _ in signals:
                nursery.cancel_scope.cancel()
                return

        nursery.start_soon(stop_on_signal)
        with trio.move_on_after(BROKER_READY_TIMEOUT_SECONDS) as timer:
            for child in children:
                await _ready_or_exit(child)
            await _wait_same_view(children)
        if timer.cancelled_caught:
            slow = [c.broker_id for c in children if not c.ready.is_set()]
            if slow:
                raise ClusterStartError(
                    f"broker(s) {slow} did not print their ready line within "
                    f"{BROKER_READY_TIMEOUT_SECONDS:g}s"
                )
            raise ClusterStartError(
                f"the brokers did not all list each other in Metadata within "
                f"{BROKER_READY_TIMEOUT_SECONDS:g}s"
            )
        nursery.cancel_scope.cancel()


async def _ready_or_exit(child: BrokerChild) -> None:
    async with trio.open_nursery() as nursery:
        async def on_ready() -> None:
            await child.ready.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(on_ready)
        await child.exited.wait()
        if not child.ready.is_set():
            code = child.process.returncode if child.process else None
            raise ClusterStartError(
                f"broker {child.broker_id} exited with code {code} before it was ready: "
                f"{child.last_line}"
            )
        nursery.cancel_scope.cancel()


async def _wait_same_view(children: Sequence[BrokerChild]) -> None:
    """Until every broker's Metadata lists (at least) all N brokers.

    A broker prints its ready line once it registered in ZooKeeper; the others
    learn of it through their watches a moment later. The cluster's ready line
    waits for that, so a topic with replication factor N can be created as soon
    as it is printed.
    """
    while True:
        counts = [await _brokers_listed(child.address or "") for child in children]
        if all(count >= len(children) for count in counts):
            return
        await trio.sleep(0.1)


async def _brokers_listed(address: str) -> int:
    """How many brokers ``address`` lists in a Metadata v1 answer for no topics; -1 on
    a connection failure. Hand-encoded: the launcher loads no Kafka client."""
    host, _, port = address.rpartition(":")
    client_id = b"kafkette-cluster"
    header = struct.pack(">hhih", METADATA_API_KEY, 1, 1, len(client_id)) + client_id
    request = header + struct.pack(">i", 0)  # an empty topic list: brokers only
    try:
        with trio.fail_after(5):
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                await stream.send_all(struct.pack(">i", len(request)) + request)
                answer = b""
                while len(answer) < 12:  # size, correlation id, broker count
                    chunk = await stream.receive_some(4096)
                    if not chunk:
                        return -1
                    answer += chunk
    except (OSError, trio.TooSlowError, trio.BrokenResourceError):
        return -1
    return struct.unpack_from(">i", answer, 8)[0]


async def _stop_children(children: Sequence[BrokerChild], out: TextIO) -> None:
    """Stop the brokers one at a time, SIGKILL for one still there after the grace.

    A rolling stop, as an operator would do it: each broker's controlled shutdown
    hands its leaderships to brokers still running. Stopped all at once, they
    would all leave ZooKeeper together, nobody would be left to lead or elect, and
    each would wait out its controlled-shutdown timeout.
    """
    for child in children:
        process = child.process
        if process is None or process.returncode is not None:
            continue
        child.stopping = True
        process.send_signal(signal.SIGTERM)
        with trio.move_on_after(BROKER_STOP_GRACE_SECONDS):
            await process.wait()
        if process.returncode is None:
            _say(out, f"broker {child.broker_id} ignored SIGTERM: killing it")
            process.kill()
            await process.wait()


def _print_ready(addresses: str) -> None:
    print(f"kafkette cluster ready on {addresses}", flush=True)


def _say(out: TextIO, message: str) -> None:
    out.write(f"kafkette cluster: {message}\n")
    out.flush()
