"""Fixtures for the log tests.

The batch builders (``log_batches``, ``txn_batches``, ``compaction_data``) are plain modules,
not fixtures, because the crash tests' child processes import them too:
``from tests.log import log_batches``, in a test module and in a child alike.
"""

from __future__ import annotations

import pytest


class ManualClock:
    """Epoch milliseconds that move only when a test says so."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
