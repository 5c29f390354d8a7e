"""What the nemesis client scripts share: argv, JSON lines, SIGTERM and a bounded exit.

Each script (``group_consumer``, ``txn_transform``, ``share_consumer``) runs as its own
process, possibly inside a namespace (``ip netns exec NS python -m ...``), so it carries its
own lifecycle: it works until SIGTERM, then closes its client and exits 0; a second SIGTERM,
or 15 s after the first, exits at once (a close blocked by a cut link must not hang the
runner). Every line of ``--out`` is one JSON object, flushed as written, because the runner
reads the file while the script runs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

EXIT_GRACE_S = 15.0
CALL_TIMEOUT_S = 5.0  # per blocking client call; retried by the caller while not stopping


class ClientRun:
    """Parsed argv, the ``--out`` writer and the stop flag of one client script."""

    def __init__(
        self,
        name: str,
        argv: list[str] | None,
        extra: Callable[[argparse.ArgumentParser], None] | None = None,
        description: str = "",
    ) -> None:
        parser = argparse.ArgumentParser(prog=f"bench.harness.nemesis.{name}",
                                         description=description)  # fmt: skip
        parser.add_argument("--bootstrap", required=True, help="HOST:PORT[,HOST:PORT...]")
        parser.add_argument("--topic", required=True)
        parser.add_argument("--out", required=True)
        if extra is not None:
            extra(parser)
        self.args = parser.parse_args(argv)
        self.name = name
        # One id per process: tells two copies of a script apart in the lines (and in the
        # committed offsets' metadata), and this run from an earlier one in the same group.
        self.instance = f"{name}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.stopping = threading.Event()
        self._out = open(self.args.out, "a", encoding="utf-8")  # closed by close()
        self._lock = threading.Lock()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self.stopping.is_set():
            self._exit_now()
        self.stopping.set()
        timer = threading.Timer(EXIT_GRACE_S, self._exit_now)
        timer.daemon = True
        timer.start()

    def _exit_now(self) -> None:
        self.log("exit without a clean close")
        os._exit(0)

    def config(self) -> dict[str, Any]:
        """What every client of these scripts sets: short timeouts for a test cluster."""
        return {
            "bootstrap.servers": self.args.bootstrap,
            "client.id": f"nemesis-{self.name}",
            "socket.timeout.ms": 10_000,
            "metadata.max.age.ms": 5_000,
            "topic.metadata.refresh.interval.ms": 2_000,
            "reconnect.backoff.max.ms": 1_000,
            "retry.backoff.max.ms": 1_000,
            "error_cb": lambda err: self.log(f"client error: {err}"),
        }

    def write(self, **fields: Any) -> None:
        """One JSON line in ``--out``, flushed now."""
        line = json.dumps(fields) + "\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()

    def error(self, where: str, error: object, **fields: Any) -> None:
        """An error the check may need: a JSON line and a line on stderr."""
        self.log(f"{where}: {error}")
        self.write(event="error", error=str(error), where=where, member=self.instance, **fields)

    def log(self, message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {self.instance}: {message}", file=sys.stderr,
              flush=True)  # fmt: skip

    def close(self) -> None:
        with self._lock:
            self._out.close()


def run_member(run: ClientRun, member: Any) -> int:
    """A consumer script's main: the member's loop, then, whatever happened, its close, the
    "stopped" line and the run's end."""
    try:
        member.loop()
    finally:
        member.close()
        run.write(event="stopped", member=run.instance)
        run.close()
    return 0


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The KafkaError a confluent-kafka exception carries, if any."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def read_committed_offsets(
    run: ClientRun, consumer: Any, topic: str, partitions: list[int]
) -> dict[int, tuple[int, str | None]] | None:
    """The group's committed (offset, metadata) per partition, asked until the broker
    answers every partition (None only when the script is told to stop first)."""
    while True:
        try:
            answer = consumer.committed([TopicPartition(topic, p) for p in partitions],
                                        timeout=CALL_TIMEOUT_S)  # fmt: skip
            errors = [tp.error for tp in answer if tp.error is not None]
            if not errors:
                return {tp.partition: (tp.offset, tp.metadata) for tp in answer}
            run.log(f"committed(): {errors[0]}")
        except KafkaException as exc:
            run.log(f"committed(): {exc}")
        if run.stopping.is_set():
            return None
        time.sleep(0.2)
