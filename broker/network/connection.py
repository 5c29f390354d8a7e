"""One client connection: read frames, run handlers, write responses in order.

Kafka processes one request per connection at a time and answers in request
order; so does this loop (a long-polling Fetch holds its own connection only).
Bad input closes the connection with one log line and nothing else. Responses
go out as chunks: bytes with ``send_all``, stored batches with ``os.sendfile``
where the socket allows it, else read in a worker thread and sent.

A frame body larger than ``SMALL_FRAME_BYTES`` is read only once the broker's
request memory pool has granted its size (``queued.max.request.bytes``), and
that memory is given back once the request is answered; a connection that
sends nothing for ``connections.max.idle.ms`` is closed, as Kafka closes it.

Each answered request is reported to the broker's ``RequestObserver`` (the request
log and, with metrics on, the request counters): its time in the broker, from the
frame being parsed to the response written, plus the time the frame waited for
request memory (Kafka's request queue time has no other equivalent here).

Every answer leaves through the connection's ``AnswerPath`` (answer.py): throttled while
a client quota exists (throttle_time_ms, then the connection muted for the throttle
time: KIP-219), finished, encoded once and written.

On a SASL listener the connection's ``Authenticator`` sees every request first: until
the client has authenticated it answers the SASL exchange itself and closes the
connection on anything else (broker/security/sasl/authenticator.py).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

import trio

from kafkette.broker.handlers import HANDLERS
from kafkette.broker.network.answer import AnswerPath
from kafkette.broker.network.request_memory import SMALL_FRAME_BYTES
from kafkette.wire.apis import ApiKey
from kafkette.wire.connection import NEED_DATA, Request, ServerConnection
from kafkette.wire.exceptions import MalformedFrameError, UnsupportedVersionError

if TYPE_CHECKING:
    from kafkette.broker.security.sasl.authenticator import Authenticator
    from kafkette.broker.security.session import Session
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.connection")

RECEIVE_SIZE = 256 * 1024
# recv() allocates what it is allowed to read: never ask for more than this at once.
RECEIVE_MAX = 4 * 1024 * 1024
# How long a connection closed after a last answer waits for the client to hang up.
LAST_ANSWER_GRACE_S = 1.0


async def serve_connection(broker: Broker, stream: trio.abc.Stream, session: Session) -> None:
    """Serve one peer until it closes, sends garbage, or the broker stops.

    ``stream`` is the accepted socket, or the TLS stream over it on an SSL listener;
    ``session`` is the connection's identity, set on every request it sends."""
    peer = _peer_name(stream)
    conn = ServerConnection(broker.config.socket_request_max_bytes)
    answers = AnswerPath(broker, conn, stream)
    pool = broker.request_memory
    idle_ms = broker.config.connections_max_idle_ms
    idle_seconds = idle_ms / 1000 if idle_ms >= 0 else float("inf")
    reserved = 0  # bytes of the pool this connection holds for its current frame
    queued = 0.0  # seconds the current frame waited for request memory
    observer = broker.request_observer
    observer.connection_opened(peer)
    reason = "the broker is stopping"
    # SASL listeners: nothing but the authentication exchange until it succeeds, and
    # no frame larger than sasl.server.max.receive.size meanwhile.
    authenticator = _authenticator_for(broker, session, peer)
    if authenticator is not None:
        conn.max_request_bytes = authenticator.max_receive_size
    try:
        while not broker.closing:
            request: Request | object
            if authenticator is not None and authenticator.expects_raw_token:
                token = conn.next_frame()
                if token is not NEED_DATA:
                    pool.release(reserved)
                    reserved = 0
                    queued = 0.0
                    closing = await _answer_raw_token(authenticator, answers, token)  # type: ignore[arg-type]
                    if closing:
                        reason = closing
                        return
                    if authenticator.authenticated:
                        conn.max_request_bytes = broker.config.socket_request_max_bytes
                    continue
                request = NEED_DATA
            else:
                try:
                    request = conn.next_request()
                except UnsupportedVersionError as exc:
                    pool.release(reserved)  # the frame is consumed
                    reserved = 0
                    queued = 0.0  # its wait is not the next request's
                    if (
                        authenticator is not None
                        and authenticator.in_progress
                        and exc.api_key not in authenticator.BEFORE_AUTHENTICATION
                    ):
                        log.info(
                            "closing connection from %s: %s before SASL authentication",
                            peer, exc,
                        )
                        reason = "request before SASL authentication"
                        return
                    if not await answers.answer_unsupported(exc, peer):
                        reason = f"unsupported request: {exc}"
                        return
                    continue
            if request is NEED_DATA:
                frame_size = conn.next_frame_size() or 0
                # Before authentication a frame is bounded by sasl.server.max.receive.size
                # and is not a request: it takes nothing from the shared pool, so clients
                # that never authenticate cannot starve those that did.
                unauthenticated = authenticator is not None and not authenticator.authenticated
                if frame_size > SMALL_FRAME_BYTES and not reserved and not unauthenticated:
                    waiting_since = time.perf_counter()
                    await pool.reserve(frame_size)  # back-pressure: no reading meanwhile
                    queued = time.perf_counter() - waiting_since
                    reserved = frame_size
                rest_of_frame = frame_size + 4 - conn.buffered
                with trio.move_on_after(idle_seconds):
                    data = await stream.receive_some(
                        min(max(RECEIVE_SIZE, rest_of_frame), RECEIVE_MAX)
                    )
                    if not data:
                        reason = "closed by the client"
                        return
                    conn.receive_data(data)
                    continue
                log.debug("closing connection from %s: idle for %d ms", peer, idle_ms)
                reason = f"idle for {idle_ms} ms"
                return
            assert isinstance(request, Request)
            broker.requests_in_flight += 1
            started = time.perf_counter() if observer.wants_timing() else 0.0
            request.peer = peer
            request.session = session
            verdict = None  # the authenticator's, on a SASL listener
            answers.begin()
            try:
                if authenticator is None:
                    response = await _dispatch(broker, request)
                else:
                    verdict = await authenticator.on_request(request)
                    if verdict.dispatch:
                        response = await _dispatch(broker, request)
                    else:
                        response = verdict.response
                        if verdict.delay_s:
                            await trio.sleep(verdict.delay_s)
                # The SASL exchange's own answers are not counted against client quotas.
                accounted = verdict is None or verdict.dispatch
                await answers.answer(request, response, accounted=accounted)
            finally:
                broker.requests_in_flight -= 1
            response_bytes = answers.response_bytes
            observer.completed(request, response, response_bytes, started, queued)
            # The frame's bytes go before the pool hands them to another; the response's
            # file regions (their descriptors) go now, not at the next request.
            del request, response
            pool.release(reserved)
            reserved = 0
            queued = 0.0
            await answers.after()  # client quotas: a late answer, then muted (answer.py)
            if verdict is not None:
                if verdict.close:
                    reason = verdict.close
                    if response_bytes:  # an answer went out: let the client read it
                        await _let_client_read(stream)
                    return
                if authenticator.authenticated:  # type: ignore[union-attr]
                    conn.max_request_bytes = broker.config.socket_request_max_bytes
    except MalformedFrameError as exc:
        # A TLS record (0x16 0x03 ...) read as a frame size: say what it probably is.
        tls = getattr(exc, "size", 0) >> 16 == 0x1603
        hint = " (a TLS client on a PLAINTEXT listener?)" if tls else ""
        log.warning("closing connection from %s: %s%s", peer, exc, hint)
        reason = f"malformed frame: {exc}"
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as exc:
        reason = f"connection lost: {exc}" if str(exc) else "connection lost"
    except Exception:
        # A bug of ours in a handler or an encoder: this connection cannot be answered
        # in order any more, but the broker and every other connection carry on.
        log.exception("closing connection from %s after an internal error", peer)
        reason = "internal error"
    finally:
        observer.connection_closed(peer, reason)
        if reserved:
            pool.release(reserved)
        for closed in session.on_close:
            try:
                closed()
            except Exception:  # a listener's bug must not skip the close below
                log.exception("connection-close listener failed for %s", peer)
        with trio.move_on_after(1) as cleanup:
            cleanup.shield = True
            await stream.aclose()


async def _answer_raw_token(
    authenticator: Authenticator, answers: AnswerPath, token: bytes
) -> str | None:
    """A bare SASL token (after SaslHandshake v0) answered with a bare token; returns the
    reason to close the connection, or None."""
    verdict = await authenticator.on_raw_token(token)
    if verdict.delay_s:
        await trio.sleep(verdict.delay_s)
    if verdict.raw is not None:
        await answers.send_raw(verdict.raw)
    return verdict.close


async def _let_client_read(stream: trio.abc.Stream) -> None:
    """Give the client a moment to read a last answer and hang up first (bounded): a
    client that sees the connection end before it has handled the answer (kafka-python
    does, even on a half-close) reports a lost connection instead of the failed
    authentication's message; and closing with unread bytes would send a reset."""
    with trio.move_on_after(LAST_ANSWER_GRACE_S):
        try:
            while await stream.receive_some(RECEIVE_SIZE):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
            pass  # the client went first: what we wanted


def _authenticator_for(broker: Broker, session: Session, peer: str) -> Authenticator | None:
    """SASL listeners only: a plain broker never imports the SASL package."""
    if not session.uses_sasl:
        return None
    from kafkette.broker.security.sasl.authenticator import Authenticator
    from kafkette.broker.security.sasl.broker_sasl import sasl_of

    return Authenticator(sasl_of(broker), session, peer)


async def _dispatch(broker: Broker, request: Request) -> dict | None:
    handler = HANDLERS[ApiKey(request.header.api_key)]
    return await handler(broker, request)


def _peer_name(stream: trio.abc.Stream) -> str:
    if isinstance(stream, trio.SSLStream):
        stream = stream.transport_stream
    sock = stream.socket if isinstance(stream, trio.SocketStream) else None
    if sock is None:
        return "unknown peer"
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "unknown peer"
    return f"{host}:{port}"
