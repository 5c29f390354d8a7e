"""Receiving over TLS in whole bursts: every record already received per ``receive_some``.

trio's ``SSLStream`` decrypts one TLS record per ``receive_some`` and yields to the
scheduler each time. Clients such as librdkafka write a Produce request as many small
records (one per buffer segment, a couple of KiB each), so a 1 MB request took hundreds
of trips through the connection loop (27 ms of broker CPU per MB, a third of the
plaintext throughput). ``drain_tls_receives`` makes a stream's first record come through
trio as usual (it waits for the socket, sends what OpenSSL wants sent), then decrypts the
records already in its incoming buffer at once, without yielding, up to ``max_bytes``.
Anything OpenSSL queues to send meanwhile (a TLS 1.3 key update) leaves with trio's next
operation on the stream. The broker's connections and the inter-broker client use it.
"""

from __future__ import annotations

import ssl

import trio

# Bytes asked of OpenSSL per read: it returns one record (16 KiB of plaintext at most)
# per call, and a larger ask only makes Python allocate a larger buffer.
TLS_READ_BYTES = 64 * 1024


def drain_tls_receives(secured: trio.SSLStream[trio.SocketStream]) -> bool:
    """Replace ``secured.receive_some`` with one returning every record at hand; True
    when done.

    Uses the stream's ``SSLObject`` (a private attribute of trio's): without it, trio's
    own behaviour is kept (False; tests/security/test_tls_receive.py fails then, so a
    trio that renamed it shows up as a test failure, not as a silent slowdown)."""
    ssl_object = getattr(secured, "_ssl_object", None)
    if not isinstance(ssl_object, ssl.SSLObject):
        return False
    receive_one = secured.receive_some

    async def receive_some(max_bytes: int | None = None) -> bytes | bytearray:
        if max_bytes is None:
            return await receive_one()
        data = await receive_one(min(max_bytes, TLS_READ_BYTES))
        if not data or len(data) >= max_bytes:
            return data
        parts = [data]
        got = len(data)
        while got < max_bytes:
            try:
                more = ssl_object.read(min(max_bytes - got, TLS_READ_BYTES))
            except ssl.SSLError:  # SSLWantReadError: no whole record left (or an
                break  # error, which the next receive_some reports through trio)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    secured.receive_some = receive_some  # type: ignore[method-assign]
    return True
