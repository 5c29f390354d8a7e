"""Child process for test_replication_crash: replication-style log work until killed.

Usage: replication_crash_child.py <data dir> <seed>

Opens (recovering) a DataDir with topic ``r`` (one partition, replication
enabled) and loops over random operations a replica performs: leader appends
in the current epoch, follower appends with offset gaps and the leader's
epochs, truncations, a new leader epoch, a restart at a higher offset; after
each it sets the HW and checkpoints it. Prints one line per operation.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

# Run as a script: the repository root on sys.path, for the helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafkette.log import DataDir, LogConfig
from kafkette.wire.record_batch import patch_base_offset, patch_leader_epoch, read_header
from tests.log import log_batches

CONFIG = LogConfig(segment_bytes=16 * 1024, index_interval_bytes=512)
TOPIC = "r"


def main() -> None:
    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    data_dir = DataDir.open(directory, CONFIG, lambda: int(time.time() * 1000))
    if TOPIC not in data_dir.topics:
        data_dir.create_topic(TOPIC, 1, {})
    log = data_dir.partition(TOPIC, 0)
    log.enable_replication(data_dir.high_watermarks().get((TOPIC, 0), 0))
    epoch = max(log.leader_epoch_cache.latest_epoch, 0)
    print(f"ready {log.log_end_offset}", flush=True)
    number = 0
    while True:
        op = rng.random()
        batch = log_batches.build_sized_batch(1 + number % 4, 40 + number % 200, seed=number)
        if op < 0.45:
            patch_leader_epoch(batch, epoch)
            log.append(batch, [read_header(batch)])
        elif op < 0.8:
            patch_base_offset(batch, log.log_end_offset + rng.choice((0, 0, 3, 50)))
            patch_leader_epoch(batch, epoch)
            log.append_as_follower(batch)
        elif op < 0.9:
            low = log.log_start_offset
            log.truncate_to(rng.randint(low, max(low, log.log_end_offset)))
        elif op < 0.98:
            epoch += 1
            log.assign_leader_epoch(epoch)
        else:
            log.truncate_fully_and_start_at(log.log_end_offset + 10)
        log.set_high_watermark(log.log_end_offset - rng.randint(0, 5))
        data_dir.checkpoint_high_watermarks()
        print(f"{number} {log.log_end_offset}", flush=True)
        number += 1


if __name__ == "__main__":
    main()
