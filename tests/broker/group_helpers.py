"""Helpers for the consumer-group end-to-end tests: broker and consumer processes.

Two halves live here:

- ``python group_helpers.py consume SPEC_JSON`` is a *consumer process*: one real
  kafka-python or confluent-kafka consumer in a group, subscribed to one topic.
  It prints one JSON object per line on stdout (``assignment``, ``rebalance``,
  ``records``, ``error``) and stops gracefully (``close()``) when its stdin says
  ``stop`` or closes. Consumers run as processes so a test can ``kill -9`` one.
- The test side: ``ConsumerProcess`` (start, watch, stop, kill a consumer
  process), ``GroupBroker`` (``kafkette serve`` on a chosen port, restartable on
  the same data dir), and small bounded waits.

Test modules import it (``from tests.broker import group_helpers``); the consumer
processes run it as a script, so the test side's imports of ``bench`` wait until a
test uses them. Nothing here waits without a deadline.
"""

from __future__ import annotations

import contextlib
import faulthandler
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve()

# --- consumer process side ----------------------------------------------------------------------


def _emit(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _emit_rebalance(kind: str, partitions: list) -> None:
    _emit({"ev": "rebalance", "kind": kind, "partitions": sorted(p.partition for p in partitions)})


def _watch_stdin(stop: threading.Event) -> None:
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    stop.set()


def _run_kafka_python(spec: dict, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.errors import KafkaConnectionError

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked) -> None:
            _emit_rebalance("revoke", revoked)

        def on_partitions_assigned(self, assigned) -> None:
            _emit_rebalance("assign", assigned)

    auto = spec["auto_commit"]
    consumer = KafkaConsumer(
        bootstrap_servers=spec["bootstrap"],
        group_id=spec["group"],
        client_id=spec.get("client_id", "kafkette-group-e2e"),
        auto_offset_reset="earliest",
        enable_auto_commit=auto,
        auto_commit_interval_ms=300,
        session_timeout_ms=spec["session_timeout_ms"],
        heartbeat_interval_ms=spec["heartbeat_interval_ms"],
        max_poll_interval_ms=spec["max_poll_interval_ms"],
        fetch_max_wait_ms=100,
        **spec.get("extra", {}),
    )
    # A pattern, not a topic list: kafka-python then refreshes metadata before each join.
    # With a plain list the leader can assign before its metadata snapshot has the topic
    # (likely with group.initial.rebalance.delay.ms=0) and rejoin when the snapshot changes;
    # kafka-python 3.0.12 loses that rejoin if poll()'s timeout expires between the leader's
    # assignment and the SyncGroup answer (need_rejoin() already reads False, so the finished
    # join is never applied: no assignment, no heartbeats). A client race, not the broker's.
    consumer.subscribe(pattern=f"^{re.escape(spec['topic'])}$", listener=Listener())
    last: list[int] | None = None
    try:
        while not stop.is_set():
            try:
                batches = consumer.poll(timeout_ms=200)
            except KafkaConnectionError as exc:
                # kafka-python 3.0.12 raises a refused connection out of poll() while the
                # broker restarts; an application retries, and so does this one.
                _emit({"ev": "error", "error": f"poll: {exc!r}"})
                time.sleep(0.1)
                continue
            items = [
                [r.partition, r.offset, r.value.decode()]
                for records in batches.values()
                for r in records
            ]
            if items and not auto:
                try:
                    consumer.commit()
                except Exception as exc:  # CommitFailedError etc.: report, keep consuming
                    _emit({"ev": "error", "error": f"commit: {exc!r}"})
            if items:
                _emit({"ev": "records", "items": items})
            current = sorted(p.partition for p in consumer.assignment())
            if current != last:
                last = current
                _emit({"ev": "assignment", "partitions": current})
    finally:
        consumer.close()


def _run_confluent(spec: dict, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaError, KafkaException

    config = {
        "bootstrap.servers": spec["bootstrap"],
        "group.id": spec["group"],
        "client.id": spec.get("client_id", "kafkette-group-e2e"),
        "auto.offset.reset": "earliest",
        "enable.auto.commit": spec["auto_commit"],
        "auto.commit.interval.ms": 300,
        "session.timeout.ms": spec["session_timeout_ms"],
        "heartbeat.interval.ms": spec["heartbeat_interval_ms"],
        "max.poll.interval.ms": spec["max_poll_interval_ms"],
        "fetch.wait.max.ms": 100,
        **spec.get("extra", {}),
    }
    for name in spec.get("unset", ()):  # group.protocol=consumer refuses classic-only settings
        config.pop(name, None)
    consumer = Consumer(config)

    def on_assign(_consumer, partitions) -> None:
        _emit_rebalance("assign", partitions)

    def on_revoke(_consumer, partitions) -> None:
        _emit_rebalance("revoke", partitions)

    consumer.subscribe([spec["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    last: list[int] | None = None
    try:
        while not stop.is_set():
            items = []
            for message in consumer.consume(500, 0.2):
                error = message.error()
                if error is not None:
                    _emit({"ev": "error", "error": str(error)})
                    continue
                items.append([message.partition(), message.offset(), message.value().decode()])
            if items and not spec["auto_commit"]:
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException as exc:
                    if exc.args[0].code() != KafkaError._NO_OFFSET:
                        _emit({"ev": "error", "error": f"commit: {exc}"})
            if items:
                _emit({"ev": "records", "items": items})
            current = sorted(p.partition for p in consumer.assignment())
            if current != last:
                last = current
                _emit({"ev": "assignment", "partitions": current, "member": consumer.memberid()})
    finally:
        consumer.close()


def consumer_main(spec_json: str) -> int:
    spec = json.loads(spec_json)
    faulthandler.register(signal.SIGUSR1)  # ``dump_stacks``: where a stuck client waits
    if os.environ.get("KAFKETTE_E2E_CLIENT_DEBUG"):  # the client library's own log, to stderr
        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(name)s %(message)s")
    stop = threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    run = _run_kafka_python if spec["client"] == "kafka-python" else _run_confluent
    _emit({"ev": "started", "pid": os.getpid()})
    run(spec, stop)
    _emit({"ev": "closed"})
    return 0


# --- test side: waiting -------------------------------------------------------------------------


def wait_until(
    condition: Callable[[], bool], timeout: float, what: Callable[[], str] | str
) -> None:
    """Poll ``condition`` every 50 ms; fail with ``what`` (a string or a thunk) at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            message = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for: {message}")
        time.sleep(0.05)


# --- test side: the broker ----------------------------------------------------------------------


class GroupBroker:
    """``kafkette serve`` on 127.0.0.1:``port`` with ``data_dir``; ``restart`` keeps both.

    Each start logs to its own file in ``log_dir`` (``log_text()`` reads the current one).
    """

    def __init__(self, data_dir: Path, log_dir: Path, configs: dict[str, str], port: int = 0):
        from bench.harness.raw_wire import free_port

        self.data_dir = data_dir
        self.log_dir = log_dir
        self.configs = configs
        self.port = port or free_port()
        self.starts = 0
        self.serve = None  # the current ServeProcess

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> GroupBroker:
        from bench.harness.serve_process import ServeProcess, serve_args

        self.starts += 1
        log_level = os.environ.get("KAFKETTE_E2E_LOG_LEVEL", "INFO")
        args = serve_args(self.data_dir, self.bootstrap, self.configs)
        self.serve = ServeProcess([*args, "--log-level", log_level],
                                  self.log_dir / f"broker-{self.starts}.log")
        self.serve.wait_ready(timeout)
        return self

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, the graceful stop; returns the exit code."""
        assert self.serve is not None
        return self.serve.terminate(timeout)

    def kill(self) -> None:
        if self.serve is not None:
            self.serve.kill()

    def log_text(self, last_lines: int = 60) -> str:
        return "" if self.serve is None else self.serve.log_tail(last_lines)


# --- test side: consumer processes --------------------------------------------------------------


@dataclass
class Consumed:
    partition: int
    offset: int
    value: str


@dataclass
class ConsumerProcess:
    """One consumer process and what it reported so far (updated by a reader thread)."""

    name: str
    spec: dict
    proc: subprocess.Popen[str]
    assignment: list[int] | None = None
    member_id: str | None = None
    records: list[Consumed] = field(default_factory=list)
    rebalances: list[tuple[str, list[int]]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, name: str, stderr_dir: Path, **spec: object) -> ConsumerProcess:
        stderr = (stderr_dir / f"consumer-{name}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, str(HERE), "consume", json.dumps(spec)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        stderr.close()
        consumer = cls(name, dict(spec), proc)
        threading.Thread(target=consumer._read, daemon=True).start()
        return consumer

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                kind = event["ev"]
                if kind == "assignment":
                    self.assignment = event["partitions"]
                    self.member_id = event.get("member", self.member_id)
                elif kind == "records":
                    self.records.extend(Consumed(*item) for item in event["items"])
                elif kind == "rebalance":
                    self.rebalances.append((event["kind"], event["partitions"]))
                elif kind == "error":
                    self.errors.append(event["error"])
                elif kind == "closed":
                    self.closed = True

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def values(self) -> list[str]:
        with self.lock:
            return [r.value for r in self.records]

    def partitions(self) -> list[int]:
        with self.lock:
            return list(self.assignment or [])

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful: ``close()`` in the consumer (commit if auto, LeaveGroup)."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.write("stop\n")
                self.proc.stdin.flush()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise AssertionError(f"consumer {self.name} did not close in {timeout}s") from None

    def dump_stacks(self) -> None:
        """Ask a live consumer to write its threads' stacks to its stderr log."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGUSR1)

    def kill(self) -> None:
        """``kill -9``: no LeaveGroup, no commit; the broker finds out by the session timeout."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def describe(self) -> str:
        with self.lock:
            return (
                f"{self.name}(alive={self.alive}, assignment={self.assignment}, "
                f"records={len(self.records)}, rebalances={self.rebalances[-4:]}, "
                f"errors={self.errors[-3:]})"
            )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "consume":
        sys.exit(consumer_main(sys.argv[2]))
    sys.exit("usage: group_helpers.py consume SPEC_JSON")
