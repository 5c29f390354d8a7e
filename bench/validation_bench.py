"""Cost of validating a produced batch, as the broker does before appending it.

Run ``python -m bench.validation_bench`` (``--seconds`` per figure, default 0.3). For
100 B and 1 KiB records, uncompressed and with each codec, in batches of 16 KiB and
1 MiB of record bytes, prints µs per batch and ns per record for:

- ``before``: what the produce path checked until issue 12: header sanity + CRC-32C
  (``record_batch.validate_batch``);
- ``now``: ``batch_validation.validate_produce_records`` (CRC, codec, counts,
  decompression, every record's framing), with the C record walk when built;
- ``python walk``: the same with the pure-Python walk (the fallback without a compiler),
  uncompressed only.

Values are half random, half repeated text, so codecs have realistic work. A script, not
a test: figures depend on the machine. End-to-end throughput is the harness's
``produce`` and ``produce-compressed`` workloads (``python -m bench``).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from kafkette.wire import batch_validation
from kafkette.wire.batch_validation import validate_produce_records
from kafkette.wire.record_batch import validate_batch
from kafkette.wire.records import build_batch_from_values

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
LIMIT = 1 << 24


def sample_values(size: int, count: int, seed: int = 1) -> list[bytes]:
    rnd = random.Random(seed)
    text = b"kafkette bench value " * (size // 20 + 1)
    half = size // 2
    return [rnd.randbytes(half) + text[: size - half] for _ in range(count)]


def per_call_us(operation: Callable[[], object], seconds: float) -> float:
    """Best of three timed loops of ``operation``, each about ``seconds / 3`` long."""
    operation()
    calls = 1
    while True:  # size the loop to the time budget
        started = time.perf_counter()
        for _ in range(calls):
            operation()
        took = time.perf_counter() - started
        if took > seconds / 10 or calls > 1 << 20:
            break
        calls *= 4
    per_loop = max(1, int(calls * (seconds / 3) / max(took, 1e-9)))
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(per_loop):
            operation()
        best = min(best, (time.perf_counter() - started) / per_loop)
    return best * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="time per figure")
    args = parser.parse_args(argv)
    c_walk = batch_validation._walk is not batch_validation.python_walk
    print(f"record walk: {'C' if c_walk else 'pure Python (no C extension built)'}")
    print(
        f"{'record':>6} {'codec':>6} {'batch':>8} {'records':>7} | {'before µs':>10} "
        f"{'now µs':>9} {'ns/rec':>7} {'now MB/s':>9} | {'python walk µs':>14}"
    )
    for size in (100, 1024):
        for batch_bytes in (16 * 1024, 1 << 20):
            count = max(1, batch_bytes // size)
            values = [(None, v) for v in sample_values(size, count)]
            for codec, name in CODECS.items():
                batch = build_batch_from_values(values, compression=codec)
                before = per_call_us(lambda b=batch: validate_batch(b), args.seconds)
                now = per_call_us(
                    lambda b=batch: validate_produce_records(b, max_message_bytes=LIMIT),
                    args.seconds,
                )
                python = ""
                if codec == 0:
                    body = memoryview(batch)[61:]
                    walk_us = per_call_us(
                        lambda b=body, n=count: batch_validation.python_walk(b, n), args.seconds
                    )
                    python = f"{before + walk_us:14.1f}"
                print(
                    f"{size:>6} {name:>6} {batch_bytes // 1024:>6}Ki {count:>7} | "
                    f"{before:>10.1f} {now:>9.1f} {now * 1000 / count:>7.0f} "
                    f"{size * count / now:>9.0f} | {python:>14}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
