"""Child process for test_transactions: transactional appends until killed, one ack line each.

Usage: txn_crash_child.py <partition dir>
Prints "ready", then after each append returns one line:
"data <producer id> <base offset>", "commit <producer id> <offset>" or
"abort <producer id> <offset>". Segments are tiny, so appends roll (and write
producer snapshots) often and markers land in every segment position: a kill
falls between a marker's write and its abort-index entry's now and then.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

# Run as a script: the repository root on sys.path, for the helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkette.log import LogConfig, PartitionLog
from tests.log.txn_batches import TxnProducer, append

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)
PRODUCERS = (21, 22, 23)


def main() -> None:
    directory = Path(sys.argv[1])
    log = PartitionLog.open(directory, CONFIG, lambda: int(time.time() * 1000), recover=True)
    producers = {}
    for producer_id in PRODUCERS:
        producer = TxnProducer(producer_id)
        entry = log.producer_state.table.get(producer_id)
        if entry is not None and entry.batches:
            producer.sequence = entry.batches[-1].last_sequence + 1
        producers[producer_id] = producer
    print("ready", flush=True)
    number = 0
    while True:
        producer = producers[PRODUCERS[number % len(PRODUCERS)]]
        entry = log.producer_state.table.get(producer.producer_id)
        is_open = entry is not None and entry.current_txn_first_offset >= 0
        if is_open and number % 5 in (2, 4):
            commit = number % 10 == 2
            offset, _ = append(log, producer.commit() if commit else producer.abort())
            kind = "commit" if commit else "abort"
        else:
            offset, _ = append(log, producer.data(1 + number % 3))
            kind = "data"
        print(f"{kind} {producer.producer_id} {offset}", flush=True)
        number += 1


if __name__ == "__main__":
    main()
