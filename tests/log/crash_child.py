"""Child process for test_crash_recovery: append until killed, print each ack.

Usage: crash_child.py <partition dir> <first batch number>
Prints "<batch number> <base offset> <last offset>" after each append returns
(flush.messages=1, so each ack follows an fsync).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Run as a script: the repository root on sys.path, for the helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkette.log import LogConfig, PartitionLog
from kafkette.wire.record_batch import validate_batch
from tests.log import log_batches

CONFIG = LogConfig(segment_bytes=64 * 1024, index_interval_bytes=1024, flush_interval_messages=1)


def batch_number(number: int) -> bytearray:
    """The deterministic batch the parent can rebuild to compare bytes."""
    return log_batches.build_sized_batch(
        1 + number % 5, 50 + (number * 37) % 3000, seed=number,
        base_timestamp=1_700_000_000_000 + number,
    )


def main() -> None:
    directory, first = Path(sys.argv[1]), int(sys.argv[2])
    log = PartitionLog.open(
        directory, CONFIG, lambda: int(time.time() * 1000), recover=True
    )
    print(f"ready {log.log_end_offset}", flush=True)
    number = first
    while True:
        batch = batch_number(number)
        info = log.append(batch, [validate_batch(batch)])
        print(f"{number} {info.base_offset} {info.last_offset}", flush=True)
        number += 1


if __name__ == "__main__":
    main()
