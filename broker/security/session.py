"""Who is on the other end of a connection, as Kafka's ``RequestContext`` says it.

A ``Session`` is made when a connection is accepted, from its listener, and updated
once: when SASL authentication succeeds (or, on an SSL listener with client
authentication, from the client certificate's subject). Handlers and the authorizer
read it from ``request.session``; nothing else in the broker keeps per-connection
identity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

PLAINTEXT = "PLAINTEXT"
SSL = "SSL"
SASL_PLAINTEXT = "SASL_PLAINTEXT"
SASL_SSL = "SASL_SSL"
SECURITY_PROTOCOLS = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``User:alice``: Kafka's principal type and name (ACLs name principals this way)."""

    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``TYPE:NAME`` as ACL bindings and ``super.users`` write it; raises ValueError."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"expected a principal as TYPE:NAME, got {text!r}")
        return cls(kind, name)


# Kafka's principal for a connection nothing authenticated (PLAINTEXT, or SSL without
# a client certificate).
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


@dataclass(slots=True)
class Session:
    """One connection's identity. ``principal`` is ANONYMOUS until authentication."""

    listener_name: str  # e.g. "PLAINTEXT", "SASL_SSL", or any name listeners= gives
    security_protocol: str  # one of SECURITY_PROTOCOLS
    client_host: str  # the peer's IP address, as ACL host patterns match it
    principal: KafkaPrincipal = ANONYMOUS
    # The SASL mechanism that authenticated the principal, "" when none did.
    mechanism: str = ""
    # (name, version) its last valid ApiVersions v3+ announced (KIP-511), None before.
    client_software: tuple[str, str] | None = None
    # Called once when the connection closes (e.g. KIP-714 forgets its client instances).
    on_close: list[Callable[[], None]] = field(default_factory=list)

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in (SASL_PLAINTEXT, SASL_SSL)


def listener_of(request: object) -> str:
    """The listener a request came in on; PLAINTEXT for one the broker made itself."""
    session = getattr(request, "session", None)
    return session.listener_name if isinstance(session, Session) else PLAINTEXT
