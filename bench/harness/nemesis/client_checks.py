"""The checks run on what the nemesis client scripts wrote, once a schedule is over.

Pure functions over the scripts' JSON lines (``lines``, every copy's lines together, each copy
in its own order) and topic logs (``{partition: [(offset, value), ...]}`` in offset order);
each ``check_*`` returns human-readable findings, empty when the guarantee held. The
``*_info`` functions say what happened (aborts, unknown outcomes, records never accepted)
without judging it. ``read_log`` is the one function with I/O: it reads a topic's log.

Only record-outcome lines have an ``"o"`` (events name a record by ``"at": [p, o]``), but
count with ``committed is True`` / ``accepted is True``: outcomes can be "unknown" or false.

Ordering across copies: a line's ``t0``/``t`` are wall-clock times before / after the client
call it reports, on one machine; X happened before Y when ``X.t < Y.t0``.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

Log = dict[int, list[tuple[int, str]]]
Key = tuple[int, int]  # (partition, offset)
SHOWN = 10  # findings listed one by one per kind; the rest summed up


def _records(log: Log) -> dict[Key, str]:
    return {(p, o): v for p, entries in log.items() for o, v in entries}


def _capped(what: str, items: Iterable[Any]) -> list[str]:
    items = list(items)
    shown = [f"{what}: {item}" for item in items[:SHOWN]]
    if len(items) > SHOWN:
        shown.append(f"{what}: ... {len(items) - SHOWN} more ({len(items)} in all)")
    return shown


def _values_match(what: str, claimed: list[dict], records: dict[Key, str]) -> list[str]:
    """Each claimed (p, o) exists in the log and carries the value the log has there."""
    absent = [(c["p"], c["o"]) for c in claimed if (c["p"], c["o"]) not in records]
    wrong = [
        ((c["p"], c["o"]), c["v"], records[(c["p"], c["o"])])
        for c in claimed
        if (c["p"], c["o"]) in records and c["v"] != records[(c["p"], c["o"])]
    ]
    return _capped(f"{what} at an offset the log does not have", absent) + _capped(
        f"{what} with another value than the log's ((p, o), claimed, log)", wrong
    )


# --- consumer groups -----------------------------------------------------------


def check_group(lines: list[dict], log: Log) -> list[str]:
    """Every record of ``log`` processed exactly once by the copies together (a record
    written ``"committed": "unknown"`` counts at most once), each processed (p, o) carries
    the log's value, and the group's committed offsets never move backward: not within a
    copy's own sequence (its reads at assignment and its commits, in line order) and not
    across copies (a commit or read that started after another finished never sees less)."""
    records = _records(log)
    done = [line for line in lines if "o" in line and line.get("committed") is True]
    unsure = {(line["p"], line["o"]) for line in lines
              if "o" in line and line.get("committed") == "unknown"}  # fmt: skip
    counts = Counter((line["p"], line["o"]) for line in done)
    findings = _capped("processed more than once ((p, o), times)",
                       sorted((k, n) for k, n in counts.items() if n > 1))  # fmt: skip
    findings += _values_match("processed", done, records)
    never = sorted(k for k in records if k not in counts and k not in unsure)
    findings += _capped("never processed (p, o)", never)
    findings += _backward_in_copies(lines)
    findings += _backward_across_copies(lines)
    return findings


def _claims(line: dict) -> list[tuple[int, int]]:
    """(partition, committed offset) a line says the group had: a read or a commit."""
    if line.get("event") == "assigned":
        return [(int(p), c) for p, c in (line.get("committed") or {}).items()]
    if "o" in line and line.get("committed") is True:
        return [(line["p"], line["o"] + 1)]
    return []


def _backward_in_copies(lines: list[dict]) -> list[str]:
    last: dict[tuple[str, int], int] = {}
    moved = []
    for line in lines:
        for partition, offset in _claims(line):
            key = (line.get("member", "?"), partition)
            previous = last.get(key)
            if previous is not None and offset < previous:
                moved.append(f"{key[0]} partition {partition}: {previous} -> {offset}")
            last[key] = offset if previous is None else max(offset, previous)
    return _capped("committed offset moved backward within a copy", moved)


def _backward_across_copies(lines: list[dict]) -> list[str]:
    events: dict[int, list[tuple[float, float, int, str]]] = defaultdict(list)
    for line in lines:
        if "t0" not in line or "t" not in line:
            continue
        for partition, offset in _claims(line):
            what = "read" if line.get("event") == "assigned" else f"commit of {line['o']}"
            events[partition].append(
                (line["t0"], line["t"], offset, f"{line.get('member', '?')} {what}")
            )
    moved = []
    for partition, evs in sorted(events.items()):
        by_end = sorted(evs, key=lambda e: e[1])
        best: tuple[int, str] | None = None  # the highest offset of what has finished
        i = 0
        for t0, _t, offset, what in sorted(evs, key=lambda e: e[0]):
            while i < len(by_end) and by_end[i][1] < t0:
                if best is None or by_end[i][2] > best[0]:
                    best = (by_end[i][2], by_end[i][3])
                i += 1
            if best is not None and offset < best[0]:
                moved.append(f"partition {partition}: {what} saw {offset} after "
                             f"{best[1]} had {best[0]}")  # fmt: skip
    return _capped("committed offset moved backward across copies", moved)


def group_info(lines: list[dict]) -> list[str]:
    """Counts worth printing: processed, unknown outcomes, commit errors, assignments."""
    kinds = Counter(
        "processed" if line.get("committed") is True
        else "unknown outcome" if line.get("committed") == "unknown"
        else line.get("event", "other")
        for line in lines
    )  # fmt: skip
    return [f"{kind}: {n}" for kind, n in sorted(kinds.items())]


# --- transactions --------------------------------------------------------------


def check_txn(
    lines: list[dict], input_log: Log, output_log_read_committed: Log,
    output_log_read_uncommitted: Log,
) -> list[str]:  # fmt: skip
    """read_committed output: ``"<v>|t"`` for every input value exactly once, nothing else
    (no ``ABORTED|`` value, nothing not made from an input value), and each of its records
    is the record read_uncommitted shows at that offset. ``lines`` feed only ``txn_info``."""
    inputs = {v for entries in input_log.values() for _o, v in entries}
    committed = Counter(v for entries in output_log_read_committed.values() for _o, v in entries)
    findings = _capped("read_committed shows an aborted record",
                       sorted(v for v in committed if v.startswith("ABORTED|")))  # fmt: skip
    findings += _capped(
        "output not made from an input value",
        sorted(
            v
            for v in committed
            if not v.startswith("ABORTED|") and not (v.endswith("|t") and v[:-2] in inputs)
        ),
    )
    findings += _capped("output more than once (value, times)",
                        sorted((v, n) for v, n in committed.items() if n > 1))  # fmt: skip
    findings += _capped("input never transformed in a committed transaction",
                        sorted(v for v in inputs if f"{v}|t" not in committed))  # fmt: skip
    raw = _records(output_log_read_uncommitted)
    differ = [((p, o), v, raw.get((p, o))) for p, entries in output_log_read_committed.items()
              for o, v in entries if raw.get((p, o)) != v]  # fmt: skip
    findings += _capped("read_committed record not the one read_uncommitted has "
                        "((p, o), committed, uncommitted)", differ)  # fmt: skip
    return findings


def txn_info(lines: list[dict], output_log_read_uncommitted: Log) -> list[str]:
    """Commits, aborts (planned and on errors), restarts, and the aborted records in the
    read_uncommitted output: a run without any abort did not exercise the check."""
    kinds = Counter(
        "abort (planned)" if line.get("event") == "abort" and line.get("planned")
        else "abort (error)" if line.get("event") == "abort"
        else line.get("event", "other")
        for line in lines
    )  # fmt: skip
    aborted = sum(v.startswith("ABORTED|") for entries in output_log_read_uncommitted.values()
                  for _o, v in entries)  # fmt: skip
    info = [f"{kind}: {n}" for kind, n in sorted(kinds.items())]
    info.append(f"aborted records in the read_uncommitted output: {aborted}")
    if not aborted:
        info.append("no aborted record in the output: the abort path was not exercised")
    return info


# --- share groups --------------------------------------------------------------


def check_share(lines: list[dict], log: Log, complete: bool = False) -> list[str]:
    """No (p, o) accepted twice, no record delivered again after its acceptance was
    confirmed, every accepted record's value the log's; with ``complete`` (the consumer ran
    until it had everything) also every record of the log accepted."""
    records = _records(log)
    accepted = [line for line in lines if "o" in line and line.get("accepted") is True]
    counts = Counter((line["p"], line["o"]) for line in accepted)
    findings = _capped("accepted more than once ((p, o), times)",
                       sorted((k, n) for k, n in counts.items() if n > 1))  # fmt: skip
    findings += _values_match("accepted", accepted, records)
    first_accept: dict[Key, float] = {}
    for line in accepted:
        key = (line["p"], line["o"])
        first_accept[key] = min(line.get("t", float("inf")), first_accept.get(key, float("inf")))
    again = [
        (tuple(line["at"]), line.get("member"))
        for line in lines
        if line.get("event") == "delivered"
        and line.get("t0", float("-inf")) > first_accept.get(tuple(line["at"]), float("inf"))
    ]
    findings += _capped("delivered again after its acceptance was confirmed", again)
    if complete:
        findings += _capped("never accepted (p, o)", share_missing(lines, log))
    return findings


def share_missing(lines: list[dict], log: Log) -> list[Key]:
    """Records of ``log`` no line says were accepted, sorted."""
    accepted = {(line["p"], line["o"]) for line in lines
                if "o" in line and line.get("accepted") is True}  # fmt: skip
    return sorted(k for k in _records(log) if k not in accepted)


def share_info(lines: list[dict], log: Log) -> list[str]:
    kinds = Counter(
        f"accepted={line['accepted']}" if "accepted" in line else line.get("event", "other")
        for line in lines
    )
    info = [f"{kind}: {n}" for kind, n in sorted(kinds.items())]
    info.append(f"records never accepted: {len(share_missing(lines, log))}")
    return info


# --- reading a topic -----------------------------------------------------------


def read_log(
    bootstrap: str, topic: str, isolation: str = "read_uncommitted", timeout: float = 60
) -> Log:
    """Every record of every partition of ``topic``, from the beginning to its end when the
    read starts (the high watermark; the last stable offset with read_committed), values
    decoded. Assigns partitions (no group). Raises TimeoutError past ``timeout``."""
    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "nemesis-log-reader",
        "enable.auto.commit": False, "enable.partition.eof": True,
        # A leader move mid-read must not skip to the end: an out-of-range fetch restarts.
        "auto.offset.reset": "earliest",
        "isolation.level": isolation, "fetch.wait.max.ms": 100, "client.id": "nemesis-reader",
    })  # fmt: skip
    try:
        ends = _end_offsets(consumer, topic, deadline)
        log: Log = {p: [] for p in ends}
        left = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(left)])
        while left:
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic}: partitions {sorted(left)} not at their end")
            for message in consumer.consume(1000, 0.5):
                p, error = message.partition(), message.error()
                if error is not None and error.code() != KafkaError._PARTITION_EOF:
                    continue  # transient (a leader moving): the fetch goes on
                if error is None and message.offset() < ends[p]:
                    log[p].append((message.offset(), message.value().decode()))
                # read_committed skips aborted records: the end is known by EOF or position
                if (message.offset() + (error is None)) >= ends[p]:
                    left.discard(p)
        return log
    finally:
        consumer.close()


def _end_offsets(consumer: Consumer, topic: str, deadline: float) -> dict[int, int]:
    """The end of every partition, asked until every partition answers or the deadline."""
    while True:
        try:
            partitions = consumer.list_topics(topic, timeout=5).topics[topic].partitions
            if partitions:
                return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)[1]
                        for p in sorted(partitions)}  # fmt: skip
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"no end offsets for {topic}")
        time.sleep(0.2)
