"""Walk the record batches of a ``.log`` file by their headers, in large chunks.

The log never decodes records: recovery checks each batch's framing, magic and
CRC-32C (``validate=True``); lookups only need headers (``validate=False``).
Reading is chunked so a scan costs a few large ``pread`` calls, not one per
batch, and never holds more than one chunk (or one batch, if larger) in memory.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkette.log.file_region import SegmentFile
from kafkette.wire.record_batch import (
    HEADER_SIZE,
    BatchHeader,
    InvalidBatchError,
    batch_size_at,
    read_header,
    validate_batch,
)

HEADER_CHUNK_BYTES = 16 * 1024
VALIDATE_CHUNK_BYTES = 8 * 1024 * 1024


def scan_batches(
    file: SegmentFile,
    start: int,
    end: int,
    *,
    validate: bool,
    chunk_bytes: int | None = None,
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each batch in ``[start, end)``.

    Raises InvalidBatchError at the first batch that is torn (runs past
    ``end``), malformed, or (with ``validate``) fails its CRC; every batch
    yielded before that is whole. The caller treats the position after the
    last yielded batch as the end of valid data.
    """
    if chunk_bytes is None:
        chunk_bytes = VALIDATE_CHUNK_BYTES if validate else HEADER_CHUNK_BYTES
    pos = start
    while pos < end:
        remaining = end - pos
        buf = file.pread(min(chunk_bytes, remaining), pos)
        if len(buf) < min(chunk_bytes, remaining):
            # The file is shorter than the caller believed: treat as torn.
            remaining = len(buf)
            end = pos + remaining
        offset = 0
        progressed = False
        while True:
            size = batch_size_at(buf, offset)
            if size is None:
                break  # fewer than 12 bytes left in this chunk
            if size > end - (pos + offset) or size < HEADER_SIZE:
                if size < HEADER_SIZE:
                    raise InvalidBatchError(f"batch length {size} too small at {pos + offset}")
                raise InvalidBatchError(
                    f"batch at {pos + offset} claims {size} bytes, "
                    f"only {end - pos - offset} remain"
                )
            needed = size if validate else HEADER_SIZE
            if len(buf) - offset < needed:
                break  # refill from this batch
            if validate:
                header = validate_batch(buf, offset, end=offset + size)
            else:
                header = read_header(buf, offset)
            yield pos + offset, header
            offset += size
            progressed = True
            if pos + offset >= end:
                break
        if not progressed and offset == 0:
            # One batch (or its header) is bigger than the chunk: read exactly it.
            size = batch_size_at(buf, 0)
            want = (size if validate else HEADER_SIZE) if size is not None else HEADER_SIZE
            if want > remaining:
                raise InvalidBatchError(f"torn batch at {pos}: {remaining} bytes left")
            buf = file.pread(want, pos)
            if len(buf) < want:
                raise InvalidBatchError(f"torn batch at {pos}")
            header = validate_batch(buf, 0) if validate else read_header(buf, 0)
            yield pos, header
            offset = header.size
        pos += offset
