"""__consumer_offsets key/value codecs: Kafka's layouts byte for byte."""

from __future__ import annotations

import struct

import pytest

from kafkette.broker.groups import offsets_records as rec


def s16(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def b32(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_offset_commit_key_bytes() -> None:
    expected = b"\x00\x01" + s16("grp") + s16("orders") + struct.pack(">i", 7)
    assert rec.encode_offset_commit_key("grp", "orders", 7) == expected
    assert rec.decode_key(expected) == rec.OffsetCommitKey("grp", "orders", 7)


def test_group_metadata_key_bytes() -> None:
    expected = b"\x00\x02" + s16("grp")
    assert rec.encode_group_metadata_key("grp") == expected
    assert rec.decode_key(expected) == rec.GroupMetadataKey("grp")


def test_offset_commit_key_version0_is_read() -> None:
    raw = b"\x00\x00" + s16("g") + s16("t") + struct.pack(">i", 1)
    assert rec.decode_key(raw) == rec.OffsetCommitKey("g", "t", 1)


def test_offset_commit_value_v3_bytes() -> None:
    value = rec.OffsetCommitValue(42, 5, "meta", 1_700_000_000_000)
    expected = (
        b"\x00\x03"
        + struct.pack(">q", 42)
        + struct.pack(">i", 5)
        + s16("meta")
        + struct.pack(">q", 1_700_000_000_000)
    )
    assert rec.encode_offset_commit_value(value) == expected
    assert rec.decode_offset_commit_value(expected) == value


def test_offset_commit_value_with_expiry_is_v1() -> None:
    value = rec.OffsetCommitValue(42, -1, "", 1000, 5000)
    expected = (
        b"\x00\x01" + struct.pack(">q", 42) + s16("") + struct.pack(">q", 1000)
        + struct.pack(">q", 5000)
    )
    assert rec.encode_offset_commit_value(value) == expected
    assert rec.decode_offset_commit_value(expected) == value


@pytest.mark.parametrize("version", [0, 2])
def test_offset_commit_value_old_versions(version: int) -> None:
    raw = struct.pack(">h", version) + struct.pack(">q", 9) + s16("m") + struct.pack(">q", 77)
    assert rec.decode_offset_commit_value(raw) == rec.OffsetCommitValue(9, -1, "m", 77)


def _member(i: int, instance: str | None = None) -> rec.MemberRecord:
    return rec.MemberRecord(f"m{i}", instance, f"client{i}", f"/10.0.0.{i}", 30000, 10000,
                            b"sub%d" % i, b"asg%d" % i)


def test_group_metadata_value_v3_bytes() -> None:
    value = rec.GroupMetadataValue(
        "consumer", 3, "range", "m1", 1234, (_member(1, "inst-1"), _member(2))
    )
    expected = b"".join(
        [
            b"\x00\x03",
            s16("consumer"),
            struct.pack(">i", 3),
            s16("range"),
            s16("m1"),
            struct.pack(">q", 1234),
            struct.pack(">i", 2),
            s16("m1"), s16("inst-1"), s16("client1"), s16("/10.0.0.1"),
            struct.pack(">ii", 30000, 10000), b32(b"sub1"), b32(b"asg1"),
            s16("m2"), s16(None), s16("client2"), s16("/10.0.0.2"),
            struct.pack(">ii", 30000, 10000), b32(b"sub2"), b32(b"asg2"),
        ]
    )
    assert rec.encode_group_metadata_value(value) == expected
    assert rec.decode_group_metadata_value(expected) == value


def test_empty_group_metadata_has_null_protocol_and_leader() -> None:
    value = rec.GroupMetadataValue("consumer", 4, None, None, 99, ())
    raw = rec.encode_group_metadata_value(value)
    assert raw == (
        b"\x00\x03" + s16("consumer") + struct.pack(">i", 4) + s16(None) + s16(None)
        + struct.pack(">q", 99) + struct.pack(">i", 0)
    )
    assert rec.decode_group_metadata_value(raw) == value


@pytest.mark.parametrize(
    ("version", "expected_rebalance", "expected_ts"),
    [(0, -1, -1), (1, 45000, -1), (2, 45000, 555)],
)
def test_group_metadata_value_old_versions(version, expected_rebalance, expected_ts) -> None:
    member = s16("m1") + s16("cid") + s16("host")
    if version >= 1:
        member += struct.pack(">i", 45000)
    member += struct.pack(">i", 10000) + b32(b"s") + b32(b"a")
    raw = (
        struct.pack(">h", version) + s16("consumer") + struct.pack(">i", 2) + s16("range")
        + s16("m1") + (struct.pack(">q", 555) if version >= 2 else b"")
        + struct.pack(">i", 1) + member
    )
    value = rec.decode_group_metadata_value(raw)
    assert value == rec.GroupMetadataValue(
        "consumer", 2, "range", "m1", expected_ts,
        (rec.MemberRecord("m1", None, "cid", "host", expected_rebalance, 10000, b"s", b"a"),),
    )


@pytest.mark.parametrize(
    ("decode", "raw"),
    [
        (rec.decode_key, b"\x00\x03" + s16("g")),
        (rec.decode_offset_commit_value, b"\x00\x04" + b"\x00" * 30),
        (rec.decode_group_metadata_value, b"\x00\x04" + b"\x00" * 30),
    ],
)
def test_unsupported_versions(decode, raw) -> None:
    with pytest.raises(rec.UnsupportedRecord):
        decode(raw)


@pytest.mark.parametrize(
    ("decode", "raw"),
    [
        (rec.decode_key, b"\x00\x01" + s16("g") + s16("t") + b"\x00"),
        (rec.decode_offset_commit_value, b"\x00\x03" + b"\x00" * 10),
        (rec.decode_key, b"\x00"),
        (rec.decode_key, b"\x00\x01" + s16(None) + s16("t") + b"\x00\x00\x00\x00"),
    ],
)
def test_truncated_or_malformed(decode, raw) -> None:
    with pytest.raises(ValueError):
        decode(raw)


def test_utf8_strings_round_trip() -> None:
    key = rec.encode_offset_commit_key("grüppe", "tópic", 0)
    assert rec.decode_key(key) == rec.OffsetCommitKey("grüppe", "tópic", 0)
