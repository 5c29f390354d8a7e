"""Partition-log cost per batch: plain, idempotent and transactional appends; LSO-bounded reads.

A script, not a test: prints figures (best of rounds; the machine is shared).

    python -m bench.txn_log_bench [--batches 100000] [--rounds 3]

Each case appends ``--batches`` one-record batches (100-byte values) through
``check_sequence`` + ``append``, as the produce path does once a batch is
validated. "transactional" commits every 100 batches (one marker, decoded at
append). The target is that plain and idempotent appends cost what they did
before transactions existed (compare with the same script on an older build:
the numbers differ only by noise), since a non-transactional batch pays only a
few header-bit tests. The read case compares a full read of the log without
and with ``max_offset`` (the read_committed bound).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from kafkette.log import LogConfig, PartitionLog
from kafkette.wire.record_batch import iter_batches, validate_batch
from kafkette.wire.records import ControlRecordType, Record, build_batch, build_control_batch

TS = 1_700_000_000_000


def make_batches(kind: str, count: int) -> list[tuple[bytearray, list]]:
    out = []
    plain = bytearray(build_batch([Record(0, 0, None, b"x" * 100)], base_timestamp=TS))
    for i in range(count):
        if kind == "plain":
            batch = bytearray(plain)
        elif kind == "transactional" and i % 101 == 100:
            batch = bytearray(build_control_batch(
                ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, timestamp=TS))
        else:
            sequence = i - i // 101 if kind == "transactional" else i
            batch = bytearray(build_batch(
                [Record(0, 0, None, b"x" * 100)], base_timestamp=TS, producer_id=1,
                producer_epoch=0, base_sequence=sequence,
                transactional=kind == "transactional",
            ))
        out.append((batch, [validate_batch(batch)]))
    return out


def bench_appends(root: Path, kind: str, count: int, rounds: int) -> tuple[float, Path]:
    best = float("inf")
    directory = root
    for r in range(rounds):
        directory = root / f"{kind}-{r}"
        log = PartitionLog.open(directory, LogConfig(), lambda: TS, recover=False)
        batches = make_batches(kind, count)
        start = time.perf_counter()
        for batch, headers in batches:
            verdict = log.check_sequence(headers[0])
            assert verdict.append, verdict
            log.append(batch, headers)
        best = min(best, time.perf_counter() - start)
        log.close()
    return best / count * 1e6, directory


def bench_reads(directory: Path, rounds: int) -> tuple[float, float]:
    log = PartitionLog.open(directory, LogConfig(), lambda: TS, recover=False)
    results = []
    for bounded in (False, True):
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            offset = 0
            # The transactional log may end in an open transaction: read to the LSO.
            stop = log.last_stable_offset
            while offset < stop:
                bound = stop if bounded else None
                info = log.read(offset, 1 << 20, bound)
                data = info.to_bytes()
                if bounded:
                    log.aborted_transactions(offset, info.next_offset)
                offset = iter_batches(data)[-1].next_offset  # as a client does, both cases
            best = min(best, time.perf_counter() - start)
        results.append(log.size_bytes * stop / log.log_end_offset / best / 1e6)
    log.close()
    return results[0], results[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="txn-log-bench-"))
    try:
        directory = root
        for kind in ("plain", "idempotent", "transactional"):
            micros, directory = bench_appends(root, kind, args.batches, args.rounds)
            print(f"{kind + ' append (us/batch)':40s}{micros:8.2f}")
        uncommitted, committed = bench_reads(directory, args.rounds)
        print(f"{'read, read_uncommitted (MB/s)':40s}{uncommitted:8.0f}")
        print(f"{'read, read_committed bound (MB/s)':40s}{committed:8.0f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
