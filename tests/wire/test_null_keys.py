"""Compacted topics refuse records without a key (Kafka's LogValidator), in both walks."""

from __future__ import annotations

import pytest

from kafkette.wire.batch_validation import (
    REASON_NULL_KEY,
    python_walk,
    validate_produce_records,
)
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import HEADER_SIZE, InvalidBatchError
from kafkette.wire.records import build_batch_from_values

try:
    from kafkette.wire._record_walk import walk as c_walk
except ImportError:  # pragma: no cover - installed without a compiler
    c_walk = None

WALKS = [pytest.param(python_walk, id="python")]
if c_walk is not None:
    WALKS.append(pytest.param(c_walk, id="c"))

KEYED = build_batch_from_values([(b"k1", b"v"), (b"k2", None), (b"", b"empty key is a key")])
NULL_SECOND = build_batch_from_values([(b"k1", b"v"), (None, b"v"), (b"k3", b"v")])


@pytest.mark.parametrize("walk", WALKS)
def test_null_key_found_only_when_keys_are_required(walk) -> None:
    assert walk(NULL_SECOND[HEADER_SIZE:], 3) is None
    assert walk(NULL_SECOND[HEADER_SIZE:], 3, True) == (REASON_NULL_KEY, 1)
    assert walk(KEYED[HEADER_SIZE:], 3, True) is None  # tombstones and empty keys are fine


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_compacted_produce_refuses_a_null_key(codec: int) -> None:
    batch = build_batch_from_values([(b"k", b"v"), (None, b"v")], compression=codec)
    validate_produce_records(batch, max_message_bytes=1 << 20)
    with pytest.raises(InvalidBatchError) as caught:
        validate_produce_records(batch, max_message_bytes=1 << 20, compacted=True)
    assert caught.value.error == ErrorCode.INVALID_RECORD
    assert "without key" in caught.value.client_message
