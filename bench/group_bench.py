"""Consumer group coordinator speed: rebalance settle time and offset-commit throughput.

A script, not a test: prints figures. Two measurements, with confluent-kafka
(librdkafka) clients as threads of this process:

- **settle**: ``--members - 1`` consumers form a group on a topic with
  ``--partitions`` partitions; then one more subscribes. The figure is the time
  from that ``subscribe()`` to the moment every member holds a non-empty share of
  a full, disjoint assignment (the new generation is in use). The extra member
  then closes (LeaveGroup) and the group settles back before the next round.
  Clients notice a rebalance at their next heartbeat, so the figure includes up
  to one ``--heartbeat-ms``; it is printed next to the result.
- **commit**: one group member commits synchronously in a loop, one partition
  per commit, then all ``--commit-partitions`` partitions of another topic per
  commit. Figures: commits/s and committed partition offsets/s.

    /work/venv/bin/python bench/group_bench.py [--rounds 5] [--members 10]
    /work/venv/bin/python bench/group_bench.py --bootstrap HOST:PORT   # any broker

Without ``--bootstrap`` a fresh ``kafkette serve`` is started on 127.0.0.1 with a
temporary data dir and ``group.initial.rebalance.delay.ms=0`` and stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

READY_LINE = re.compile(r"^kafkette ready on (\S+):(\d+)$")


# --- broker -------------------------------------------------------------------------------------


@contextmanager
def kafkette_broker(configs: dict[str, str]) -> Iterator[str]:
    """A fresh ``kafkette serve`` on 127.0.0.1:0; yields its bootstrap address."""
    with tempfile.TemporaryDirectory(prefix="group-bench-") as data_dir:
        command = [
            sys.executable, "-m", "kafkette", "serve", "--listen", "127.0.0.1:0",
            "--data-dir", data_dir, "--log-level", "WARNING",
            *(f"--config={k}={v}" for k, v in configs.items()),
        ]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            bootstrap = ""
            for line in proc.stdout:
                match = READY_LINE.match(line.strip())
                if match:
                    bootstrap = f"{match.group(1)}:{match.group(2)}"
                    break
            if not bootstrap:
                raise SystemExit(f"kafkette did not start (exit code {proc.wait(10)})")
            yield bootstrap
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def create_topic(bootstrap: str, partitions: int) -> str:
    name = f"group-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
    return name


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.005)


# --- settle time --------------------------------------------------------------------------------


class Member:
    """One subscribed consumer polling on its own thread; ``assignment`` is its latest share.

    ``subscribed_at`` is ``time.monotonic()`` just before ``subscribe()``. Only the
    member's thread touches the consumer; ``assignment`` is replaced atomically.
    """

    def __init__(self, bootstrap: str, group: str, topic: str, config: dict) -> None:
        self.assignment: frozenset[int] = frozenset()
        self.subscribed_at = 0.0
        self._stop = threading.Event()
        self._started = threading.Event()
        self._args = (bootstrap, group, topic, config)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Member:
        self._thread.start()
        self._started.wait(30)
        return self

    def _run(self) -> None:
        bootstrap, group, topic, config = self._args
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, **config})
        self.subscribed_at = time.monotonic()
        consumer.subscribe([topic])
        self._started.set()
        try:
            while not self._stop.is_set():
                consumer.poll(0.02)
                self.assignment = frozenset(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def settled(members: list[Member], partitions: int) -> bool:
    """Every member holds a non-empty share and the shares partition the topic."""
    shares = [m.assignment for m in members]
    return all(shares) and sum(map(len, shares)) == partitions == len(frozenset().union(*shares))


def measure_settle(bootstrap: str, args: argparse.Namespace) -> list[float]:
    topic = create_topic(bootstrap, args.partitions)
    group = f"settle-{uuid.uuid4().hex[:8]}"
    config = {
        "partition.assignment.strategy": args.assignor,
        "session.timeout.ms": args.session_ms,
        "heartbeat.interval.ms": args.heartbeat_ms,
        "enable.auto.commit": False,
    }
    base = [Member(bootstrap, group, topic, config).start() for _ in range(args.members - 1)]
    try:
        wait_until(lambda: settled(base, args.partitions), 120, "the first members to settle")
        times = []
        for _ in range(args.rounds):
            joiner = Member(bootstrap, group, topic, config).start()
            everyone = [*base, joiner]
            wait_until(lambda e=everyone: settled(e, args.partitions), 120, "the join to settle")
            times.append(time.monotonic() - joiner.subscribed_at)
            joiner.stop()
            wait_until(lambda: settled(base, args.partitions), 120, "the leave to settle")
        return times
    finally:
        for member in base:
            member.stop()


# --- commit throughput --------------------------------------------------------------------------


def measure_commits(bootstrap: str, partitions: int, seconds: float, session_ms: int) -> float:
    """Synchronous commits/s of one group member committing ``partitions`` offsets each time."""
    topic = create_topic(bootstrap, partitions)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"commit-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "session.timeout.ms": session_ms,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < partitions:
            if time.monotonic() > deadline:
                raise SystemExit("the commit benchmark's consumer got no assignment in 60s")
            consumer.poll(0.05)
        commits = 0
        started = time.monotonic()
        end = started + seconds
        while time.monotonic() < end:
            offsets = [TopicPartition(topic, p, commits + 1) for p in range(partitions)]
            consumer.commit(offsets=offsets, asynchronous=False)
            commits += 1
        elapsed = time.monotonic() - started
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        if committed != commits:
            raise SystemExit(f"committed offset {committed} after {commits} commits")
        return commits / elapsed
    finally:
        consumer.close()


# --- main ---------------------------------------------------------------------------------------


def run(bootstrap: str, args: argparse.Namespace) -> dict:
    settle = measure_settle(bootstrap, args)
    one = measure_commits(bootstrap, 1, args.seconds, args.session_ms)
    many = measure_commits(bootstrap, args.commit_partitions, args.seconds, args.session_ms)
    return {
        "settle_s": settle,
        "commits_per_s_1_partition": one,
        "commits_per_s_many_partitions": many,
        "commit_partitions": args.commit_partitions,
    }


def report(results: dict, args: argparse.Namespace) -> None:
    settle = results["settle_s"]
    many = results["commits_per_s_many_partitions"]
    print(
        f"settle after the {args.members}th member joins ({args.assignor}, "
        f"{args.partitions} partitions, heartbeat.interval.ms={args.heartbeat_ms}, "
        f"{len(settle)} rounds):"
    )
    print(
        f"  min {min(settle) * 1000:8.0f} ms   median {statistics.median(settle) * 1000:8.0f} ms"
        f"   max {max(settle) * 1000:8.0f} ms"
    )
    ratio = statistics.median(settle) * 1000 / args.heartbeat_ms
    print(f"  median / heartbeat interval: {ratio:.2f}")
    print("synchronous offset commits from one member:")
    print(f"  1 partition per commit:   {results['commits_per_s_1_partition']:9.0f} commits/s")
    print(
        f"  {args.commit_partitions} partitions per commit: {many:9.0f} commits/s"
        f" = {many * args.commit_partitions:9.0f} partition offsets/s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", help="benchmark this broker instead of starting kafkette")
    parser.add_argument("--members", type=int, default=10, help="group size after the join")
    parser.add_argument("--partitions", type=int, default=20, help="partitions of the topic")
    parser.add_argument("--rounds", type=int, default=5, help="join/leave rounds")
    parser.add_argument(
        "--assignor", default="range", help="range, roundrobin or cooperative-sticky"
    )
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--seconds", type=float, default=5.0, help="per commit measurement")
    parser.add_argument("--commit-partitions", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    if args.bootstrap:
        results = run(args.bootstrap, args)
    else:
        with kafkette_broker({"group.initial.rebalance.delay.ms": "0"}) as bootstrap:
            results = run(bootstrap, args)
    report(results, args)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
