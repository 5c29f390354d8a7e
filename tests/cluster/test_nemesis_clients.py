"""The nemesis client scripts and their checks, without faults, on a real 3-broker cluster.

``bench/harness/nemesis/{group_consumer,txn_transform,share_consumer}.py`` run as the
schedules run them (child processes, stopped by SIGTERM) against one cluster: two copies of
the group member in one group (a rebalance), a KIP-848 member in another, the transactional
transformer (a planned abort every 5th transaction) and the share consumer. Half the input is
produced before they start, half while they run. Once they have caught up they must exit 0
on SIGTERM, and every check must come back empty. Then each check is shown able to fail: the
same lines and logs, doctored (a duplicate, a backward commit, an aborted value, a record
accepted twice), give findings. Checks on synthetic lines (no cluster) cover the cross-copy
ordering and the unknown-outcome rule.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.nemesis import client_checks as cc
from bench.harness.processes import ProcessRegistry

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[2]
TOPIC, OUT_TOPIC = "in", "out"
RECORDS = 300  # half before the clients start, half while they run
CONFIGS = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "share.coordinator.state.topic.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
}
CATCH_UP_S = 45.0
EXIT_S = 20.0
CHILDREN = ProcessRegistry()  # whatever a failing test leaves running is killed


def _produce(bootstrap: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "acks": "all", "linger.ms": 5})  # fmt: skip
    for i in range(first, first + count):
        producer.produce(TOPIC, value=f"root-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0


def _start(module: str, bootstrap: str, out: Path, *args: str) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", f"bench.harness.nemesis.{module}", "--bootstrap", bootstrap,
            "--topic", TOPIC, "--out", str(out), *args]  # fmt: skip
    return CHILDREN.spawn(argv, out.with_suffix(".log"), cwd=ROOT)


def _lines(*paths: Path) -> list[dict]:
    return [json.loads(line) for path in paths if path.exists()
            for line in path.read_text().splitlines() if line.strip()]  # fmt: skip


def _tail(path: Path) -> str:
    log = path.with_suffix(".log")
    return log.read_text()[-3000:] if log.exists() else ""


def _caught_up(paths: dict[str, Path], ends: dict[int, int]) -> list[str]:
    """What has not caught up with the whole input yet (empty: all have)."""
    behind = []
    total = sum(ends.values())
    for name in ("group", "kip848"):
        done = {(x["p"], x["o"]) for x in _lines(*paths[name]) if x.get("committed") is True}
        if len(done) < total:
            behind.append(f"{name}: {len(done)}/{total}")
    reached: dict[int, int] = {}
    for x in _lines(*paths["txn"]):
        for p, o in (x.get("offsets") or {}).items() if x.get("event") == "commit" else ():
            reached[int(p)] = max(o, reached.get(int(p), 0))
    if reached != ends:
        behind.append(f"txn: {reached} of {ends}")
    accepted = {(x["p"], x["o"]) for x in _lines(*paths["share"]) if x.get("accepted") is True}
    if len(accepted) < total:
        behind.append(f"share: {len(accepted)}/{total}")
    return behind


def _run_clients(built, tmp_path: Path) -> dict[str, list[Path]]:
    boot = built.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    for future in admin.create_topics([NewTopic(TOPIC, 3, 3), NewTopic(OUT_TOPIC, 3, 3)],
                                      request_timeout=30).values():  # fmt: skip
        future.result(timeout=30)
    _produce(boot, 0, RECORDS // 2)
    paths = {"group": [tmp_path / "group-1.jsonl", tmp_path / "group-2.jsonl"],
             "kip848": [tmp_path / "kip848.jsonl"], "txn": [tmp_path / "txn.jsonl"],
             "share": [tmp_path / "share.jsonl"]}  # fmt: skip
    procs = {
        paths["group"][0]: _start("group_consumer", boot, paths["group"][0], "--group", "g"),
        paths["kip848"][0]: _start("group_consumer", boot, paths["kip848"][0],
                                   "--group", "g848", "--protocol", "consumer"),
        paths["txn"][0]: _start("txn_transform", boot, paths["txn"][0], "--group", "tx",
                                "--out-topic", OUT_TOPIC, "--transactional-id", "tx-1",
                                "--max-batch", "20"),
        paths["share"][0]: _start("share_consumer", boot, paths["share"][0], "--group", "s"),
    }  # fmt: skip
    try:
        deadline = time.monotonic() + 15
        while not _lines(paths["group"][0]) and time.monotonic() < deadline:
            time.sleep(0.2)  # the first copy is working: the second one makes a rebalance
        procs[paths["group"][1]] = _start("group_consumer", boot, paths["group"][1],
                                          "--group", "g")  # fmt: skip
        deadline = time.monotonic() + 30
        while not any(x.get("event") == "assigned" for x in _lines(paths["group"][1])):
            assert time.monotonic() < deadline, f"no assignment:\n{_tail(paths['group'][1])}"
            time.sleep(0.2)  # the second half goes to both copies
        _produce(boot, RECORDS // 2, RECORDS - RECORDS // 2)
        ends = {p: RECORDS // 3 for p in range(3)}
        deadline = time.monotonic() + CATCH_UP_S
        while behind := _caught_up(paths, ends):
            dead = {p.name: proc.returncode for p, proc in procs.items() if proc.poll() is not None}
            assert not dead and time.monotonic() < deadline, (
                f"not caught up: {behind}; exited: {dead}\n"
                + "\n".join(f"--- {p.name}\n{_tail(p)}" for p in procs)
            )
            time.sleep(0.3)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = {}
        for path, proc in procs.items():
            try:
                codes[path.name] = proc.wait(EXIT_S)
            except subprocess.TimeoutExpired:
                codes[path.name] = "still running"
            CHILDREN.stop(proc, grace_s=1)
    assert set(codes.values()) == {0}, (codes, {p.name: _tail(p) for p in procs})
    return paths


def test_client_scripts_and_checks_on_a_cluster(cluster, tmp_path: Path) -> None:
    built = cluster(3, configs=CONFIGS)
    paths = _run_clients(built, tmp_path)
    log = cc.read_log(built.bootstrap, TOPIC, timeout=30)
    assert sum(len(v) for v in log.values()) == RECORDS
    out_committed = cc.read_log(built.bootstrap, OUT_TOPIC, "read_committed", timeout=30)
    out_raw = cc.read_log(built.bootstrap, OUT_TOPIC, timeout=30)
    group, kip848 = _lines(*paths["group"]), _lines(*paths["kip848"])
    txn, share = _lines(*paths["txn"]), _lines(*paths["share"])

    # Without faults: no findings, and the runs did what they are for.
    assert cc.check_group(group, log) == [], cc.group_info(group)
    assert cc.check_group(kip848, log) == [], cc.group_info(kip848)
    assert {x["member"] for x in group if x.get("event") == "assigned"} == {
        x["member"] for x in group if x.get("event") == "stopped"
    }, "a copy never got partitions"
    assert cc.check_txn(txn, log, out_committed, out_raw) == []
    info = cc.txn_info(txn, out_raw)
    assert any(i.startswith("abort (planned)") for i in info), info
    assert not any(i.startswith("no aborted record") for i in info), info
    assert cc.check_share(share, log, complete=True) == [], cc.share_info(share, log)
    assert cc.share_missing(share, log) == []

    # Each check can fail: the same data, doctored.
    done = [x for x in group if x.get("committed") is True]
    twice = [*group, {**done[5], "member": "zombie"}]
    assert any("more than once" in f for f in cc.check_group(twice, log))
    backward = [*group, {"event": "assigned", "member": done[-1]["member"],
                         "partitions": [done[-1]["p"]], "committed": {str(done[-1]["p"]): 0},
                         "t0": done[-1]["t"] + 1, "t": done[-1]["t"] + 2}]  # fmt: skip
    found = cc.check_group(backward, log)
    assert any("backward within a copy" in f for f in found), found
    assert any("backward across copies" in f for f in found), found
    assert any(
        "never processed" in f for f in cc.check_group([x for x in group if x is not done[0]], log)
    )
    assert any(
        "another value" in f
        for f in cc.check_group([{**x, "v": "other"} if x is done[0] else x for x in group], log)
    )
    p = next(iter(out_committed))
    aborted = {**out_committed, p: [*out_committed[p], (10**6, "ABORTED|root-1")]}
    assert any("aborted record" in f for f in cc.check_txn(txn, log, aborted, out_raw))
    doubled = {**out_committed, p: [*out_committed[p], (10**6, out_committed[p][0][1])]}
    assert any("more than once" in f for f in cc.check_txn(txn, log, doubled, out_raw))
    dropped = {**out_committed, p: out_committed[p][1:]}
    assert any("never transformed" in f for f in cc.check_txn(txn, log, dropped, out_raw))
    ok = next(x for x in share if x.get("accepted") is True)
    assert any("more than once" in f for f in cc.check_share([*share, dict(ok)], log))
    redelivered = [*share, {"event": "delivered", "at": [ok["p"], ok["o"]], "t0": ok["t"] + 1}]
    assert any("delivered again" in f for f in cc.check_share(redelivered, log))
    rest = [x for x in share if x is not ok]
    assert cc.check_share(rest, log) == [] and cc.share_missing(rest, log) == [(ok["p"], ok["o"])]
    assert any("never accepted" in f for f in cc.check_share(rest, log, complete=True))


# --- the checks on synthetic lines (no cluster) -------------------------------------------

LOG = {0: [(0, "a"), (1, "b"), (2, "c")]}


def _done(member: str, o: int, t0: float, t: float) -> dict:
    return {"p": 0, "o": o, "v": LOG[0][o][1], "member": member, "committed": True,
            "t0": t0, "t": t}  # fmt: skip


def _assigned(member: str, committed: int, t0: float, t: float) -> dict:
    return {"event": "assigned", "member": member, "partitions": [0],
            "committed": {"0": committed}, "t0": t0, "t": t}  # fmt: skip


def test_group_check_orders_copies_by_their_clocks() -> None:
    handover = [_assigned("A", -1001, 0, 1), _done("A", 0, 2, 3), _assigned("B", 1, 4, 5),
                _done("B", 1, 6, 7), _done("B", 2, 8, 9)]  # fmt: skip
    assert cc.check_group(handover, LOG) == []
    # A read that began after a commit ended and saw less: moved backward (not in a copy).
    stale = [*handover[:2], _assigned("B", 0, 4, 5), _done("B", 1, 6, 7), _done("B", 2, 8, 9)]
    assert [f for f in cc.check_group(stale, LOG) if "backward" in f] == [
        "committed offset moved backward across copies: partition 0: B read saw 0 after "
        "A commit of 0 had 1"
    ]
    # Overlapping calls are not ordered: a read still running when the commit ended is fine.
    overlap = [*handover[:2], _assigned("B", 0, 2.5, 5), _done("B", 0, 6, 7)]
    assert not [f for f in cc.check_group(overlap, LOG) if "backward" in f]


def test_group_check_counts_an_unknown_outcome_at_most_once() -> None:
    unknown = {**_done("A", 2, 8, 9), "committed": "unknown"}
    lines = [_done("A", 0, 0, 1), _done("A", 1, 2, 3), unknown]
    assert cc.check_group(lines, LOG) == []
    assert cc.check_group([*lines, _done("B", 2, 10, 11)], LOG) == []
    assert cc.check_group(lines[:2], LOG) == ["never processed (p, o): (0, 2)"]


def test_scripts_outlive_an_unreachable_cluster_and_stop_on_sigterm(tmp_path: Path) -> None:
    """With nothing listening at the bootstrap address, every script keeps trying (it never
    exits on a retriable error) and still exits 0 soon after SIGTERM."""
    from bench.harness.raw_wire import free_port

    boot = f"127.0.0.1:{free_port('127.0.0.1')}"
    runs = {
        "group_consumer": ["--group", "g"],
        "txn_transform": ["--group", "tx", "--out-topic", OUT_TOPIC, "--transactional-id", "x"],
        "share_consumer": ["--group", "s"],
    }
    procs = {m: _start(m, boot, tmp_path / f"{m}.jsonl", *args) for m, args in runs.items()}
    try:
        time.sleep(3)
        assert {m: p.poll() for m, p in procs.items()} == dict.fromkeys(runs), {
            m: _tail(tmp_path / f"{m}.jsonl") for m in runs
        }
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        codes = {m: p.wait(EXIT_S) for m, p in procs.items()}
        assert codes == dict.fromkeys(runs, 0), codes
        assert time.monotonic() - started < 16
    finally:
        for proc in procs.values():
            CHILDREN.stop(proc, grace_s=1)
