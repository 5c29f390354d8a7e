"""The cleaner's two per-record questions, answered without a Record object per record.

A clean asks of every record only its key, its offset and whether its value
is null: the offset map's pass records each key's latest offset, the copy
pass keeps the records no later offset of their key shadows. Decoding whole
records in Python for that (``decode_batch``, about 1.5 us a record) made
the cleaner process CPU-bound at 10-15 MB/s, one whole CPU for the length of
a long clean, which on a small machine is CPU the broker's produce path
needs (docs/performance.md, "Log cleaner"). The C walks in
``kafkette.wire._record_walk`` read those three fields and skip the rest.

Without the extension (built without a compiler) the same answers come from
``decode_batch``: :func:`python_put_keys` and :func:`python_survivors` are
the reference, and a differential test checks the C walks against them.
"""

from __future__ import annotations

from kafkette.wire.compression import CompressionError, decompress
from kafkette.wire.record_batch import HEADER_SIZE, BatchHeader, InvalidBatchError
from kafkette.wire.records import decode_batch


def _payload(header: BatchHeader, data: bytes) -> bytes | memoryview:
    """The batch's records bytes, decompressed (``data`` is one whole batch)."""
    body = memoryview(data)[HEADER_SIZE : header.size]
    if not header.compression:
        return body
    try:
        return decompress(header.compression, body)
    except CompressionError as exc:
        raise InvalidBatchError(f"record batch body: {exc}") from exc


def python_put_keys(
    header: BatchHeader, data: bytes, first_dirty: int, offsets: dict[bytes, int]
) -> None:
    """``offsets[key] = offset`` for every keyed record of the batch at or above first_dirty."""
    _, records = decode_batch(data, check_crc=False)
    for record in records:
        if record.key is not None and record.offset >= first_dirty:  # type: ignore[operator]
            offsets[record.key] = record.offset  # type: ignore[assignment]


def python_survivors(
    header: BatchHeader, data: bytes, offsets: dict[bytes, int]
) -> list[tuple[int, bool]]:
    """(index, value is null) of the keyed records whose key has no later offset."""
    _, records = decode_batch(data, check_crc=False)
    return [
        (index, record.value is None)
        for index, record in enumerate(records)
        if record.key is not None and offsets.get(record.key, -1) <= record.offset  # type: ignore[operator]
    ]


try:
    from kafkette.wire._record_walk import put_keys as _c_put_keys
    from kafkette.wire._record_walk import survivors as _c_survivors
except ImportError:  # built without a C compiler: the reference walks
    _c_put_keys = _c_survivors = None


def put_keys(
    header: BatchHeader, data: bytes, first_dirty: int, offsets: dict[bytes, int]
) -> None:
    """:func:`python_put_keys`, in C when the extension is built."""
    if _c_put_keys is None:
        python_put_keys(header, data, first_dirty, offsets)
        return
    try:
        _c_put_keys(
            _payload(header, data), header.records_count, header.base_offset, first_dirty,
            offsets,
        )
    except ValueError as exc:
        raise InvalidBatchError(f"batch at {header.base_offset}: {exc}") from exc


def survivors(
    header: BatchHeader, data: bytes, offsets: dict[bytes, int]
) -> list[tuple[int, bool]]:
    """:func:`python_survivors`, in C when the extension is built."""
    if _c_survivors is None:
        return python_survivors(header, data, offsets)
    try:
        return _c_survivors(
            _payload(header, data), header.records_count, header.base_offset, offsets
        )
    except ValueError as exc:
        raise InvalidBatchError(f"batch at {header.base_offset}: {exc}") from exc


__all__ = ["put_keys", "python_put_keys", "python_survivors", "survivors"]
