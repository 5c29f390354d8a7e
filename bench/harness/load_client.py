"""One load-generating client in its own process:
``python -m bench.harness.load_client produce|consume``.

Why a process per client: confluent-kafka's produce()/consume() loops hold the GIL, so several
clients (or a full-speed background producer beside a latency probe) in the harness's process
would measure the harness, not the broker. Each client connects, prints ``ready``, waits for a
line on stdin (all clients start together), runs for ``--seconds`` (or until ``--records``), and
prints one JSON line: {"records", "seconds", "error"} (consumers add "complete": whether they
read up to the end offsets they saw at start). ``seconds`` runs from the go line (for
consumers: from the first record) to the last acknowledgement (consumers: the last record).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

from bench.harness.processes import one_line_each


def _common(bootstrap: str) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "client.id": "kafkette-bench-load",
            "broker.address.family": "v4"}


def produce(args: argparse.Namespace) -> dict[str, object]:
    from confluent_kafka import Producer

    failures: list[str] = []

    def on_error(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer({
        **_common(args.bootstrap), "acks": args.acks, "linger.ms": args.linger_ms,
        "queue.buffering.max.messages": 1_000_000, "delivery.report.only.error": True,
    }, on_delivery=on_error)
    producer.list_topics(args.topic, timeout=30)
    print("ready", flush=True)
    sys.stdin.readline()
    value = bytes(args.size)
    partitions = args.partitions
    started = time.perf_counter()
    deadline = started + args.seconds
    sent = 0
    # Record i goes to partition i mod P (uniformly keyed traffic): with many partitions every
    # Produce request carries many small batches, which is what a broker's per-partition
    # costs are measured on.
    while sent < args.records:
        if sent % 1000 == 0:
            producer.poll(0)
            if time.perf_counter() > deadline or failures:
                break
        try:
            producer.produce(args.topic, value, partition=sent % partitions)
            sent += 1
        except BufferError:
            producer.poll(0.001)
    left = producer.flush(60)
    seconds = time.perf_counter() - started
    error = failures[0] if failures else (f"{left} unacknowledged" if left else None)
    return {"records": sent - left, "seconds": seconds, "error": error}


def consume(args: argparse.Namespace) -> dict[str, object]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({
        **_common(args.bootstrap), "group.id": args.group, "enable.auto.commit": False,
    })
    partitions = [int(p) for p in args.assign.split(",") if p]
    ends = {}
    for partition in partitions:
        _low, high = consumer.get_watermark_offsets(TopicPartition(args.topic, partition), 30)
        ends[partition] = high
    wanted = sum(ends.values())
    consumer.assign([TopicPartition(args.topic, p, 0) for p in partitions])
    print("ready", flush=True)
    sys.stdin.readline()
    received, started = 0, 0.0
    deadline = time.perf_counter() + args.seconds
    error = None
    try:
        while received < wanted and time.perf_counter() < deadline:
            messages = consumer.consume(num_messages=min(10_000, wanted - received), timeout=0.2)
            for message in messages:
                if message.error():
                    error = str(message.error())
            if error:
                break
            if messages and not started:
                started = time.perf_counter()
            received += len(messages)
    finally:
        consumer.close()
    seconds = time.perf_counter() - started if started else 0.0
    return {"records": received, "seconds": seconds, "error": error,
            "complete": received >= wanted}


class ClientGroup:
    """Clients started together (harness side): ``start()`` spawns them and waits until every one
    is ready, ``go()`` releases them at once, ``results()`` collects their JSON lines. Every wait
    is bounded; ``close()`` (also on ``with`` exit) kills whatever is still running."""

    def __init__(self, client_args: Sequence[Sequence[str]]) -> None:
        self._args = [list(args) for args in client_args]
        self._procs: list[subprocess.Popen[str]] = []

    def __enter__(self) -> ClientGroup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout_s: float = 60.0) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        for args in self._args:
            self._procs.append(subprocess.Popen(
                [sys.executable, "-m", "bench.harness.load_client", *args], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                start_new_session=True,
            ))
        for index, line in enumerate(self._read_lines(timeout_s)):
            if line.strip() != "ready":
                raise RuntimeError(f"load client {self._args[index][0]} not ready: {line.strip()}")

    def go(self) -> None:
        for proc in self._procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()

    def results(self, timeout_s: float) -> list[dict]:
        return [json.loads(line) for line in self._read_lines(timeout_s)]

    def _read_lines(self, timeout_s: float) -> list[str]:
        """One line from every client, or RuntimeError when one exits or time runs out."""
        return one_line_each(self._procs, timeout_s, "load clients")

    def close(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            proc.wait(timeout=10)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.harness.load_client")
    sub = parser.add_subparsers(dest="mode", required=True)
    producer = sub.add_parser("produce")
    producer.add_argument("--partitions", type=int, default=1)
    producer.add_argument("--size", type=int, default=1024)
    producer.add_argument("--acks", default="1")
    producer.add_argument("--linger-ms", type=int, default=5)
    producer.add_argument("--records", type=int, default=10**12)
    consumer = sub.add_parser("consume")
    consumer.add_argument("--assign", required=True, help="comma-separated partitions")
    consumer.add_argument("--group", default="kafkette-bench-load")
    for each in (producer, consumer):
        each.add_argument("--bootstrap", required=True)
        each.add_argument("--topic", required=True)
        each.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)
    try:
        result = produce(args) if args.mode == "produce" else consume(args)
    except Exception as error:  # one JSON line whatever happens: the harness reads it
        result = {"records": 0, "seconds": 0.0, "error": f"{type(error).__name__}: {error}"}
    print(json.dumps(result), flush=True)
    return 0 if result["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
