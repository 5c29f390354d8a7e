"""Log cleaner throughput, and append latency while it cleans.

Run ``python -m bench.cleaner_bench`` (``--mb`` of log to clean, default 64; ``--keys``
distinct keys, default 10,000; ``--value-size`` default 200; ``--codec`` 0-4).

1. *Throughput*: a compacted partition log of ``--mb`` MiB (keys overwritten round after
   round, batches of 100 records, 8 MiB segments) is cleaned once with
   ``log.cleaner.io.max.bytes.per.second`` unlimited; prints MB/s of log read (the
   segments before the clean) and the size after.
2. *Appends while cleaning*: another partition log takes one 16 KiB batch every 2 ms
   from the main thread (as the broker's append worker would) for the same duration,
   once with the cleaner idle and once while a cleaner thread cleans a fresh copy of the
   log above; prints p50 / p99 / max append latency: the figure that says whether produce
   stays flat.

Both clean as the broker does: this process keeps the pick, grouping and swaps, and a
cleaner process (``log/cleaner_process.py``) reads, decodes and writes, so it never holds
this process's GIL. ``--in-thread`` runs the whole clean in a thread of this process
instead (``clean_log``), as the broker did before.

A script, not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from kafkette.log import LogConfig, PartitionLog
from kafkette.log.cleaner import Throttler, clean_log, clean_log_with
from kafkette.log.cleaner_process import CleanerProcess
from kafkette.log.offset_map import OffsetMap
from kafkette.wire.record_batch import validate_batch
from kafkette.wire.records import Record, build_batch

MB = 1024 * 1024


def now_ms() -> int:
    return int(time.time() * 1000)


def fill(directory: Path, mb: int, keys: int, value_size: int, codec: int) -> PartitionLog:
    config = LogConfig(segment_bytes=8 * MB, cleanup_policy="compact")
    log = PartitionLog.open(directory, config, now_ms, recover=False)
    # Half random, half repeated text (as bench.validation_bench), so codecs have real work.
    rnd = random.Random(1)
    text = b"kafkette bench value " * (value_size // 20 + 1)
    half = value_size // 2
    values = [rnd.randbytes(half) + text[: value_size - half] for _ in range(64)]
    key_index = 0
    while log.size_bytes < mb * MB:
        records = []
        for i in range(100):
            value = values[key_index % 61]
            records.append(Record(i, 0, b"key-%08d" % (key_index % keys), value))
            key_index += 1
        batch = bytearray(build_batch(records, compression=codec))
        log.append(batch, [validate_batch(batch)])
    log.roll()
    return log


def clean_once(log: PartitionLog, process: CleanerProcess | None) -> tuple[float, int]:
    """One clean, in ``process`` (None: in this thread); (seconds, bytes read)."""
    started = time.perf_counter()
    abort = threading.Event()
    if process is None:
        stats = clean_log(log, 0, OffsetMap(128 * MB), now_ms(), Throttler(1e308, abort))
    else:
        stats = clean_log_with(
            log, 0, now_ms(), lambda job: process.session(job, 128 * MB, 1e308, abort)
        )
    assert stats is not None
    return time.perf_counter() - started, stats.bytes_read


def append_latencies(directory: Path, seconds: float) -> list[float]:
    log = PartitionLog.open(directory, LogConfig(), now_ms, recover=False)
    records = [Record(i, 0, b"k%d" % i, b"x" * 150) for i in range(100)]
    template = build_batch(records)
    latencies = []
    deadline = time.perf_counter() + seconds
    next_at = time.perf_counter()
    while time.perf_counter() < deadline:
        batch = bytearray(template)
        header = validate_batch(batch)
        started = time.perf_counter()
        log.append(batch, [header])
        latencies.append((time.perf_counter() - started) * 1e6)
        next_at += 0.002
        time.sleep(max(0.0, next_at - time.perf_counter()))
    log.close(flush=False)
    return latencies


def summary(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[int(len(ordered) * 0.99)]
    return f"p50 {statistics.median(ordered):.0f} us, p99 {p99:.0f} us, max {ordered[-1]:.0f} us"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--value-size", type=int, default=200)
    parser.add_argument("--codec", type=int, default=0)
    parser.add_argument("--in-thread", action="store_true",
                        help="clean in a thread of this process (the broker's old way)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cleaner-bench-"))
    process = None if args.in_thread else CleanerProcess()
    if process is not None:
        process.start()
    try:
        source = root / "t-0"
        log = fill(source, args.mb, args.keys, args.value_size, args.codec)
        before = log.size_bytes
        log.close()
        copy = root / "copy-0"
        shutil.copytree(source, copy)
        log = PartitionLog.open(copy, LogConfig(segment_bytes=8 * MB, cleanup_policy="compact"),
                                now_ms, recover=False)
        took, read = clean_once(log, process)
        after = log.size_bytes
        log.close()
        where = "in a thread" if process is None else "in the cleaner process"
        print(f"clean {where} of {before / MB:.1f} MiB ({args.keys} keys, {args.value_size} B "
              f"values, codec {args.codec}): {took:.2f} s, {read / MB / took:.1f} MB/s read, "
              f"{after / MB:.2f} MiB after")
        quiet = append_latencies(root / "quiet-0", took)
        print(f"appends, cleaner idle:    {summary(quiet)}")
        shutil.rmtree(copy)
        shutil.copytree(source, copy)
        log = PartitionLog.open(copy, LogConfig(segment_bytes=8 * MB, cleanup_policy="compact"),
                                now_ms, recover=False)
        cleaner = threading.Thread(target=clean_once, args=(log, process))
        cleaner.start()
        busy = append_latencies(root / "busy-0", took)
        cleaner.join()
        log.close()
        print(f"appends, cleaner running: {summary(busy)}")
    finally:
        if process is not None:
            process.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
