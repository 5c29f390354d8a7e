"""Fixtures for the log tests; puts this folder on sys.path for ``log_batches``.

``log_batches`` is a plain module (not a fixture) because the crash test's
child process imports it too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


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
