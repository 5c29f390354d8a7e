"""What every server-side SASL mechanism offers the authenticator, and how it fails.

A mechanism is a small state machine fed the client's tokens one by one; it answers
each with the server's token and says when it is complete and who authenticated.
Two failures, as Kafka tells them apart (SaslServerAuthenticator):

- ``AuthenticationFailed``: a message meant for the client, sent as it is
  (Kafka's SaslAuthenticationException: "Authentication failed: Invalid username or
  password" from PLAIN);
- ``InvalidCredentials``: a detail for the log only; the client is told "Authentication
  failed during authentication due to invalid credentials with SASL mechanism X", so
  that nothing (such as whether a SCRAM user exists) leaks to an unauthenticated peer.
"""

from __future__ import annotations

from typing import Protocol

# How much of a client's own text (a user name, a mechanism, a malformed attribute) a
# log line or a message quotes: enough to recognise it, never a frame's worth.
CLIENT_TEXT_LIMIT = 100


def clip(text: str, limit: int = CLIENT_TEXT_LIMIT) -> str:
    """``repr`` of client-controlled ``text``, cut to ``limit`` characters."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


class AuthenticationFailed(Exception):
    """Authentication refused; ``str(exc)`` is what the client is told."""


class InvalidCredentials(Exception):
    """Authentication refused; ``str(exc)`` is for the broker's log only."""


class ServerMechanism(Protocol):
    """One authentication exchange on the server side."""

    name: str

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer to one client token; raises AuthenticationFailed or
        InvalidCredentials."""
        ...

    @property
    def complete(self) -> bool: ...

    @property
    def principal_name(self) -> str:
        """The authenticated user (valid once complete)."""
        ...

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential itself expires (epoch ms; an OAuth token's ``exp``), or
        None: the session then lasts ``connections.max.reauth.ms`` at most."""
        ...


class PasswordMechanism:
    """What PLAIN and SCRAM share: the user is the name the client authenticated with
    (``self._user``, set by ``evaluate``), and a password carries no lifetime of its own,
    so the session lasts ``connections.max.reauth.ms`` at most."""

    _user: str

    @property
    def principal_name(self) -> str:
        return self._user

    @property
    def credential_expiry_ms(self) -> int | None:
        return None
