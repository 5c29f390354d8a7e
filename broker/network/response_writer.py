"""Writing a response's chunks to the client, in order.

A Fetch answer is mostly stored record batches: on a plain socket they go with
``os.sendfile`` (no copy through Python); where that cannot work (a file system
without sendfile) the bytes are read in a worker thread and sent.

Over TLS the bytes must pass through OpenSSL anyway: every file region of the
response is read, and the whole response assembled, in ONE worker-thread hop (a
Fetch of many partitions costs one hop, not one per partition), then encrypted
and sent ``TLS_SEND_PIECE`` bytes at a time: OpenSSL's output buffer stays small
(one ``send_all`` of 50 MB would grow it to 50 MB, reallocating as it goes, and
encrypt all of it before the event loop runs anything else).
"""

from __future__ import annotations

import os

import trio

# Bytes encrypted per send over TLS (16 TLS records of 16 KiB).
TLS_SEND_PIECE = 256 * 1024


async def send_chunks(stream: trio.abc.Stream, chunks: list[object]) -> None:
    """Write a response's chunks in order; file regions go by sendfile."""
    if not isinstance(stream, trio.SocketStream):
        await _send_assembled(stream, chunks)
        return
    pending = bytearray()
    for chunk in chunks:
        if isinstance(chunk, bytes | bytearray | memoryview):
            pending += chunk
            continue
        if pending:
            await stream.send_all(pending)
            pending = bytearray()
        await _send_region(stream, chunk)
    if pending:
        await stream.send_all(pending)


async def _send_region(stream: trio.abc.Stream, region: object) -> None:
    """``os.sendfile`` the region; fall back to a threaded read if it cannot."""
    sock = stream.socket
    offset: int = region.position  # type: ignore[attr-defined]
    remaining: int = region.length  # type: ignore[attr-defined]
    try:
        in_fd = region.file.fileno()  # type: ignore[attr-defined]
        out_fd = sock.fileno()
        while remaining > 0:
            await trio.lowlevel.wait_writable(sock)
            try:
                sent = os.sendfile(out_fd, in_fd, offset, remaining)
            except BlockingIOError:
                continue
            if sent == 0:
                break  # file shrank under us (truncation): pad below
            offset += sent
            remaining -= sent
    except (OSError, ValueError) as exc:
        if isinstance(exc, BrokenPipeError | ConnectionError):
            raise trio.BrokenResourceError from exc
        data = await trio.to_thread.run_sync(region.file.pread, remaining, offset)  # type: ignore[attr-defined]
        await stream.send_all(data)
        remaining -= len(data)
    if remaining > 0:
        # The frame's size was announced: keep the stream in sync with zeros,
        # which clients read as a truncated trailing batch and ignore.
        await stream.send_all(bytes(remaining))


async def _send_assembled(stream: trio.abc.Stream, chunks: list[object]) -> None:
    """A stream without a socket of its own (TLS): the response in one buffer."""
    if all(isinstance(chunk, bytes | bytearray | memoryview) for chunk in chunks):
        data = b"".join(chunks)  # type: ignore[arg-type]
    else:
        data = await trio.to_thread.run_sync(_assemble, chunks)
    if len(data) <= TLS_SEND_PIECE:
        await stream.send_all(data)
        return
    view = memoryview(data)
    for start in range(0, len(view), TLS_SEND_PIECE):
        await stream.send_all(view[start:start + TLS_SEND_PIECE])


def _assemble(chunks: list[object]) -> bytes:
    """Worker thread: the chunks' bytes in order, file regions read; a region the file
    no longer holds in full is padded with zeros (the frame size was announced)."""
    parts: list[bytes | bytearray | memoryview] = []
    for chunk in chunks:
        if isinstance(chunk, bytes | bytearray | memoryview):
            parts.append(chunk)
            continue
        length: int = chunk.length  # type: ignore[attr-defined]
        data = chunk.file.pread(length, chunk.position)  # type: ignore[attr-defined]
        parts.append(data)
        if len(data) < length:
            parts.append(bytes(length - len(data)))
    return b"".join(parts)
