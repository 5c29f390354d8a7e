"""Child process for test_cleaner_crash: overwrite keys, roll, clean; until killed.

Usage: cleaner_crash_child.py <partition dir> <first round>
Each round is one batch holding every key (so it is written whole or not at
all); prints "acked <round>" once its append returned.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Run as a script: the repository root on sys.path, for the helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkette.log import LogConfig, PartitionLog
from tests.log.compaction_data import append, clean, keyed_batch

KEYS = 30
CONFIG = LogConfig(
    segment_bytes=8 * 1024, index_interval_bytes=512, cleanup_policy="compact",
    delete_retention_ms=0,
)


def round_batch(round_: int) -> bytearray:
    items: list[tuple[bytes | None, bytes | None]] = [
        (f"key-{k}".encode(), f"r{round_}-k{k}-".encode() * 5) for k in range(KEYS)
    ]
    return keyed_batch(items, compression=round_ % 2)


def main() -> None:
    directory, round_ = Path(sys.argv[1]), int(sys.argv[2])
    log = PartitionLog.open(directory, CONFIG, lambda: int(time.time() * 1000), recover=True)
    print("ready", flush=True)
    while True:
        append(log, round_batch(round_))
        print(f"acked {round_}", flush=True)
        round_ += 1
        if round_ % 3 == 0:
            log.roll()
            clean(log, int(time.time() * 1000))


if __name__ == "__main__":
    main()
