"""One SASL connection's authentication state machine (Kafka's SaslServerAuthenticator).

On a SASL listener a client may send, before it has authenticated, only:
ApiVersions (once, first), then SaslHandshake, then SaslAuthenticate requests until the
mechanism completes. Anything else closes the connection, as Kafka closes it. A
SaslHandshake v0 switches to raw tokens: the next frames are bare SASL tokens with no
request header (the connection reads them with ``on_raw_token``).

Failures follow KIP-152: the client gets SASL_AUTHENTICATION_FAILED with a message
(or UNSUPPORTED_SASL_MECHANISM with the enabled list), after
``connection.failed.authentication.delay.ms``, and the connection is closed.

KIP-368: when ``connections.max.reauth.ms`` is set (or the credential expires, as an
OAuth token does), the session lasts that long; SaslAuthenticate v1+ tells the client
(``session_lifetime_ms``). The client re-authenticates on the same connection with a
new SaslHandshake + SaslAuthenticate (same mechanism, same principal); a connection
whose session expired is closed at its next request.

The machine does no I/O: it says what to answer (``Verdict``); broker/network/
writes it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.broker.security.sasl.broker_sasl import BrokerSasl
from kafkette.broker.security.sasl.mechanism import (
    AuthenticationFailed,
    InvalidCredentials,
    ServerMechanism,
    clip,
)
from kafkette.broker.security.sasl.oauthbearer import OAuthBearerServer
from kafkette.broker.security.sasl.plain import PlainServer
from kafkette.broker.security.sasl.scram import ScramServer, username_in_client_first
from kafkette.broker.security.session import KafkaPrincipal, Session
from kafkette.wire.apis import ApiKey
from kafkette.wire.connection import Request
from kafkette.wire.errors import ErrorCode

log = logging.getLogger("kafkette.sasl")

# Kafka's KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS.
MIN_REAUTH_INTERVAL_S = 1.0
# How long a login waits for its SCRAM credential (ZooKeeper in a cluster) before it is
# refused; about a ZooKeeper session's worth of patience, far below a client's timeout.
CREDENTIAL_LOOKUP_TIMEOUT_S = 5.0
# SaslAuthenticate's session_lifetime_ms is an int64 (Java's Long.MAX_VALUE).
MAX_SESSION_LIFETIME_MS = 2**63 - 1
# What a SASL listener serves before authentication.
BEFORE_AUTHENTICATION = frozenset(
    {ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE}
)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the connection does with one request (or raw token)."""

    dispatch: bool = False  # hand the request to its handler, as on any listener
    response: dict | None = None  # else answer this response body
    raw: bytes | None = None  # or, after SaslHandshake v0, this bare token
    close: str | None = None  # then close the connection (the reason, for the log)
    delay_s: float = 0.0  # wait this long before answering and closing (KIP-152)


DISPATCH = Verdict(dispatch=True)


class Authenticator:
    BEFORE_AUTHENTICATION = BEFORE_AUTHENTICATION

    def __init__(self, sasl: BrokerSasl, session: Session, peer: str) -> None:
        self._sasl = sasl
        self._session = session
        self._peer = peer
        self._listener = sasl.settings.listener(session.listener_name)
        self._state = "initial"
        self._raw = False
        self._server: ServerMechanism | None = None
        self._mechanism = ""
        self._reauthenticating = False
        self._bad_mechanism_message = ""
        self._expires_at: float | None = None  # trio clock
        self._last_reauth_start = 0.0
        self.authenticated = False
        # SCRAM credentials fetched from the store for the user a client-first names.
        self._scram_credentials: dict[tuple[str, str], sf.ScramCredential | None] = {}

    @property
    def max_receive_size(self) -> int:
        """The largest frame an unauthenticated client may send."""
        return self._sasl.settings.max_receive_size

    @property
    def expects_raw_token(self) -> bool:
        return self._state == "raw"

    @property
    def in_progress(self) -> bool:
        """Between the first request and a completed authentication (or re-authentication)."""
        return self._state != "complete"

    async def on_request(self, request: Request) -> Verdict:
        key = request.header.api_key
        if self._state == "complete":
            now = trio.current_time()
            if key == ApiKey.SASL_HANDSHAKE and self._may_reauthenticate(now):
                self._last_reauth_start = now
                self._reauthenticating = True
                self._state = "handshake"
            elif self._expires_at is not None and now >= self._expires_at:
                return self._close("its SASL session expired and it did not re-authenticate")
            else:
                return DISPATCH
        if self._state == "initial" and key == ApiKey.API_VERSIONS:
            self._state = "handshake"
            return DISPATCH
        if self._state in ("initial", "handshake"):
            if key == ApiKey.SASL_HANDSHAKE:
                return await self._handshake(request)
            return self._close(
                f"unexpected Kafka request of type {_api_name(key)} during SASL handshake"
            )
        if key != ApiKey.SASL_AUTHENTICATE:
            return self._close(
                f"unexpected Kafka request of type {_api_name(key)} during SASL authentication"
            )
        if self._state == "reauth_bad_mechanism":
            # Kafka closes without an answer here (REAUTH_BAD_MECHANISM).
            message = self._bad_mechanism_message
            return self._refuse(message, message, answer=False)
        token = bytes(request.body.get("auth_bytes") or b"")
        unavailable = await self._fetch_credential(token)
        if unavailable is not None:
            return self._refuse_unavailable(unavailable, raw=False)
        return self._evaluate(token, raw=False)

    async def on_raw_token(self, token: bytes) -> Verdict:
        """A bare SASL token after SaslHandshake v0."""
        unavailable = await self._fetch_credential(token)
        if unavailable is not None:
            return self._refuse_unavailable(unavailable, raw=True)
        return self._evaluate(token, raw=True)

    async def _fetch_credential(self, token: bytes) -> str | None:
        """Before a SCRAM client-first is evaluated: its user's credential, from the data
        dir's store or, in a cluster, ZooKeeper (within CREDENTIAL_LOOKUP_TIMEOUT_S).
        Returns why the credential could not be obtained, or None."""
        server = self._server
        if not isinstance(server, ScramServer) or not server.awaiting_first:
            return None
        user = username_in_client_first(token)
        if user is None:
            return None
        store = await self._sasl.scram_store()
        try:
            with trio.fail_after(CREDENTIAL_LOOKUP_TIMEOUT_S):
                found = await store.lookup(self._mechanism, user)
        except trio.TooSlowError:
            return f"no answer from the credential store within {CREDENTIAL_LOOKUP_TIMEOUT_S} s"
        except StoreUnavailable as exc:
            return str(exc)
        self._scram_credentials[(self._mechanism, user)] = found
        return None

    def _refuse_unavailable(self, why: str, *, raw: bool) -> Verdict:
        """Kafka's ScramSaslServer: "Credentials could not be obtained" is a SaslException,
        which the client sees as the generic invalid-credentials failure."""
        phase = "re-authentication" if self._reauthenticating else "authentication"
        message = (
            f"Authentication failed during {phase} due to invalid credentials with SASL "
            f"mechanism {self._mechanism}"
        )
        return self._refuse(message, f"credentials could not be obtained: {why}", answer=not raw)

    def _close(self, reason: str) -> Verdict:
        log.info("closing connection from %s on listener %s: %s", self._peer,
                 self._listener.name, reason)
        self._state = "failed"
        return Verdict(close=reason)

    def _may_reauthenticate(self, now: float) -> bool:
        if self._expires_at is None:
            return False  # no session lifetime: Kafka answers the handshake ILLEGAL_SASL_STATE
        return not (
            self._last_reauth_start and now - self._last_reauth_start < MIN_REAUTH_INTERVAL_S
        )

    async def _handshake(self, request: Request) -> Verdict:
        mechanism = str(request.body.get("mechanism") or "")
        offered = list(self._listener.mechanisms)
        if mechanism not in offered:
            log.info(
                "closing connection from %s: SASL mechanism %s is not enabled on listener %s"
                " (enabled: %s)",
                self._peer, clip(mechanism), self._listener.name, ", ".join(offered),
            )
            return Verdict(
                response={
                    "error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                    "mechanisms": offered,
                },
                close=f"unsupported SASL mechanism {clip(mechanism)}",
                delay_s=self._delay_s(),
            )
        self._raw = request.header.api_version == 0
        if self._reauthenticating and mechanism != self._mechanism:
            self._bad_mechanism_message = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._mechanism}'"
            )
            self._state = "reauth_bad_mechanism"
        else:
            self._server = await self._new_server(mechanism)
            self._mechanism = mechanism
            self._state = "raw" if self._raw else "authenticate"
        return Verdict(response={"error_code": ErrorCode.NONE, "mechanisms": offered})

    async def _new_server(self, mechanism: str) -> ServerMechanism:
        jaas = self._listener.jaas.get(mechanism)
        options = dict(jaas.options) if jaas is not None else {}
        if mechanism == "PLAIN":
            return PlainServer(jaas.plain_users if jaas is not None else {})
        if mechanism in sf.MECHANISMS:
            found = self._scram_credentials
            return ScramServer(mechanism, lambda mech, user: found.get((mech, user)))
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(options)
        raise AssertionError(f"settings let through an unknown mechanism {mechanism}")

    def _evaluate(self, token: bytes, *, raw: bool) -> Verdict:
        if self._state == "reauth_bad_mechanism" or self._server is None:
            message = self._bad_mechanism_message or "SASL state is not valid"
            return self._refuse(message, message, answer=False)
        server = self._server
        try:
            reply = server.evaluate(token)
        except AuthenticationFailed as exc:
            return self._refuse(str(exc), str(exc), answer=not raw)
        except InvalidCredentials as exc:
            phase = "re-authentication" if self._reauthenticating else "authentication"
            message = (
                f"Authentication failed during {phase} due to invalid credentials with SASL "
                f"mechanism {self._mechanism}"
            )
            return self._refuse(message, str(exc), answer=not raw)
        if not server.complete:
            if raw:
                return Verdict(raw=reply)
            return Verdict(
                response={
                    "error_code": ErrorCode.NONE,
                    "auth_bytes": reply,
                    "session_lifetime_ms": 0,
                }
            )
        principal = KafkaPrincipal("User", server.principal_name)
        if self._reauthenticating and principal != self._session.principal:
            previous = self._session.principal
            message = (
                "Cannot change principals during re-authentication from "
                f"{previous.type}.{previous.name}: {principal.type}.{principal.name}"
            )
            return self._refuse(message, message, answer=not raw)
        lifetime_ms = self._session_lifetime_ms(server)
        expires = self._expires_by_config(server)
        self._expires_at = trio.current_time() + lifetime_ms / 1000 if expires else None
        self._session.principal = principal
        self._session.mechanism = self._mechanism
        log.debug(
            "%s %s as %s (%s, listener %s)",
            self._peer,
            "re-authenticated" if self._reauthenticating else "authenticated",
            principal,
            self._mechanism,
            self._listener.name,
        )
        self._state = "complete"
        self._server = None
        self.authenticated = True
        if raw:
            return Verdict(raw=reply)
        return Verdict(
            response={
                "error_code": ErrorCode.NONE,
                "auth_bytes": reply,
                "session_lifetime_ms": lifetime_ms,
            }
        )

    def _expires_by_config(self, server: ServerMechanism) -> bool:
        return (
            server.credential_expiry_ms is not None
            or self._listener.reauth_ms.get(self._mechanism, 0) > 0
        )

    def _session_lifetime_ms(self, server: ServerMechanism) -> int:
        """Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs, clamped to
        what SaslAuthenticate's int64 session_lifetime_ms holds (a token's ``exp`` may
        be any number)."""
        max_reauth = self._listener.reauth_ms.get(self._mechanism, 0)
        expiry = server.credential_expiry_ms
        if expiry is None:
            lifetime = max_reauth
        elif max_reauth <= 0:
            lifetime = expiry - int(time.time() * 1000)
        else:
            lifetime = min(expiry - int(time.time() * 1000), max_reauth)
        return min(max(0, lifetime), MAX_SESSION_LIFETIME_MS)

    def _refuse(self, message: str, detail: str, *, answer: bool = True) -> Verdict:
        """Fail the exchange: answer SASL_AUTHENTICATION_FAILED with ``message`` (not after
        SaslHandshake v0: raw tokens have no error frame), log ``detail``, close."""
        refusal = getattr(self._server, "refusal_reason", "")
        log.info(
            "closing connection from %s: SASL %s %s failed on listener %s: %s",
            self._peer,
            self._mechanism or "",
            "re-authentication" if self._reauthenticating else "authentication",
            self._listener.name,
            detail + (f" ({refusal})" if refusal else ""),
        )
        self._state = "failed"
        self._server = None
        if not answer:
            return Verdict(close="SASL authentication failed", delay_s=self._delay_s())
        return Verdict(
            response={
                "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
                "error_message": message,
                "auth_bytes": b"",
            },
            close="SASL authentication failed",
            delay_s=self._delay_s(),
        )

    def _delay_s(self) -> float:
        return max(0, self._sasl.settings.failed_authentication_delay_ms) / 1000


def _api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return str(key)
