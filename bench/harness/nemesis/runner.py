"""One schedule, start to verdict: a fresh cluster in namespaces, clients, faults, checks.

1. ZooKeeper and three brokers in their namespaces; topic ``events`` (3 partitions,
   replication factor 3, min.insync.replicas 2); roles resolved (``leader`` of partition 0...).
2. Clients, each a process: an idempotent acks=all producer in the root namespace, a second
   one stranded inside the leader's namespace (it reaches the leader even when nothing else
   does), and as asked a consumer group, a transactional consume-transform-produce and a
   share group reading ``events``.
3. The schedule's steps; then everything healed. Recovery time: from the heal until every
   partition of ``events`` is led with a full ISR and the root producer is acknowledged again.
4. Producers stopped (their pending records flushed or given up), consumers let catch up.
5. The final log read back, the checks of ``log_check`` and ``client_checks``; the brokers
   stopped and their replica files compared.

Every wait has a deadline; a cluster that does not recover is a finding, not a hang.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.nemesis import log_check
from bench.harness.nemesis.cluster import NemesisCluster, wait_for
from bench.harness.nemesis.schedules import Step, needs_small_disk, parse

REPO = Path(__file__).resolve().parents[3]
TOPIC = "events"
PARTITIONS = 3
SMALL_DISK_MB = 256  # a tmpfs per broker when a schedule fills disks: RAM only as written
RECOVERY_TIMEOUT = 120.0
CATCH_UP_TIMEOUT = 90.0
WORKLOADS = ("group", "txn", "share")


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
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    logs: str = ""

    @property
    def ok(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        extra = " ".join(f"{key}={value}" for key, value in sorted(self.counts.items()))
        verdict = "ok" if self.ok else f"{len(self.findings)} findings"
        return (
            f"{self.name}: acked={self.acked} lost={self.lost} duplicated={self.duplicated} "
            f"misplaced={self.misplaced} unacked={self.failed} recovery={self.recovery_s:.1f}s "
            f"longest-write-stall={self.stall_s:.1f}s "
            f"{extra} -> {verdict}"
        )


class ClientProcess:
    """A client script in a namespace (or the root one), its JSON lines in ``out``."""

    def __init__(self, module: str, args: list[str], out: Path, prefix: list[str]) -> None:
        self.out = out
        self.name = out.stem
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with (out.with_suffix(".stderr")).open("ab") as errors:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", f"bench.harness.nemesis.{module}",
                 *args, "--out", str(out)],
                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=errors, stderr=errors,
            )  # fmt: skip

    def lines(self) -> list[dict[str, Any]]:
        if not self.out.exists():
            return []
        parsed = []
        for line in self.out.read_text(encoding="utf-8").splitlines():
            try:
                parsed.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line being written
        return parsed

    def stop(self, timeout: float) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def stderr_tail(self, lines: int = 20) -> str:
        path = self.out.with_suffix(".stderr")
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


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
    result = Result(name, schedule, seed)
    result.loss_allowed = acks != "all" or unclean
    steps = parse(schedule)
    root.mkdir(parents=True, exist_ok=True)
    small = dict.fromkeys((1, 2, 3), SMALL_DISK_MB) if needs_small_disk(schedule) else None
    configs = {"unclean.leader.election.enable": "true"} if unclean else None
    cluster = NemesisCluster(root, configs=configs, small_disk_mb=small)
    clients: dict[str, ClientProcess] = {}
    try:
        cluster.start()
        _create_topic(cluster, TOPIC)
        if "txn" in workloads:
            _create_topic(cluster, f"{TOPIC}-out")
        roles = _resolve_roles(cluster)
        result.counts["leader"] = int(roles["leader"][1:])
        leader_node = cluster.network.nodes[roles["leader"]]
        clients["root"] = ClientProcess(
            "producer", ["--bootstrap", cluster.bootstrap, "--topic", TOPIC, "--name", "root",
                         "--rate", str(rate), "--acks", acks],
            root / "root.jsonl", [],
        )  # fmt: skip
        clients["stranded"] = ClientProcess(
            "producer", ["--bootstrap", cluster.address(int(roles["leader"][1:])), "--topic",
                         TOPIC, "--name", "stranded", "--rate", str(rate / 3), "--acks", acks],
            root / "stranded.jsonl", leader_node.exec_prefix(),
        )  # fmt: skip
        _start_consumers(cluster, clients, root, workloads)
        wait_for(lambda: _acked(clients["root"]) > 0, 60, "the first acknowledgement")
        time.sleep(2)
        started = time.monotonic()
        for step in steps:
            result.timeline.append(f"{time.monotonic() - started:5.1f}s {step}")
            say(f"  {result.timeline[-1]}")
            _apply(cluster, step, roles, result)
        healed = time.monotonic()
        before = _acked(clients["root"])
        cluster.wait_registered(cluster.broker_ids, timeout=RECOVERY_TIMEOUT)
        cluster.wait_in_sync(TOPIC, PARTITIONS, timeout=RECOVERY_TIMEOUT)
        wait_for(lambda: _acked(clients["root"]) > before, RECOVERY_TIMEOUT,
                 "the root producer acknowledged again")  # fmt: skip
        result.recovery_s = time.monotonic() - healed
        time.sleep(2)
        for key in ("root", "stranded"):
            clients[key].stop(timeout=90)
        log = _read(cluster, TOPIC)
        _check_producers(result, clients, log)
        _finish_consumers(cluster, clients, log, result)
        cluster.wait_in_sync(TOPIC, PARTITIONS, timeout=RECOVERY_TIMEOUT)
        cluster.stop_all()
        data_dirs = {broker: cluster.data_dir(broker) for broker in cluster.broker_ids}
        result.findings += log_check.check_replicas(data_dirs, TOPIC, PARTITIONS)
    except AssertionError as exc:
        result.findings.append(str(exc).splitlines()[0])
    finally:
        for client in clients.values():
            client.stop(timeout=20)
        if not result.ok:
            tails = [f"--- {key} ---\n{c.stderr_tail()}" for key, c in clients.items()]
            result.logs = cluster.logs() + "\n" + "\n".join(tails)
            _keep_small_disks(cluster)
        cluster.close()
    return result


def _keep_small_disks(cluster: NemesisCluster) -> None:
    """A failed schedule's data stays for reading: copy what lives on a tmpfs (gone when
    unmounted) to ``broker-N-data`` beside it."""
    for broker, size in cluster.small_disk_mb.items():
        if size:
            source = cluster.data_dir(broker)
            keep = source.with_name(f"{source.name}-data")
            shutil.copytree(source, keep, ignore=shutil.ignore_patterns("filler"))


def _acked(client: ClientProcess) -> int:
    return sum(1 for line in client.lines() if "o" in line)


def _create_topic(cluster: NemesisCluster, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})]
    )
    futures[topic].result(30)
    cluster.wait_in_sync(topic, PARTITIONS, timeout=60)


def _resolve_roles(cluster: NemesisCluster) -> dict[str, str]:
    state = cluster.partition_state(TOPIC, 0)
    assert state is not None
    leader = state["leader"]
    others = [b for b in cluster.broker_ids if b != leader]
    roles = {
        "leader": f"b{leader}",
        "follower": f"b{others[0]}",
        "follower2": f"b{others[1]}",
        "controller": f"b{cluster.controller()}",
        "zk": "zk",
    }
    roles["followers"] = f"{roles['follower']},{roles['follower2']}"
    return roles


def _targets(word: str, roles: dict[str, str]) -> list[str]:
    return [roles.get(part, part) for part in roles.get(word, word).split(",")]


def _apply(cluster: NemesisCluster, step: Step, roles: dict[str, str], result: Result) -> None:
    network = cluster.network
    args = step.args
    one = _targets(args[0], roles)[0] if args else ""
    match step.action:
        case "wait":
            time.sleep(float(args[0]))
        case "isolate":
            network.isolate(one)
        case "rejoin":
            network.rejoin(one)
        case "partition":
            network.partition(_targets(args[0], roles), _targets(args[2], roles))
        case "block":
            network.block(one, _targets(args[1], roles)[0])
        case "refuse":
            network.refuse(one, _targets(args[1], roles)[0])
        case "unblock":
            network.unblock(one, _targets(args[1], roles)[0])
        case "kill":
            cluster.kill(one)
        case "restart":
            _restart(cluster, one)
        case "freeze":
            cluster.freeze(one)
        case "thaw":
            cluster.thaw(one)
        case "fill-disk":
            cluster.fill_disk(int(one[1:]))
        case "free-disk":
            cluster.free_disk(int(one[1:]))
        case "flap":
            times, off, on = int(args[1]), float(args[2]), float(args[3])
            for _ in range(times):
                network.isolate(one)
                time.sleep(off)
                network.rejoin(one)
                time.sleep(on)
        case "heal":
            _heal(cluster)
        case "roles":
            cluster.wait_in_sync(TOPIC, PARTITIONS, timeout=RECOVERY_TIMEOUT)
            roles.update(_resolve_roles(cluster))
        case _:
            raise AssertionError(f"unknown step {step}")


def _restart(cluster: NemesisCluster, name: str) -> None:
    if name == "zk":
        if cluster.zookeeper.process is None or cluster.zookeeper.process.poll() is not None:
            cluster.restart("zk")
    elif not cluster.running(int(name[1:])):
        cluster.start_broker(int(name[1:]), wait=False)


def _heal(cluster: NemesisCluster) -> None:
    """Links back, processes thawed and restarted (ZooKeeper first), disks freed."""
    cluster.network.heal()
    for name in list(cluster.frozen):
        cluster.thaw(name)
    _restart(cluster, "zk")
    for broker in cluster.broker_ids:
        if cluster.small_disk_mb.get(broker):
            cluster.free_disk(broker)
        _restart(cluster, f"b{broker}")
    for broker in cluster.broker_ids:
        cluster.serves[broker].wait_ready(RECOVERY_TIMEOUT)


def _read(
    cluster: NemesisCluster, topic: str, isolation: str = "read_uncommitted"
) -> log_check.Log:
    from bench.harness.nemesis.client_checks import read_log

    return read_log(cluster.bootstrap, topic, isolation=isolation, timeout=60)


def _check_producers(result: Result, clients: dict[str, ClientProcess], log: log_check.Log) -> None:
    lines = [line for key in ("root", "stranded") for line in clients[key].lines()]
    report = log_check.check_acks(lines, log)
    result.acked, result.lost, result.failed = report.acked, report.lost, report.failed
    result.duplicated, result.misplaced = report.duplicated, report.misplaced
    if result.loss_allowed:
        result.counts["findings_allowed_by_settings"] = len(report.findings)
    else:
        result.findings += report.findings
    result.findings += log_check.check_contiguous(log)
    result.counts["fatal"] = sum(1 for line in lines if line.get("event") == "fatal")
    result.counts["stranded_acked"] = sum(1 for line in clients["stranded"].lines() if "o" in line)
    by_partition: dict[int, list[float]] = {}
    for line in clients["root"].lines():
        if "t" in line:
            by_partition.setdefault(line["p"], []).append(line["t"])
    result.stall_s = max(
        (b - a for times in by_partition.values() for a, b in itertools.pairwise(sorted(times))),
        default=0.0,
    )


def _start_consumers(
    cluster: NemesisCluster,
    clients: dict[str, ClientProcess],
    root: Path,
    workloads: tuple[str, ...],
) -> None:
    common = ["--bootstrap", cluster.bootstrap, "--topic", TOPIC]
    if "group" in workloads:
        for copy in ("group-a", "group-b"):
            clients[copy] = ClientProcess(
                "group_consumer", [*common, "--group", "nemesis-group"], root / f"{copy}.jsonl", []
            )
    if "txn" in workloads:
        clients["txn"] = ClientProcess(
            "txn_transform", [*common, "--group", "nemesis-txn", "--out-topic", f"{TOPIC}-out",
                              "--transactional-id", "nemesis-txn"],
            root / "txn.jsonl", [],
        )  # fmt: skip
    if "share" in workloads:
        clients["share"] = ClientProcess(
            "share_consumer", [*common, "--group", "nemesis-share"], root / "share.jsonl", []
        )


def _finish_consumers(
    cluster: NemesisCluster, clients: dict[str, ClientProcess], log: log_check.Log, result: Result
) -> None:
    from bench.harness.nemesis import client_checks

    total = sum(len(records) for records in log.values())
    group = [clients[key] for key in ("group-a", "group-b") if key in clients]
    if group:

        def processed() -> int:
            return len({(line["p"], line["o"]) for client in group for line in client.lines()
                        if line.get("committed") is True})  # fmt: skip

        wait_for(lambda: processed() >= total, CATCH_UP_TIMEOUT,
                 f"the consumer group processed all {total} records")  # fmt: skip
        for client in group:
            client.stop(timeout=30)
        lines = [line for client in group for line in client.lines()]
        result.findings += [f"group: {f}" for f in client_checks.check_group(lines, log)]
        result.counts["group_processed"] = processed()
    if "txn" in clients:
        out_topic = f"{TOPIC}-out"

        def transformed() -> bool:
            committed = _read(cluster, out_topic, "read_committed")
            return sum(len(r) for r in committed.values()) >= total

        wait_for(transformed, CATCH_UP_TIMEOUT, f"the transformer committed all {total} records")
        clients["txn"].stop(timeout=30)
        committed = _read(cluster, out_topic, "read_committed")
        uncommitted = _read(cluster, out_topic)
        lines = clients["txn"].lines()
        findings = client_checks.check_txn(lines, log, committed, uncommitted)
        result.findings += [f"txn: {f}" for f in findings]
        result.counts["txn_commits"] = sum(1 for line in lines if line.get("event") == "commit")
        result.counts["txn_aborts"] = sum(1 for line in lines if line.get("event") == "abort")
    if "share" in clients:
        share = clients["share"]
        wait_for(lambda: not client_checks.share_missing(share.lines(), log), CATCH_UP_TIMEOUT,
                 f"the share group accepted all {total} records")  # fmt: skip
        share.stop(timeout=30)
        findings = client_checks.check_share(share.lines(), log, complete=True)
        result.findings += [f"share: {f}" for f in findings]
        result.counts["share_accepted"] = sum(
            1 for line in share.lines() if line.get("accepted") is True
        )
