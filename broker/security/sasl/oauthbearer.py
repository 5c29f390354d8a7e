"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWS tokens, for development.

This is what a Kafka broker does when OAUTHBEARER is enabled and no server callback
handler is configured: OAuthBearerUnsecuredValidatorCallbackHandler. The token is a
JWS with ``"alg":"none"`` and an empty signature; it is accepted when its principal
claim (``sub`` unless ``unsecuredValidatorPrincipalClaimName`` says otherwise) is a
string, ``exp`` is present and not past, ``iat`` (if present) is not in the future and
before ``exp``, and the scope claim holds every ``unsecuredValidatorRequiredScope``;
``unsecuredValidatorAllowableClockSkewMs`` (default 0) loosens the time checks. The
options come from the listener's OAuthBearerLoginModule JAAS config.

A refused token is answered, as RFC 7628 and Kafka do, with a JSON error challenge
(``{"status":"invalid_token"}``); the client acknowledges with a single 0x01 and the
exchange then fails with that JSON as the message. The token's ``exp`` bounds the
session (KIP-368 re-authentication), like Kafka's credential lifetime.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import time
from collections.abc import Mapping

from kafkette.broker.security.sasl.mechanism import (
    AuthenticationFailed,
    InvalidCredentials,
    clip,
)

SEPARATOR = "\x01"
_INVALID_FIRST = "Invalid OAUTHBEARER client first message"
_KEY = r"[A-Za-z]+"
_VALUE = r"[\x21-\x7E \t\r\n]+"
_CLIENT_FIRST = re.compile(
    r"n,(?:a=(?P<authzid>(?:[\x02-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+))?,"
    + SEPARATOR
    + rf"(?P<kvpairs>(?:{_KEY}={_VALUE}{SEPARATOR})*)"
    + SEPARATOR,
    re.S,
)
_AUTH = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")


class TokenRefused(Exception):
    """The validator's reason, logged; the client gets the RFC 7628 JSON status."""

    def __init__(self, reason: str, scope: str | None = None) -> None:
        super().__init__(reason)
        self.scope = scope


def _refuse_constant(name: str) -> object:
    """JSON has no NaN or Infinity (Python's json reads them unless told not to)."""
    raise ValueError(f"{name} is not a JSON number")


def clock_skew_ms(options: Mapping[str, str]) -> int:
    """``unsecuredValidatorAllowableClockSkewMs``: an int >= 0 (default 0); raises
    ValueError otherwise (checked at start, settings.check_sasl_config)."""
    text = (options.get("unsecuredValidatorAllowableClockSkewMs") or "").strip()
    if not text:
        return 0
    try:
        skew = int(text)
    except ValueError:
        skew = -1
    if skew < 0:
        raise ValueError(
            f"unsecuredValidatorAllowableClockSkewMs must be an integer >= 0: {text[:40]!r}"
        )
    return skew


def _b64url_json(part: str, what: str) -> dict:
    try:
        raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
        value = json.loads(raw, parse_constant=_refuse_constant)
    except (binascii.Error, ValueError) as exc:
        raise TokenRefused(f"the JWS {what} is not Base64URL-encoded JSON: {exc}") from None
    if not isinstance(value, dict):
        raise TokenRefused(f"the JWS {what} is not a JSON object")
    return value


def _scope_of(value: object, claim: str) -> set[str]:
    """Kafka's OAuthBearerUnsecuredJws.calculateScope: a string claim is ONE scope (trimmed,
    none if blank), a list gives its trimmed non-blank strings; anything else makes the
    token illegal, whether or not a scope is required. Only the required-scope option is
    split on spaces: ``"read kafka"`` is one scope, not ``kafka``."""
    if value is None:
        return set()
    if isinstance(value, str):
        return {value.strip()} if value.strip() else set()
    if isinstance(value, list):
        if not all(isinstance(element, str) for element in value):
            raise TokenRefused(f"the {claim!r} claim holds a value that is not a string")
        return {element.strip() for element in value if element.strip()}
    raise TokenRefused(f"the {claim!r} claim is neither a string nor a list of strings")


class UnsecuredToken:
    """A validated token: its principal, claims and expiry."""

    def __init__(self, principal: str, claims: dict, expiry_ms: int) -> None:
        self.principal = principal
        self.claims = claims
        self.expiry_ms = expiry_ms


def validate_unsecured_token(
    token: str, options: Mapping[str, str], now_ms: int | None = None
) -> UnsecuredToken:
    """Kafka's unsecured validator rules; raises TokenRefused."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    principal_claim = (options.get("unsecuredValidatorPrincipalClaimName") or "").strip() or "sub"
    scope_claim = (options.get("unsecuredValidatorScopeClaimName") or "").strip() or "scope"
    required_scope = (options.get("unsecuredValidatorRequiredScope") or "").split()
    try:
        skew = clock_skew_ms(options)
    except ValueError as exc:  # refused at start; a token is never let through for it
        raise TokenRefused(str(exc)) from None
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenRefused("an unsecured JWS has 3 dot-separated Base64URL-encoded values")
    if parts[2]:
        raise TokenRefused("an unsecured JWS must have an empty signature")
    header = _b64url_json(parts[0], "header")
    claims = _b64url_json(parts[1], "payload")
    if header.get("alg") != "none":
        raise TokenRefused("an unsecured JWS must have 'alg' value of 'none'")
    principal = claims.get(principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise TokenRefused(f"the principal claim {principal_claim!r} must be a non-empty string")

    def number_ms(name: str) -> int | None:
        value = claims.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TokenRefused(f"the {name!r} claim must be a number")
        if not math.isfinite(value):  # 1e400 reads as inf
            raise TokenRefused(f"the {name!r} claim must be a finite number")
        return int(value * 1000)

    issued_at = number_ms("iat")
    expiry = number_ms("exp")
    if issued_at is not None and issued_at > now + skew:
        raise TokenRefused(f"the token was issued in the future (iat {issued_at} ms)")
    if expiry is None:
        raise TokenRefused("the token has no 'exp' claim")
    if now > expiry + skew:
        raise TokenRefused(f"the token expired at {expiry} ms")
    if issued_at is not None and expiry <= issued_at:
        raise TokenRefused("the token's 'exp' is not after its 'iat'")
    granted = _scope_of(claims.get(scope_claim), scope_claim)
    if required_scope:
        if not set(required_scope) <= granted:
            raise TokenRefused(
                f"the token's scope lacks {' '.join(required_scope)}",
                scope=" ".join(required_scope),
            )
    return UnsecuredToken(principal, claims, expiry)


class OAuthBearerServer:
    name = "OAUTHBEARER"

    def __init__(self, options: Mapping[str, str]) -> None:
        self._options = options
        self._token: UnsecuredToken | None = None
        self._error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == SEPARATOR.encode() and self._error is not None:
            raise AuthenticationFailed(self._error)
        self._error = None
        text = token.decode("utf-8", "replace")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise InvalidCredentials(_INVALID_FIRST)
        pairs: dict[str, str] = {}
        for pair in match.group("kvpairs").split(SEPARATOR):
            if pair:
                key, _, value = pair.partition("=")
                pairs[key] = value
        auth = pairs.pop("auth", None)
        if auth is None:
            raise InvalidCredentials(f"{_INVALID_FIRST}: 'auth' not specified")
        auth_match = _AUTH.fullmatch(auth)
        if auth_match is None:
            raise InvalidCredentials(f"{_INVALID_FIRST}: invalid 'auth' format")
        if auth_match.group("scheme").lower() != "bearer":
            raise InvalidCredentials(
                "Invalid scheme in OAUTHBEARER client first message: "
                + clip(auth_match.group("scheme"))
            )
        try:
            validated = validate_unsecured_token(auth_match.group("token"), self._options)
        except TokenRefused as exc:
            status = "insufficient_scope" if exc.scope else "invalid_token"
            error = f'{{"status":"{status}"'
            if exc.scope:
                error += f', "scope":"{exc.scope}"'
            self._error = error + "}"
            self.refusal_reason = str(exc)
            return self._error.encode()
        authzid = match.group("authzid") or ""
        if authzid and authzid != validated.principal:
            raise AuthenticationFailed(
                f"Authentication failed: Client requested an authorization id ({clip(authzid)}) "
                f"that is different from the token's principal name "
                f"({clip(validated.principal)})"
            )
        self._token = validated
        return b""

    refusal_reason = ""

    @property
    def complete(self) -> bool:
        return self._token is not None

    @property
    def principal_name(self) -> str:
        return self._token.principal if self._token is not None else ""

    @property
    def credential_expiry_ms(self) -> int | None:
        return self._token.expiry_ms if self._token is not None else None
