"""What the cluster promised a producer, checked against what it kept.

Pure functions over the producers' JSON lines, the final log as a client reads it
(``partition -> [(offset, value)]``) and the replicas' files, each returning findings in words
(empty: nothing wrong):

- ``check_acks``: every record acknowledged with acks=all is in the log exactly once, at the
  offset its acknowledgement gave (in its partition when the acknowledgement had no offset:
  librdkafka's implicit acknowledgement); no value at all (acknowledged or not) is in the log
  twice.
- ``check_contiguous``: offsets of each partition have no gaps (a topic with no transactions
  and no compaction).
- ``check_replicas``: once back in sync and stopped, every replica of a partition holds the
  same batches byte for byte; their offsets follow each other; leader epochs never go down
  along the log; and each replica's ``leader-epoch-checkpoint`` starts every epoch that has
  batches where the batches say it starts. Two brokers acknowledging writes in overlapping
  epochs would leave one of them truncated (a lost acknowledgement), an epoch going down, or
  replicas disagreeing on where an epoch starts: these checks see each.
"""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Log = dict[int, list[tuple[int, str]]]

# The v2 batch header up to the fields read here: baseOffset int64, batchLength int32,
# partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16, lastOffsetDelta int32.
BATCH_HEADER = struct.Struct(">qiibIhi")
BATCH_OVERHEAD = 12  # baseOffset and batchLength are not counted in batchLength


@dataclass
class AckReport:
    """The counts a schedule prints, and the findings."""

    acked: int = 0
    lost: int = 0
    duplicated: int = 0
    misplaced: int = 0
    failed: int = 0
    findings: list[str] = field(default_factory=list)


def check_acks(lines: Iterable[dict[str, Any]], log: Log, example_limit: int = 5) -> AckReport:
    """Every acknowledged record at its offset, exactly once; no value twice in the log."""
    report = AckReport()
    at_offset = {(p, offset): value for p, records in log.items() for offset, value in records}
    where: dict[str, list[tuple[int, int]]] = {}
    for p, records in log.items():
        for offset, value in records:
            where.setdefault(value, []).append((p, offset))
    examples: Counter[str] = Counter()

    def finding(kind: str, text: str) -> None:
        examples[kind] += 1
        if examples[kind] <= example_limit:
            report.findings.append(text)

    for line in lines:
        if "err" in line:
            report.failed += 1
            continue
        if "o" not in line:
            continue
        report.acked += 1
        value, partition, offset = line["v"], line["p"], line["o"]
        if offset is None:
            # librdkafka's implicit acknowledgement: a request timed out, the next one to
            # the partition succeeded, so the first one's records were persisted too; their
            # offsets are unknown to the client. They must be in that partition, once.
            if [p for p, _ in where.get(value, [])] != [partition]:
                report.lost += 1
                finding("lost", f"{value} acknowledged (offset unknown) in partition "
                        f"{partition}, found at {where.get(value)}")  # fmt: skip
            continue
        found = at_offset.get((partition, offset))
        if found == value:
            continue
        if value in where:
            report.misplaced += 1
            finding("misplaced", f"{value} acknowledged at {partition}/{offset}, "
                    f"found at {where[value]} (there: {found!r})")  # fmt: skip
        else:
            report.lost += 1
            finding("lost", f"{value} acknowledged at {partition}/{offset}, not in the log "
                    f"(there: {found!r})")  # fmt: skip
    for value, places in where.items():
        if len(places) > 1:
            report.duplicated += 1
            finding("duplicated", f"{value} is in the log {len(places)} times: {places}")
    for kind, count in examples.items():
        if count > example_limit:
            report.findings.append(f"... {count - example_limit} more {kind}")
    return report


def check_contiguous(log: Log) -> list[str]:
    """Each partition's offsets follow each other without a gap."""
    findings = []
    for partition, records in sorted(log.items()):
        for (before, _), (after, _) in itertools.pairwise(records):
            if after != before + 1:
                findings.append(f"partition {partition}: offset {before} is followed by {after}")
                break
    return findings


@dataclass(frozen=True)
class Batch:
    base_offset: int
    last_offset: int
    leader_epoch: int


def read_batches(partition_dir: Path) -> tuple[bytes, list[Batch], int]:
    """The concatenated whole batches of every segment, in offset order, and their headers.
    Segment boundaries are each broker's own affair, the batch bytes are not. The third
    value counts the bytes after the last whole batch (a torn write recovery left)."""
    data = b"".join(
        path.read_bytes() for path in sorted(partition_dir.glob("*.log"), key=lambda p: p.name)
    )
    batches = []
    position = 0
    while position + BATCH_HEADER.size <= len(data):
        base, length, epoch, _magic, _crc, _attrs, delta = BATCH_HEADER.unpack_from(data, position)
        end = position + BATCH_OVERHEAD + length
        if length <= 0 or end > len(data):
            break
        batches.append(Batch(base, base + delta, epoch))
        position = end
    return data[:position], batches, len(data) - position


def _epoch_starts(partition_dir: Path) -> dict[int, int]:
    path = partition_dir / "leader-epoch-checkpoint"
    if not path.exists():
        return {}
    lines = path.read_text().split("\n")[2:]
    starts = {}
    for line in lines:
        if line.strip():
            epoch, offset = line.split()
            starts[int(epoch)] = int(offset)
    return starts


def check_replicas(
    data_dirs: dict[int, Path], topic: str, partitions: int, ends: dict[int, int] | None = None
) -> list[str]:
    """Every replica of every partition byte-identical, in order, epochs consistent, with no
    bytes after its last whole batch; with ``ends`` (partition -> the end offset a client
    read), ending where the client's read ended."""
    findings = []
    for partition in range(partitions):
        name = f"{topic}-{partition}"
        replicas = {
            broker: read_batches(data_dir / name)
            for broker, data_dir in sorted(data_dirs.items())
            if (data_dir / name).is_dir()
        }
        if len(replicas) < len(data_dirs):
            findings.append(f"{name}: replicas only on brokers {sorted(replicas)}")
        digests = {broker: data for broker, (data, _, _) in replicas.items()}
        if len(set(digests.values())) > 1:
            sizes = {broker: len(data) for broker, data in digests.items()}
            ends = {
                broker: batches[-1].last_offset if batches else -1
                for broker, (_, batches, _) in replicas.items()
            }
            findings.append(f"{name}: replicas differ (bytes {sizes}, last offsets {ends})")
        for broker, (_, batches, leftover) in replicas.items():
            where = f"{name} on broker {broker}"
            findings += _check_batch_order(where, batches)
            if leftover:
                findings.append(f"{where}: {leftover} bytes after the last whole batch")
            end = batches[-1].last_offset + 1 if batches else 0
            if ends is not None and ends.get(partition, 0) != end:
                findings.append(f"{where}: ends at {end}, a client read to {ends.get(partition)}")
            first_of_epoch: dict[int, int] = {}
            for batch in batches:
                first_of_epoch.setdefault(batch.leader_epoch, batch.base_offset)
            starts = _epoch_starts(data_dirs[broker] / name)
            for epoch, first in first_of_epoch.items():
                if starts.get(epoch) != first:
                    findings.append(
                        f"{name} on broker {broker}: epoch {epoch} starts at {first} in the log, "
                        f"at {starts.get(epoch)} in leader-epoch-checkpoint"
                    )
    return findings


def _check_batch_order(where: str, batches: list[Batch]) -> list[str]:
    for before, after in itertools.pairwise(batches):
        if after.base_offset != before.last_offset + 1:
            return [f"{where}: batch at {after.base_offset} follows one ending at "
                    f"{before.last_offset}"]  # fmt: skip
        if after.leader_epoch < before.leader_epoch:
            return [f"{where}: leader epoch goes down from {before.leader_epoch} to "
                    f"{after.leader_epoch} at offset {after.base_offset}"]  # fmt: skip
    return []
