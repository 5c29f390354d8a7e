"""RFC 5802 / RFC 7677 arithmetic and message syntax, shared by server and client.

Kept apart from the state machines so that the server (``scram.py``), the inter-broker
client (``client.py``) and the credential store (``scram_store.py``) compute keys one
way. Kafka's two mechanisms: SCRAM-SHA-256 (admin API type 1) and SCRAM-SHA-512 (2).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from kafkette.broker.security.sasl.mechanism import clip

# Kafka's ScramMechanism: name -> (hash name, AlterUserScramCredentials type byte).
MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-256": ("sha256", 1),
    "SCRAM-SHA-512": ("sha512", 2),
}
MECHANISM_BY_TYPE = {number: name for name, (_, number) in MECHANISMS.items()}
# Kafka's bounds: ScramMechanism.minIterations() is 4096; the admin API refuses
# more than 16384 (ControllerApis / ScramControlManager's MAX_ITERATIONS).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


class ScramFormatError(ValueError):
    """A SCRAM message that does not follow RFC 5802's grammar."""


def hash_name(mechanism: str) -> str:
    return MECHANISMS[mechanism][0]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(Normalize(password), salt, i): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(hash_name(mechanism), password.encode(), salt, iterations)


def _hmac(mechanism: str, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hash_name(mechanism)).digest()


def client_key(mechanism: str, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Client Key")


def server_key(mechanism: str, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Server Key")


def stored_key(mechanism: str, client: bytes) -> bytes:
    return hashlib.new(hash_name(mechanism), client).digest()


def signature(mechanism: str, key: bytes, auth_message: bytes) -> bytes:
    return _hmac(mechanism, key, auth_message)


def xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What a server keeps of a password: never the password itself."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def make_credential(
    mechanism: str, password: str, iterations: int, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def credential_from_salted(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """A credential from SaltedPassword: what AlterUserScramCredentials carries."""
    return ScramCredential(
        salt=salt,
        stored_key=stored_key(mechanism, client_key(mechanism, salted)),
        server_key=server_key(mechanism, salted),
        iterations=iterations,
    )


def new_nonce() -> str:
    """Printable nonce characters (RFC 5802: any printable but ',')."""
    return secrets.token_urlsafe(24)


def escape_username(name: str) -> str:
    """saslname: '=' and ',' escaped as =3D and =2C."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(name: str) -> str:
    out = []
    index = 0
    while index < len(name):
        char = name[index]
        if char == "=":
            code = name[index : index + 3]
            if code == "=3D":
                out.append("=")
            elif code == "=2C":
                out.append(",")
            else:
                raise ScramFormatError(f"invalid escape in username: {clip(name)}")
            index += 3
            continue
        if char == ",":
            raise ScramFormatError(f"unescaped ',' in username: {clip(name)}")
        out.append(char)
        index += 1
    return "".join(out)


def parse_attributes(text: str) -> dict[str, str]:
    """``a=1,b=2`` into a dict (each attribute one letter, values may contain '=')."""
    attributes: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ScramFormatError(f"invalid SCRAM attribute {clip(part)}")
        attributes[key] = value
    return attributes


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ScramFormatError(f"invalid base64 value {clip(text)}") from None
