"""The consumers a schedule runs beside its producers, and their verdicts once it is over.

``group``: two members of a classic consumer group; ``txn``: a transactional
consume-transform-produce (``events`` -> ``events-out``); ``share``: a share-group consumer
(bench/harness/nemesis/{group_consumer,txn_transform,share_consumer}.py). ``finish`` lets each
catch up with the final log (bounded), stops it and runs its checks (client_checks.py), then
asks the cluster for each group's committed offsets: once everything is processed they must be
the log's end, whatever a failover did to ``__consumer_offsets`` meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.harness.nemesis import client_checks
from bench.harness.nemesis.clients import ClientProcess, stop_all
from bench.harness.nemesis.cluster import NemesisCluster, wait_for

CATCH_UP_TIMEOUT = 90.0
GROUP = "nemesis-group"
TXN_GROUP = "nemesis-txn"
SHARE_GROUP = "nemesis-share"
NAMES = ("group", "txn", "share")

Log = dict[int, list[tuple[int, str]]]


def start(
    cluster: NemesisCluster, topic: str, root: Path, workloads: tuple[str, ...]
) -> dict[str, ClientProcess]:
    common = ["--bootstrap", cluster.bootstrap, "--topic", topic]
    clients: dict[str, ClientProcess] = {}
    if "group" in workloads:
        for copy in ("group-a", "group-b"):
            clients[copy] = ClientProcess(
                "group_consumer", [*common, "--group", GROUP], root / f"{copy}.jsonl", []
            )
    if "txn" in workloads:
        clients["txn"] = ClientProcess(
            "txn_transform", [*common, "--group", TXN_GROUP, "--out-topic", f"{topic}-out",
                              "--transactional-id", "nemesis-txn"],
            root / "txn.jsonl", [],
        )  # fmt: skip
    if "share" in workloads:
        clients["share"] = ClientProcess(
            "share_consumer", [*common, "--group", SHARE_GROUP], root / "share.jsonl", []
        )
    return clients


def finish(
    cluster: NemesisCluster,
    clients: dict[str, ClientProcess],
    topic: str,
    log: Log,
    read: Callable[[str, str], Log],
    findings: list[str],
    counts: dict[str, float],
) -> None:
    """Catch up, stop, check each workload that ran; findings and counts appended."""
    ends = {p: (records[-1][0] + 1 if records else 0) for p, records in log.items()}
    every = {(p, o) for p, records in log.items() for o, _ in records}
    group = [clients[key] for key in ("group-a", "group-b") if key in clients]
    if group:

        def settled() -> set[tuple[int, int]]:
            """Records processed, or whose commit outcome is unknown (the check counts
            those at most once): the wait's aim is the check's, not a stricter one."""
            return {(line["p"], line["o"]) for client in group for line in client.lines()
                    if line.get("committed") in (True, "unknown")}  # fmt: skip

        wait_for(lambda: every <= settled(), CATCH_UP_TIMEOUT,
                 f"the consumer group processed all {len(every)} records")  # fmt: skip
        stop_all(group, 30)
        lines = [line for client in group for line in client.lines()]
        findings += [f"group: {f}" for f in client_checks.check_group(lines, log)]
        findings += _committed_at_end(cluster, GROUP, topic, ends)
        counts["group_processed"] = sum(1 for line in lines if line.get("committed") is True)
    if "txn" in clients:
        txn = clients["txn"]
        wait_for(lambda: _committed_through(txn.lines(), ends), CATCH_UP_TIMEOUT,
                 "the transformer committed through the log's end")  # fmt: skip
        txn.stop(timeout=30)
        inputs = {value for records in log.values() for _, value in records}

        def transformed() -> Log | None:
            """read_committed ends at the last stable offset: a transaction the stopped
            transformer left open holds it back until the coordinator aborts it (its
            timeout), so read again until every committed output is below it."""
            out = read(f"{topic}-out", "read_committed")
            have = {value[:-2] for records in out.values() for _, value in records}
            return out if inputs <= have else None

        try:
            committed = wait_for(transformed, CATCH_UP_TIMEOUT, "every transformed record",
                                 interval=1.0)  # fmt: skip
        except AssertionError:  # check_txn names what is missing
            committed = read(f"{topic}-out", "read_committed")
        uncommitted = read(f"{topic}-out", "read_uncommitted")
        lines = txn.lines()
        findings += [f"txn: {f}" for f in client_checks.check_txn(lines, log, committed,
                                                                  uncommitted)]  # fmt: skip
        findings += _committed_at_end(cluster, TXN_GROUP, topic, ends)
        counts["txn_commits"] = sum(1 for line in lines if line.get("event") == "commit")
        counts["txn_aborts"] = sum(1 for line in lines if line.get("event") == "abort")
    if "share" in clients:
        share = clients["share"]

        def unsettled() -> int:
            """Records not yet accepted or acknowledged with an outcome unknown (librdkafka
            does not retry a failed acknowledgement; the broker may have taken it)."""
            seen = {(line["p"], line["o"]) for line in share.lines() if "accepted" in line}
            return len(every - seen)

        try:
            wait_for(lambda: unsettled() == 0, CATCH_UP_TIMEOUT, "the share group")
        except AssertionError:
            pass  # records past their delivery limit are archived, as Kafka does: counted
        share.stop(timeout=30)
        lines = share.lines()
        findings += [f"share: {f}" for f in client_checks.check_share(lines, log)]
        counts["share_accepted"] = sum(1 for line in lines if line.get("accepted") is True)
        counts["share_never_accepted"] = len(client_checks.share_missing(lines, log))


def _committed_through(lines: list[dict[str, Any]], ends: dict[int, int]) -> bool:
    reached: dict[int, int] = {}
    for line in lines:
        if line.get("event") == "commit":
            for partition, offset in line.get("offsets", {}).items():
                reached[int(partition)] = max(reached.get(int(partition), 0), offset)
    return all(reached.get(p, 0) >= end for p, end in ends.items() if end > 0)


def _committed_at_end(
    cluster: NemesisCluster, group: str, topic: str, ends: dict[int, int]
) -> list[str]:
    """The group's committed offsets, asked of the cluster: the log's end everywhere.

    Asked until the answer is stable and whole (a transactional commit whose markers are
    still being written answers UNSTABLE_OFFSET_COMMIT, retriable) and, for a bounded time,
    until it is the log's end; what it still is then is the finding."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "client.id": "nemesis-offsets"})  # fmt: skip
    asked = [TopicPartition(topic, p) for p in sorted(ends)]
    last: dict[int, int] = {}

    def wrong() -> dict[int, tuple[int | None, int]]:
        answer = consumer.committed(asked, timeout=10)
        if any(tp.error is not None for tp in answer):
            raise AssertionError(f"not a whole answer yet: {[tp.error for tp in answer]}")
        last.update({tp.partition: tp.offset for tp in answer})
        return {p: (last.get(p), end) for p, end in ends.items() if end and last.get(p) != end}

    try:
        wait_for(lambda: not wrong(), 60, f"{group}'s committed offsets at the log's end")
        return []
    except AssertionError:
        return [f"{group}: committed offsets (committed, log end) per partition: "
                f"{ {p: (last.get(p), end) for p, end in ends.items()} }"]  # fmt: skip
    finally:
        consumer.close()
