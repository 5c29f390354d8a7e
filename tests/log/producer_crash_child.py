"""Child process for test_producer_state: idempotent appends until killed, one ack line each.

Usage: producer_crash_child.py <partition dir>
Prints "ready <log end offset>", then "<producer id> <first seq> <count> <base offset>"
after each append returns. Segments are tiny, so nearly every append rolls
and writes a producer snapshot: a kill lands inside snapshot writes often.
Each producer continues from the sequence the reopened log remembers.
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

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)
PRODUCERS = (11, 12, 13)


def main() -> None:
    directory = Path(sys.argv[1])
    log = PartitionLog.open(directory, CONFIG, lambda: int(time.time() * 1000), recover=True)
    sequences = {}
    for producer_id in PRODUCERS:
        entry = log.producer_state.table.get(producer_id)
        sequences[producer_id] = entry.batches[-1].last_sequence + 1 if entry else 0
    print(f"ready {log.log_end_offset}", flush=True)
    number = 0
    while True:
        producer_id = PRODUCERS[number % len(PRODUCERS)]
        count = 1 + number % 4
        sequence = sequences[producer_id]
        batch = log_batches.build_idempotent_batch(producer_id, 0, sequence, count)
        header = validate_batch(batch)
        verdict = log.check_sequence(header)
        assert verdict.append, verdict
        info = log.append(batch, [header])
        sequences[producer_id] = sequence + count
        print(f"{producer_id} {sequence} {count} {info.base_offset}", flush=True)
        number += 1


if __name__ == "__main__":
    main()
