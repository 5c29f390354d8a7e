"""The cleaner's C key walks give exactly the answers of the decode_batch reference."""

from __future__ import annotations

import random

import pytest

from kafkette.log import cleaner_keys
from kafkette.wire.record_batch import InvalidBatchError, read_header
from kafkette.wire.records import Record, build_batch

pytestmark = pytest.mark.skipif(
    cleaner_keys._c_put_keys is None, reason="C extension not built (the reference is in use)"
)


def _random_batch(rnd: random.Random, compression: int) -> bytes:
    records = []
    for delta in range(rnd.randint(1, 60)):
        key = None if rnd.random() < 0.1 else b"k%d" % rnd.randint(0, 30)
        if key is not None and rnd.random() < 0.05:
            key = b""  # an empty key is a key, not a null one
        value = None if rnd.random() < 0.2 else rnd.randbytes(rnd.randint(0, 300))
        headers = [("h", rnd.randbytes(3))] if rnd.random() < 0.3 else []
        records.append(Record(delta, rnd.randint(0, 10_000), key, value, headers))
    return build_batch(records, base_offset=rnd.randint(0, 1 << 40), compression=compression)


@pytest.mark.parametrize("compression", [0, 1, 2, 3, 4])
def test_c_walks_match_the_reference(compression: int) -> None:
    rnd = random.Random(compression)
    for _ in range(150):
        data = _random_batch(rnd, compression)
        header = read_header(data, 0)
        last = header.base_offset + header.last_offset_delta
        first_dirty = rnd.choice([0, header.base_offset + rnd.randint(0, 60), last + 1])
        base_map = {b"k%d" % i: rnd.randint(last - 80, last + 80) for i in range(0, 31, 2)}

        expected, got = dict(base_map), dict(base_map)
        cleaner_keys.python_put_keys(header, data, first_dirty, expected)
        cleaner_keys.put_keys(header, data, first_dirty, got)
        assert got == expected

        assert cleaner_keys.survivors(header, data, base_map) == cleaner_keys.python_survivors(
            header, data, base_map
        )


def test_a_malformed_payload_is_an_invalid_batch() -> None:
    data = bytearray(build_batch([Record(0, 0, b"key", b"value")]))
    data[61] = 0x7E  # the record's length varint: 63, longer than the payload
    header = read_header(bytes(data), 0)
    with pytest.raises(InvalidBatchError):
        cleaner_keys.put_keys(header, bytes(data), 0, {})
    with pytest.raises(InvalidBatchError):
        cleaner_keys.survivors(header, bytes(data), {})
