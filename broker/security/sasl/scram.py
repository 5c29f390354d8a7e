"""SCRAM-SHA-256 / SCRAM-SHA-512 on the server side (RFC 5802, RFC 7677).

Two client messages: client-first (user name and client nonce) is answered with the
user's salt and iteration count; client-final carries the proof, checked against the
StoredKey kept by the credential store, and is answered with the server signature.
Messages to the client follow Kafka's ScramSaslServer: an unknown user and a wrong
proof both end as "invalid credentials" (InvalidCredentials), an authorization id
other than the user name is told as such.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.broker.security.sasl.mechanism import (
    AuthenticationFailed,
    InvalidCredentials,
    PasswordMechanism,
    clip,
)

CredentialLookup = Callable[[str, str], "sf.ScramCredential | None"]


def username_in_client_first(token: bytes) -> str | None:
    """The user a client-first message names (None if it is not one): the credential
    store is asked for it before the message is evaluated."""
    try:
        text = token.decode("utf-8")
        _, _, bare = text.partition(",")
        _, _, bare = bare.partition(",")
        first = bare.split(",", 1)[0]
        return sf.unescape_username(first[2:]) if first.startswith("n=") else None
    except (UnicodeDecodeError, sf.ScramFormatError):
        return None


class ScramServer(PasswordMechanism):
    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        if mechanism not in sf.MECHANISMS:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.name = mechanism
        self._lookup = lookup
        self._state = "first"
        self._user = ""
        self._credential: sf.ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2_header = ""

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCredentials("SCRAM message is not UTF-8") from None
        try:
            if self._state == "first":
                return self._client_first(text)
            if self._state == "final":
                return self._client_final(text)
        except sf.ScramFormatError as exc:
            self._state = "failed"
            raise InvalidCredentials(f"invalid SCRAM message: {exc}") from None
        except (AuthenticationFailed, InvalidCredentials):
            self._state = "failed"
            raise
        raise InvalidCredentials(f"unexpected SCRAM message in state {self._state}")

    def _client_first(self, text: str) -> bytes:
        # gs2-header: "n," (no channel binding; "y"/"p" are refused), optional a=authzid, ","
        if not text.startswith("n,"):
            raise sf.ScramFormatError("channel binding is not supported (gs2 flag must be 'n')")
        authzid_part, sep, bare = text[2:].partition(",")
        if not sep:
            raise sf.ScramFormatError("client-first message has no gs2 header")
        authzid = ""
        if authzid_part:
            if not authzid_part.startswith("a="):
                raise sf.ScramFormatError("invalid authorization id in gs2 header")
            authzid = sf.unescape_username(authzid_part[2:])
        self._gs2_header = text[: len(text) - len(bare)]
        if bare.startswith("m="):
            raise sf.ScramFormatError("mandatory extensions are not supported")
        fields = bare.split(",")
        if len(fields) < 2 or not fields[0].startswith("n=") or not fields[1].startswith("r="):
            raise sf.ScramFormatError("client-first message must start n=USER,r=NONCE")
        username = sf.unescape_username(fields[0][2:])
        client_nonce = fields[1][2:]
        if not client_nonce:
            raise sf.ScramFormatError("empty client nonce")
        extensions = sf.parse_attributes(",".join(fields[2:])) if len(fields) > 2 else {}
        if extensions.get("tokenauth", "").lower() == "true":
            raise InvalidCredentials("delegation token authentication is not supported")
        credential = self._lookup(self.name, username)
        if credential is None:
            raise InvalidCredentials(f"no {self.name} credential for user {clip(username)}")
        if authzid and authzid != username:
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < sf.MIN_ITERATIONS:
            raise InvalidCredentials(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{sf.MIN_ITERATIONS} for {self.name}"
            )
        self._user = username
        self._credential = credential
        self._client_first_bare = bare
        nonce = client_nonce + sf.new_nonce()
        self._server_first = (
            f"r={nonce},s={sf.b64(credential.salt)},i={credential.iterations}"
        )
        self._state = "final"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise sf.ScramFormatError("client-final message has no proof")
        attributes = sf.parse_attributes(without_proof)
        expected_nonce = self._server_first.split(",", 1)[0][2:]
        if attributes.get("r") != expected_nonce:
            raise InvalidCredentials("Invalid client nonce in the final client message.")
        if attributes.get("c") != sf.b64(self._gs2_header.encode()):
            raise InvalidCredentials("channel binding does not match the gs2 header")
        proof = sf.unb64(proof_text)
        credential = self._credential
        assert credential is not None
        auth_message = (
            f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        )
        client_signature = sf.signature(self.name, credential.stored_key, auth_message)
        if len(proof) != len(client_signature):
            raise InvalidCredentials("Invalid client credentials")
        client_key = sf.xor(proof, client_signature)
        if not hmac.compare_digest(sf.stored_key(self.name, client_key), credential.stored_key):
            raise InvalidCredentials("Invalid client credentials")
        server_signature = sf.signature(self.name, credential.server_key, auth_message)
        self._state = "complete"
        self._credential = None
        return f"v={sf.b64(server_signature)}".encode()

    @property
    def awaiting_first(self) -> bool:
        return self._state == "first"

    @property
    def complete(self) -> bool:
        return self._state == "complete"
