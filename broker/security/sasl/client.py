"""The client side of SASL, for one broker authenticating to another.

The inter-broker connection (broker/cluster/peer_client.py) does the SaslHandshake
itself, then hands ``authenticate_client`` a function that sends one SaslAuthenticate
request and returns the server's ``auth_bytes``. Keeping the transport out of here lets
the same code run over plain or TLS sockets and keeps it testable against the server
state machines without a network.

Credentials come from where Kafka takes them: the mechanism from
``sasl.mechanism.inter.broker.protocol``, the user from the ``username``/``password``
options of the inter-broker listener's JAAS config for that mechanism.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping

from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.broker.security.sasl.jaas import jaas_for

Exchange = Callable[[bytes], Awaitable[bytes]]

# The most iterations the client computes for a server: twice Kafka's maximum (16384).
MAX_SERVER_ITERATIONS = 2 * sf.MAX_ITERATIONS


class SaslClientError(Exception):
    """The server refused our credentials, or answered something SCRAM forbids."""


async def authenticate_client(
    exchange: Exchange, mechanism: str, username: str, password: str
) -> None:
    """Authenticate with ``mechanism`` over ``exchange``; raise SaslClientError if refused.

    ``exchange(token)`` sends one SaslAuthenticate carrying ``token`` and returns the
    server's ``auth_bytes`` (it raises itself when the response has an error code)."""
    if mechanism == "PLAIN":
        # authzid NUL authcid NUL password, authzid empty (Kafka's PlainSaslClient).
        await exchange(b"\0" + username.encode() + b"\0" + password.encode())
        return
    if mechanism in sf.MECHANISMS:
        await _scram(exchange, mechanism, username, password)
        return
    raise SaslClientError(f"SASL mechanism {mechanism} is not supported for inter-broker use")


async def _scram(exchange: Exchange, mechanism: str, username: str, password: str) -> None:
    nonce = sf.new_nonce()
    first_bare = f"n={sf.escape_username(username)},r={nonce}"
    server_first = (await exchange(("n,," + first_bare).encode())).decode("utf-8", "replace")
    try:
        attributes = sf.parse_attributes(server_first)
        if "e" in attributes:
            raise SaslClientError(f"server refused SCRAM: {attributes['e']}")
        combined = attributes["r"]
        salt = sf.unb64(attributes["s"])
        iterations = int(attributes["i"])
    except (KeyError, ValueError) as exc:
        raise SaslClientError(f"invalid SCRAM server-first message: {exc}") from None
    if not combined.startswith(nonce) or len(combined) == len(nonce):
        raise SaslClientError("SCRAM server nonce does not extend the client nonce")
    if iterations < sf.MIN_ITERATIONS:
        raise SaslClientError(f"SCRAM iterations {iterations} below {sf.MIN_ITERATIONS}")
    if iterations > MAX_SERVER_ITERATIONS:
        # A hostile or broken server could make us hash for minutes, on the event loop.
        raise SaslClientError(f"SCRAM iterations {iterations} above {MAX_SERVER_ITERATIONS}")
    salted = sf.salted_password(mechanism, password, salt, iterations)
    final_without_proof = f"c=biws,r={combined}"  # biws: base64 of "n,," (no binding)
    auth_message = f"{first_bare},{server_first},{final_without_proof}".encode()
    client_key = sf.client_key(mechanism, salted)
    proof = sf.xor(
        client_key,
        sf.signature(mechanism, sf.stored_key(mechanism, client_key), auth_message),
    )
    server_final = (
        await exchange(f"{final_without_proof},p={sf.b64(proof)}".encode())
    ).decode("utf-8", "replace")
    try:
        final = sf.parse_attributes(server_final)
    except ValueError as exc:
        raise SaslClientError(f"invalid SCRAM server-final message: {exc}") from None
    if "e" in final:
        raise SaslClientError(f"server refused SCRAM: {final['e']}")
    expected = sf.signature(mechanism, sf.server_key(mechanism, salted), auth_message)
    if not hmac.compare_digest(final.get("v", "").encode(), sf.b64(expected).encode()):
        raise SaslClientError("SCRAM server signature does not match: not the real server")


def inter_broker_credentials(
    explicit: Mapping[str, str], listener: str
) -> tuple[str, str, str]:
    """(mechanism, username, password) this broker logs in with on the SASL inter-broker
    ``listener`` (broker/security/listeners.py chose it). Raises ValueError when no JAAS
    config gives the broker's own ``username``/``password`` (Kafka fails to start then too)."""
    mechanism = explicit.get("sasl.mechanism.inter.broker.protocol", "GSSAPI").strip()
    entry = jaas_for(explicit, listener, mechanism)
    if entry is None or "username" not in entry.options or "password" not in entry.options:
        raise ValueError(
            f"inter-broker listener {listener} uses SASL {mechanism}: its JAAS config "
            f"(listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config or "
            "sasl.jaas.config) must set username= and password="
        )
    return mechanism, entry.options["username"], entry.options["password"]
