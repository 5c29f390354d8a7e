"""Reads racing appends, retention and flushes on the same partition (real threads)."""

from __future__ import annotations

import itertools
import threading

from kafkette.log import LogConfig, OffsetOutOfRange, PartitionLog
from kafkette.wire.record_batch import iter_batches, validate_batch
from tests.log import log_batches


def test_reads_see_only_whole_batches_while_appending_and_deleting(tmp_path, clock):
    config = LogConfig(segment_bytes=4096, index_interval_bytes=256, retention_bytes=20_000)
    log = PartitionLog.open(tmp_path / "t-0", config, clock, recover=False)
    stop = threading.Event()
    errors: list[BaseException] = []
    reads = [0]

    def reader() -> None:
        try:
            while not stop.is_set():
                start = log.log_start_offset
                try:
                    info = log.read(start, 3000)
                    data = info.to_bytes()
                except OffsetOutOfRange:
                    continue  # retention moved the start meanwhile
                if not data:
                    continue
                # Regions may outlive deletion of their segment: still whole batches.
                headers = iter_batches(data)  # validates every CRC
                for before, after in itertools.pairwise(headers):
                    assert after.base_offset == before.next_offset
                reads[0] += 1
        except BaseException as exc:
            errors.append(exc)

    def housekeeper() -> None:
        try:
            while not stop.is_set():
                log.apply_retention()
                log.maybe_flush()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    threads.append(threading.Thread(target=housekeeper))
    for thread in threads:
        thread.start()
    try:
        for i in range(1500):
            batch = log_batches.build_sized_batch(1 + i % 3, 40 + i % 200, seed=i)
            info = log.append(batch, [validate_batch(batch)])
            assert info.base_offset + validate_batch(batch).last_offset_delta == info.last_offset
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    assert not errors, errors
    assert reads[0] > 0
    assert log.log_start_offset > 0
    log.apply_retention()
    assert 20_000 <= log.size_bytes < 20_000 + 4096
    log.close()
