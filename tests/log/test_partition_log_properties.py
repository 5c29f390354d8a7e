"""Model-based test: random appends, rolls, retention, deletes, truncation and reopens.

The model is the list of batches the log should still hold; after every step
the log must serve exactly those at or above the log start offset, read back
fetch by fetch.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kafkette.log import LogConfig, PartitionLog
from kafkette.wire.record_batch import iter_batches
from tests.log import log_batches

START_MS = 1_700_000_000_000


@dataclass
class StoredBatch:
    base: int
    last: int
    data: bytes


class Clock:
    def __init__(self) -> None:
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kafkette-log-prop-"))
        self.directory = self.root / "t-0"
        self.clock = Clock()
        self.config = LogConfig(
            segment_bytes=1200, index_interval_bytes=128, retention_ms=-1, max_index_bytes=96
        )
        self.log = PartitionLog.open(self.directory, self.config, self.clock, recover=False)
        self.model: list[StoredBatch] = []
        self.start = 0
        self.end = 0
        self.abandoned: list[PartitionLog] = []

    def teardown(self) -> None:
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(
        shapes=st.lists(
            st.tuples(st.integers(1, 4), st.integers(0, 80)), min_size=1, max_size=2
        ),
        ts_step=st.integers(0, 50),
    )
    def append(self, shapes, ts_step):
        parts = [
            log_batches.build_sized_batch(
                count, size, base_timestamp=self.clock.now_ms, seed=len(self.model)
            )
            for count, size in shapes
        ]
        buffer = bytearray(b"".join(parts))
        info = self.log.append(buffer, iter_batches(buffer))
        assert info.base_offset == self.end
        pos = 0
        for header in iter_batches(buffer):
            data = bytes(buffer[pos : pos + header.size])
            self.model.append(StoredBatch(header.base_offset, header.last_offset, data))
            pos += header.size
        self.end = info.last_offset + 1
        self.clock.now_ms += ts_step

    @rule(retention_bytes=st.integers(0, 3000), advance=st.integers(0, 2000),
          retention_ms=st.integers(-1, 1500))
    def retention(self, retention_bytes, advance, retention_ms):
        self.config = LogConfig(
            segment_bytes=1200, index_interval_bytes=128, retention_bytes=retention_bytes,
            retention_ms=retention_ms, max_index_bytes=96,
        )
        self.log.update_config(self.config)
        self.clock.now_ms += advance
        self.log.apply_retention()
        new_start = self.log.log_start_offset
        assert new_start >= self.start
        if new_start > self.start:
            # Retention removes whole segments: the new start is a batch boundary.
            assert new_start == self.end or any(b.base == new_start for b in self.model)
        self._drop_below(new_start)

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def delete_records(self, data):
        target = data.draw(st.integers(self.start, self.end))
        assert self.log.delete_records_before(target) == max(target, self.start)
        self._drop_below(max(target, self.start))

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(max(self.start - 3, 0), self.end))
        first_base = self.log.segment_base_offsets[0]
        self.log.truncate_to(target)
        if target >= self.end:
            return
        if target < first_base:
            self.model, self.start, self.end = [], target, target
            return
        kept = [b for b in self.model if b.last < target]
        removed = [b for b in self.model if b.last >= target]
        self.end = removed[0].base if removed else self.end
        self.model = kept
        self.start = min(self.start, self.end)

    @rule(clean=st.booleans(), flush_first=st.booleans())
    def reopen(self, clean, flush_first):
        if flush_first:
            self.log.maybe_flush()
        if clean:
            self.log.close()
        else:
            self.abandoned.append(self.log)  # a crash: files as the page cache has them
        self.log = PartitionLog.open(self.directory, self.config, self.clock, recover=not clean)

    def _drop_below(self, start: int) -> None:
        """Logically below ``start``; physically gone below the first segment."""
        self.start = start
        first_base = self.log.segment_base_offsets[0]
        self.model = [b for b in self.model if b.last >= first_base]

    @invariant()
    def serves_exactly_the_model(self):
        assert (self.log.log_start_offset, self.log.log_end_offset) == (self.start, self.end)
        collected, offset = [], self.start
        while offset < self.end:
            data = self.log.read(offset, 500).to_bytes()
            headers = iter_batches(data)
            assert headers, f"no progress at {offset}"
            collected.append(data)
            offset = headers[-1].next_offset
        served = [b.data for b in self.model if b.last >= self.start]
        assert b"".join(collected) == b"".join(served)


PartitionLogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_PROPERTY_EXAMPLES", "100")),
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestPartitionLogModel = PartitionLogMachine.TestCase
