"""The schedules' writer: an idempotent producer that says which records were acknowledged.

Run as ``python -m bench.harness.nemesis.producer --bootstrap B --topic T --out PATH
--name root [--acks all] [--rate 200]``, in the root namespace or inside a broker's (the
stranded client). Values are ``<name>-<n>``, unique per run; keys none (the partitioner
spreads them). Every delivery report is one JSON line in ``--out``, flushed at once:
``{"v": value, "p": partition, "o": offset, "t": unix time}`` when acknowledged,
``{"v": value, "err": ...}`` when not. Only the first kind is a promise the checker holds
the cluster to.

It runs until SIGTERM, then flushes for up to ``--drain`` seconds and exits: what is still
unacknowledged then was never promised. A fatal producer error (the idempotent producer's
sequence state lost) is written as ``{"event": "fatal", ...}`` and a new producer goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from typing import Any, TextIO

from confluent_kafka import KafkaError, Producer


def _config(bootstrap: str, name: str, acks: str, fatal: list[str]) -> dict[str, Any]:
    def on_error(err: KafkaError) -> None:
        if err.fatal():  # librdkafka reports a fatal producer through the error callback
            fatal.append(str(err))

    return {
        "error_cb": on_error,
        "bootstrap.servers": bootstrap,
        "client.id": f"nemesis-{name}",
        "enable.idempotence": acks == "all",
        "acks": acks,
        "linger.ms": 5,
        "message.timeout.ms": 120_000,
        "request.timeout.ms": 10_000,
        "socket.timeout.ms": 10_000,
        "metadata.max.age.ms": 5_000,
        "topic.metadata.refresh.interval.ms": 2_000,
        "reconnect.backoff.max.ms": 1_000,
        # librdkafka's own trace of the idempotent producer, when a run is being read closely
        **({"debug": debug} if (debug := os.environ.get("NEMESIS_RDKAFKA_DEBUG")) else {}),
    }


class _Writer:
    """Delivery reports to JSON lines, flushed one by one."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.acked = 0

    def line(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def delivered(self, err: KafkaError | None, message: Any) -> None:
        value = message.value().decode()
        if err is None:
            self.acked += 1
            self.line(
                {"v": value, "p": message.partition(), "o": message.offset(), "t": time.time()}
            )
        else:
            self.line({"v": value, "err": str(err)})
            if err.fatal():
                self.line({"event": "fatal", "error": str(err)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--acks", default="all", choices=("all", "1"))
    parser.add_argument("--rate", type=float, default=200.0, help="records per second")
    parser.add_argument("--drain", type=float, default=60.0)
    args = parser.parse_args(argv)

    stopping = False

    def stop(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(args.out, "a", encoding="utf-8") as out:
        writer = _Writer(out)
        fatal: list[str] = []
        producer = Producer(_config(args.bootstrap, args.name, args.acks, fatal))
        sent = 0
        started = time.monotonic()
        while not stopping:
            due = int((time.monotonic() - started) * args.rate)
            while sent < due and not stopping:
                try:
                    producer.produce(
                        args.topic, f"{args.name}-{sent}".encode(), on_delivery=writer.delivered
                    )
                except BufferError:
                    break  # the local queue is full while the cluster is cut: wait
                except Exception as exc:
                    fatal.append(repr(exc))
                    break
                sent += 1
            try:
                producer.poll(0.02)
            except Exception as exc:  # a fatal error raised from poll: start a new producer
                fatal.append(repr(exc))
            if fatal:
                writer.line({"event": "fatal", "error": fatal[0]})
                producer.flush(5)
                fatal.clear()
                producer = Producer(_config(args.bootstrap, args.name, args.acks, fatal))
        remaining = producer.flush(args.drain)
        writer.line({"event": "stopped", "sent": sent, "acked": writer.acked,
                     "unflushed": remaining})  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
