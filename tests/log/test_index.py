"""Offset and time indexes on real files: lookups, truncation, sanity checks."""

from __future__ import annotations

import pytest

from kafkette.log.errors import CorruptIndex
from kafkette.log.index import OffsetIndex, TimeIndex


def test_offset_index_lookup_truncate_and_reload(tmp_path):
    path = tmp_path / "00000000000000000100.index"
    index = OffsetIndex(path, 100, 80)
    index.append_many([(105, 40), (110, 90), (120, 300)])
    assert index.lookup(99) == (100, 0)
    assert index.lookup(105) == (105, 40)
    assert index.lookup(119) == (110, 90)
    assert index.lookup(10**6) == (120, 300)
    assert index.floor_position(299) == 90
    assert index.floor_position(10) == 0
    assert not path.exists()  # created lazily: entries reach the file in batches
    index.write_pending()
    expected = bytes.fromhex("00000005 00000028 0000000a 0000005a 00000014 0000012c")
    assert path.read_bytes() == expected
    index.truncate_to(110)
    assert index.last_entry() == (105, 40)
    assert path.stat().st_size == 8
    index.close()
    reloaded = OffsetIndex.load(path, 100, 80, log_size=41)
    assert reloaded.lookup(200) == (105, 40)
    assert not reloaded.is_full
    reloaded.close()


@pytest.mark.parametrize(
    "raw,log_size",
    [
        (bytes.fromhex("00000005 00000028 0000"), 1000),  # torn entry
        (bytes.fromhex("00000005 00000028 00000004 00000030"), 1000),  # offsets backwards
        (bytes.fromhex("00000005 00000028 00000006 00000020"), 1000),  # positions backwards
        (bytes.fromhex("00000005 00000028"), 40),  # points past the log end
        (bytes.fromhex("ffffffff 00000028"), 1000),  # negative relative offset
    ],
)
def test_offset_index_sanity_check(tmp_path, raw, log_size):
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(raw)
    with pytest.raises(CorruptIndex):
        OffsetIndex.load(path, 0, 1024, log_size)


def test_time_index_keeps_only_increasing_timestamps(tmp_path):
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10, 36)  # room for 3 entries
    index.maybe_append_many(
        [(1000, 12), (1000, 13), (900, 14), (1500, 15), (2000, 18), (3000, 20)]
    )
    assert len(index) == 3 and index.is_full
    assert index.lookup(999) == (-1, 10)
    assert index.lookup(1499) == (1000, 12)
    assert index.lookup(10**15) == (2000, 18)
    index.truncate_to(15)
    assert index.last_entry() == (1000, 12)
    index.close()
    assert TimeIndex.load(path, 10, 36).last_entry() == (1000, 12)
    path.write_bytes(bytes(12) * 2)  # equal timestamps: not strictly increasing
    with pytest.raises(CorruptIndex):
        TimeIndex.load(path, 10, 36)
