"""The one way out of a connection: every response is throttled, finished, encoded once
and written here.

Per request, in this order (Kafka's): the client quotas decide the throttle
(broker/quotas/enforcement.py, loaded only once a quota exists), the answer's
``finish`` hook runs with that decision (finishing.py: a Fetch's session work), the
response is encoded and its size taken from the frame, and the chunks are written
(response_writer.py). A throttled answer goes out at once and the connection is then
muted for the throttle time (KIP-219); a client older than KIP-219 gets its answer
only after the throttle time instead. Both waits are :meth:`AnswerPath.after`'s, which
the connection calls once it has given the request's memory back: a late answer never
holds request memory.

One ``AnswerPath`` per connection, reused for every request: the plain path (no quota)
allocates nothing beyond the encoded chunks. The connection's other writes (an
UNSUPPORTED_VERSION answer, a bare SASL token) go out here too.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import TYPE_CHECKING

import trio

from kafkette.broker.network.finishing import finish
from kafkette.broker.network.response_writer import send_chunks
from kafkette.wire.apis import ApiKey

if TYPE_CHECKING:
    from types import ModuleType

    from kafkette.broker.quotas.manager import QuotaManager
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request, ServerConnection
    from kafkette.wire.exceptions import UnsupportedVersionError

log = logging.getLogger("kafkette.connection")


class AnswerPath:
    """One connection's answers: :meth:`begin` before the handler runs, :meth:`answer`
    with its response, :meth:`after` once the request's memory is back in the pool.

    Event-loop only; one request at a time, as the connection loop runs them."""

    __slots__ = ("_broker", "_conn", "_late", "_mute_s", "_quotas", "_stream", "response_bytes")

    def __init__(self, broker: Broker, conn: ServerConnection, stream: trio.abc.Stream) -> None:
        self._broker = broker
        self._conn = conn
        self._stream = stream
        self._quotas: QuotaManager | None = None  # set while a client quota exists
        # What the last answer wrote (4-byte size prefix included); 0 for none.
        self.response_bytes = 0
        self._late: tuple[float, list] | None = None  # (delay, chunks): pre-KIP-219
        self._mute_s = 0.0  # KIP-219: seconds the connection is not read after the answer

    def begin(self) -> None:
        """Before the handler: with a client quota, its time on the event loop counts."""
        quotas = self._broker.client_quotas
        if quotas.active:
            self._quotas = quotas
            _enforcement().start_timing(quotas)
        else:
            self._quotas = None

    async def answer(self, request: Request, response: dict | None, *, accounted: bool) -> None:
        """Throttle (``accounted``: the request counts against client quotas; an answer
        of the SASL exchange itself does not), finish, encode and write ``response``
        (None: no answer, Produce acks=0). A pre-KIP-219 client's throttled answer is
        held for :meth:`after`."""
        quotas = self._quotas
        if quotas is not None and accounted:
            await self._answer_throttled(quotas, request, response)
            return
        if response is None:
            self.response_bytes = 0
            return
        finish(response, False)
        chunks = self._conn.encode_response(request.header, response)
        self.response_bytes = _frame_bytes(chunks)
        await send_chunks(self._stream, chunks)

    async def _answer_throttled(
        self, quotas: QuotaManager, request: Request, response: dict | None
    ) -> None:
        enforcement = _enforcement()
        header = request.header
        throttle = enforcement.decide(self._broker, quotas, request)
        if response is None:  # Produce acks=0: no answer, but the connection is muted
            self.response_bytes = 0
            self._mute_s = throttle.ms / 1000
            return
        timed = throttle.times_encoding
        encoding_started = time.perf_counter() if timed else 0.0
        chunks = None
        if throttle.measures_response(header.api_key):
            chunks = self._conn.encode_response(header, response)
            throttle.record_response(_frame_bytes(chunks) - 4)
        throttled = throttle.ms > 0
        # Kafka decides the throttle before the answer's last step (a Fetch's session).
        if finish(response, throttled):
            chunks = None
        if throttled:
            response = enforcement.throttled_response(header, response, throttle.ms)
            chunks = None
        if chunks is None:
            chunks = self._conn.encode_response(header, response)
        self.response_bytes = _frame_bytes(chunks)
        if timed:
            throttle.record_encoding(time.perf_counter() - encoding_started)
        seconds = throttle.ms / 1000
        if throttle.delays_answer(header):
            self._late = (seconds, chunks)  # sent by after(), not holding request memory
            return
        self._mute_s = seconds
        await send_chunks(self._stream, chunks)

    async def after(self) -> None:
        """After the request's memory is back: a late answer (before KIP-219) once its
        throttle time has passed, then the connection muted for the throttle time."""
        late = self._late
        if late is not None:
            self._late = None
            delay_s, chunks = late
            await trio.sleep(delay_s)
            await send_chunks(self._stream, chunks)
        mute_s = self._mute_s
        if mute_s:
            self._mute_s = 0.0
            await trio.sleep(mute_s)

    async def answer_unsupported(self, exc: UnsupportedVersionError, peer: str) -> bool:
        """Answer UNSUPPORTED_VERSION where the protocol lets us; else close the connection.

        ApiVersions gets KIP-511's v0 answer; another API gets error 35 when its
        response at that version has a top-level error code. Returns False to close.
        """
        header = exc.header
        if header is None:
            return False
        conn = self._conn
        if exc.api_key == ApiKey.API_VERSIONS:
            log.info(
                "ApiVersions v%d from %s: answering with v0 and error 35", exc.api_version, peer
            )
            await send_chunks(self._stream, conn.encode_api_versions_fallback(header))  # type: ignore[arg-type]
            return True
        chunks = conn.encode_unsupported_version(header)  # type: ignore[arg-type]
        if chunks is None:
            log.warning("closing connection from %s: %s", peer, exc)
            return False
        log.warning("%s from %s: answering UNSUPPORTED_VERSION", exc, peer)
        await send_chunks(self._stream, chunks)
        return True

    async def send_raw(self, payload: bytes) -> None:
        """A bare frame (a SASL token after SaslHandshake v0): no header, no quota."""
        await self._stream.send_all(self._conn.encode_frame(payload))


def _frame_bytes(chunks: list[object]) -> int:
    """A response's size on the wire, its 4-byte size prefix included."""
    return 4 + int.from_bytes(chunks[0][:4], "big")  # type: ignore[index]


@functools.cache
def _enforcement() -> ModuleType:
    """broker/quotas/enforcement.py, imported once the first client quota exists: a
    broker without quotas never loads it."""
    from kafkette.broker.quotas import enforcement

    return enforcement
