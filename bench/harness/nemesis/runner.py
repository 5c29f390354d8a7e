"""One schedule, start to verdict: a fresh cluster in namespaces, clients, faults, checks.

1. ZooKeeper and three brokers in their namespaces; topic ``events`` (3 partitions,
   replication factor 3, min.insync.replicas 2); roles resolved (``leader`` of partition 0...).
2. Clients, each a process: an idempotent producer in the root namespace, and one stranded
   inside the leader's namespace (it reaches the leader even when nothing else does; each
   ``roles`` step that finds a new leader strands another one there), and as asked a consumer
   group, a transactional consume-transform-produce and a share group (workloads.py).
3. The schedule's steps (steps.py); then everything healed. Recovery time: from the heal until
   every partition of ``events`` is led with a full ISR and the root producer is acknowledged
   again.
4. Producers stopped (their pending records flushed or given up), consumers let catch up.
5. The final log read back, the checks of ``log_check`` and ``client_checks``; the brokers
   stopped and their replica files compared, and tied to what the client read.

Every wait has a deadline; a cluster that does not recover is a finding, not a hang. A
failure of the harness itself (a command, a client library) is a finding too, with its
traceback in ``Result.logs``: a schedule never ends without a verdict.
"""

from __future__ import annotations

import itertools
import shutil
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.nemesis import log_check, steps
from bench.harness.nemesis import workloads as consumer_workloads
from bench.harness.nemesis.clients import ClientProcess, stop_all
from bench.harness.nemesis.cluster import NemesisCluster, wait_for
from bench.harness.nemesis.schedules import needs_small_disk, parse

TOPIC = "events"
PARTITIONS = 3
SMALL_DISK_MB = 256  # a tmpfs per broker when a schedule fills disks: RAM only as written
RECOVERY_TIMEOUT = steps.RECOVERY_TIMEOUT
WORKLOADS = consumer_workloads.NAMES


@dataclass
class Result:
    """What one schedule did and what the checks found."""

    name: str
    schedule: str
    seed: int | None = None
    timeline: list[str] = field(default_factory=list)
    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    misplaced: int = 0
    failed: int = 0
    recovery_s: float = 0.0
    # The longest time one partition went without acknowledging the root producer.
    stall_s: float = 0.0
    loss_allowed: bool = False  # acks=1 or unclean election: lost/duplicated are measured only
    counts: dict[str, float] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    logs: str = ""

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        extra = " ".join(f"{key}={value:g}" for key, value in sorted(self.counts.items()))
        verdict = "ok" if self.ok else f"{len(self.findings)} findings"
        return (
            f"{self.name}: acked={self.acked} lost={self.lost} duplicated={self.duplicated} "
            f"misplaced={self.misplaced} unacked={self.failed} recovery={self.recovery_s:.1f}s "
            f"longest-write-stall={self.stall_s:.1f}s "
            f"{extra} -> {verdict}"
        )


@dataclass
class _Producers:
    """The root producer and the stranded ones (one per leader the schedule found)."""

    cluster: NemesisCluster
    root: Path
    rate: float
    acks: str
    clients: dict[str, ClientProcess] = field(default_factory=dict)
    stranded_in: set[str] = field(default_factory=set)

    def start_root(self) -> None:
        self._start("root", self.cluster.bootstrap, [], self.rate)

    def strand(self, roles: dict[str, str]) -> None:
        """A producer inside the leader's namespace, bootstrapped to that leader only."""
        leader = roles["leader"]
        if leader in self.stranded_in:
            return
        self.stranded_in.add(leader)
        node = self.cluster.network.nodes[leader]
        name = f"stranded-{len(self.stranded_in)}"
        self._start(name, self.cluster.address(int(leader[1:])), node.exec_prefix(), self.rate / 3)

    def _start(self, name: str, bootstrap: str, prefix: list[str], rate: float) -> None:
        args = ["--bootstrap", bootstrap, "--topic", TOPIC, "--name", name, "--rate", str(rate),
                "--acks", self.acks]  # fmt: skip
        self.clients[name] = ClientProcess("producer", args, self.root / f"{name}.jsonl", prefix)

    def acked(self, name: str = "root") -> int:
        return sum(1 for line in self.clients[name].lines() if "o" in line)


def run_schedule(
    root: Path,
    name: str,
    schedule: str,
    *,
    workloads: tuple[str, ...] = (),
    rate: float = 150.0,
    acks: str = "all",
    unclean: bool = False,
    seed: int | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Result:
    """Run ``schedule`` on a fresh cluster under ``root``; see the module docstring.

    ``acks="1"`` or ``unclean`` (``unclean.leader.election.enable=true``) are the settings
    under which Kafka allows losing acknowledged records: the counts are measured and
    reported, and only the other checks are findings."""
    result = Result(name, schedule, seed, loss_allowed=acks != "all" or unclean)
    plan = parse(schedule)
    root.mkdir(parents=True, exist_ok=True)
    small = dict.fromkeys((1, 2, 3), SMALL_DISK_MB) if needs_small_disk(schedule) else None
    configs = {"unclean.leader.election.enable": "true"} if unclean else None
    cluster = NemesisCluster(root, configs=configs, small_disk_mb=small)
    producers = _Producers(cluster, root, rate, acks)
    consumers: dict[str, ClientProcess] = {}
    try:
        cluster.start()
        _create_topic(cluster, TOPIC)
        if "txn" in workloads:
            _create_topic(cluster, f"{TOPIC}-out")
        roles = steps.resolve_roles(cluster, TOPIC)
        result.counts["first_leader"] = int(roles["leader"][1:])
        producers.start_root()
        producers.strand(roles)
        consumers.update(consumer_workloads.start(cluster, TOPIC, root, workloads))
        wait_for(lambda: producers.acked() > 0, 60, "the first acknowledgement")
        time.sleep(2)
        started = time.monotonic()
        for step in plan:
            stamp = f"{time.monotonic() - started:5.1f}s {step}"
            note = steps.apply(cluster, step, roles, TOPIC, producers.strand)
            result.timeline.append(f"{stamp} {note}".rstrip())
            say(f"  {result.timeline[-1]}")
        _recover(cluster, producers, result)
        stop_all(list(producers.clients.values()), 90)
        log = _read(cluster, TOPIC, "read_uncommitted")
        _check_producers(result, producers, log)
        consumer_workloads.finish(
            cluster, consumers, TOPIC, log, lambda topic, how: _read(cluster, topic, how),
            result.findings, result.counts,
        )  # fmt: skip
        _check_replicas(cluster, result, log, with_out_topic="txn" in workloads)
    except AssertionError as exc:
        result.findings.append((str(exc) or repr(exc)).splitlines()[0])
    except Exception as exc:  # the harness failed: a verdict all the same, never a crash
        result.findings.append(f"harness error: {type(exc).__name__}: {exc}")
        result.logs += traceback.format_exc()
    finally:
        try:
            stop_all([*producers.clients.values(), *consumers.values()], 20)
            result.counts["cpu_clients_s"] = round(
                sum(c.cpu_s for c in [*producers.clients.values(), *consumers.values()]), 1
            )
            if not result.ok:
                clients = {**producers.clients, **consumers}
                tails = [f"--- {key} ---\n{c.stderr_tail()}" for key, c in clients.items()]
                result.logs += cluster.logs() + "\n" + "\n".join(tails)
                _keep_small_disks(cluster)
        finally:
            cluster.close()
    return result


def _recover(cluster: NemesisCluster, producers: _Producers, result: Result) -> None:
    """From the heal: every broker registered, every partition in sync, the root producer
    acknowledged again; the time that took."""
    healed = time.monotonic()
    before = producers.acked()
    cluster.wait_registered(cluster.broker_ids, timeout=RECOVERY_TIMEOUT)
    cluster.wait_in_sync(TOPIC, PARTITIONS, timeout=RECOVERY_TIMEOUT)
    wait_for(lambda: producers.acked() > before, RECOVERY_TIMEOUT,
             "the root producer acknowledged again")  # fmt: skip
    result.recovery_s = time.monotonic() - healed
    time.sleep(2)


def _check_replicas(
    cluster: NemesisCluster, result: Result, log: log_check.Log, with_out_topic: bool
) -> None:
    """Brokers in sync, their CPU noted, stopped; replicas compared and tied to ``log``."""
    topics = [TOPIC, f"{TOPIC}-out"] if with_out_topic else [TOPIC]
    for topic in topics:
        cluster.wait_in_sync(topic, PARTITIONS, timeout=RECOVERY_TIMEOUT)
    result.counts["cpu_brokers_s"] = round(
        sum(serve.cpu_s() for serve in cluster.serves.values() if serve.running), 1
    )
    cluster.stop_all()
    data_dirs = {broker: cluster.data_dir(broker) for broker in cluster.broker_ids}
    ends = {p: (records[-1][0] + 1 if records else 0) for p, records in log.items()}
    for topic in topics:
        result.findings += log_check.check_replicas(
            data_dirs, topic, PARTITIONS, ends if topic == TOPIC else None
        )


def _keep_small_disks(cluster: NemesisCluster) -> None:
    """A failed schedule's data stays for reading: copy what lives on a tmpfs (gone when
    unmounted) to ``broker-N-data`` beside it."""
    for broker, size in cluster.small_disk_mb.items():
        if size:
            source = cluster.data_dir(broker)
            keep = source.with_name(f"{source.name}-data")
            shutil.copytree(source, keep, ignore=shutil.ignore_patterns("filler"))


def _create_topic(cluster: NemesisCluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
    )
    futures[topic].result(30)
    cluster.wait_in_sync(topic, PARTITIONS, timeout=60)


def _read(cluster: NemesisCluster, topic: str, isolation: str) -> log_check.Log:
    from bench.harness.nemesis.client_checks import read_log

    return read_log(cluster.bootstrap, topic, isolation=isolation, timeout=60)


def _check_producers(result: Result, producers: _Producers, log: log_check.Log) -> None:
    lines = [line for client in producers.clients.values() for line in client.lines()]
    report = log_check.check_acks(lines, log)
    result.acked, result.lost, result.failed = report.acked, report.lost, report.failed
    result.duplicated, result.misplaced = report.duplicated, report.misplaced
    if result.loss_allowed:
        result.counts["findings_allowed_by_settings"] = len(report.findings)
    else:
        result.findings += report.findings
    result.findings += log_check.check_contiguous(log)
    fatal = sum(1 for line in lines if line.get("event") == "fatal")
    result.counts["fatal"] = fatal
    if fatal and not result.loss_allowed:  # an idempotent producer should never need one
        result.findings.append(f"{fatal} fatal producer errors (see the producers' lines)")
    stranded = [name for name in producers.clients if name.startswith("stranded")]
    result.counts["stranded_acked"] = sum(producers.acked(name) for name in stranded)
    by_partition: dict[int, list[float]] = {}
    for line in producers.clients["root"].lines():
        if "t" in line:
            by_partition.setdefault(line["p"], []).append(line["t"])
    result.stall_s = max(
        (b - a for times in by_partition.values() for a, b in itertools.pairwise(sorted(times))),
        default=0.0,
    )
