"""Fixtures the wire tests share: Kafka's compression codecs as kafka-python sees them.

kafka-python is the independent oracle for batch bytes; a codec its optional
libraries lack here skips the test that needs it, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkette.wire.compression import CompressionType


def _require_codec(codec: int) -> None:
    """Skip the running test if kafka-python cannot use codec id ``codec`` (0 always works)."""
    from kafka import codec as kc

    checks = {1: kc.has_gzip, 2: kc.has_snappy, 3: kc.has_lz4, 4: kc.has_zstd}
    if codec and not checks[codec]():
        pytest.skip(f"kafka-python cannot use codec {codec}: install python-snappy, lz4, zstandard")


@pytest.fixture(scope="session")
def require_codec() -> Callable[[int], None]:
    """The skip check itself, for tests that draw the codec (e.g. with hypothesis)."""
    return _require_codec


@pytest.fixture(
    params=[c.value for c in CompressionType], ids=[c.name.lower() for c in CompressionType]
)
def codec(request: pytest.FixtureRequest) -> int:
    """Each Kafka codec id in turn (none, gzip, snappy, lz4, zstd); skipped if unusable."""
    _require_codec(request.param)
    return request.param
