"""SASL/PLAIN (RFC 4616) checked against the users of the listener's JAAS config.

The client's single token is ``authzid NUL authcid NUL password``. The users are the
``user_<name>="<password>"`` options of PlainLoginModule, as Kafka's default
PlainServerCallbackHandler reads them; the messages are Kafka's PlainSaslServer's.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from kafkette.broker.security.sasl.mechanism import AuthenticationFailed, PasswordMechanism


class PlainServer(PasswordMechanism):
    name = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._complete = False
        self._user = ""

    def evaluate(self, token: bytes) -> bytes:
        text = token.decode("utf-8", "replace")
        parts = text.split("\0")
        if len(parts) != 3:
            raise AuthenticationFailed(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, username, password = parts
        if not username:
            raise AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise AuthenticationFailed("Authentication failed: password not specified")
        expected = self._users.get(username)
        # Compare in constant time, and compare something for an unknown user too.
        matches = hmac.compare_digest(
            (expected if expected is not None else "\0" + password).encode(), password.encode()
        )
        if expected is None or not matches:
            raise AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self._user = username
        self._complete = True
        return b""

    @property
    def complete(self) -> bool:
        return self._complete
