"""TLS for SSL and SASL_SSL listeners: Kafka's ``ssl.*`` configs turned into ``ssl.SSLContext``.

Kafka reads keystores through Java; here every format it takes is read with
``cryptography`` (imported only when a TLS listener exists) and handed to OpenSSL:

* ``ssl.keystore.type`` PKCS12 (and JKS, Kafka's default type name: a PKCS12 file named
  JKS loads, as Java's keystore loader reads one too; a real JKS file is refused with
  the keytool line that converts it), PEM (``ssl.keystore.location`` holding a
  PKCS#8 key and its certificate chain, or ``ssl.keystore.key`` and
  ``ssl.keystore.certificate.chain`` inline), with Kafka's rules on which passwords
  go with which (``DefaultSslEngineFactory``'s messages).
* the truststore the same way (PEM, PKCS12, ``ssl.truststore.certificates``); none
  configured: the system's CAs, as Java's default trust store.
* ``ssl.client.auth`` required / requested / none; the principal of a client that
  presents a certificate is its subject in RFC 2253 form (``CN=client,OU=test,O=kafkette``),
  mapped by ``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``).
* ``ssl.enabled.protocols`` (TLSv1.2, TLSv1.3), ``ssl.cipher.suites`` (Java / IANA
  names like ``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`` or OpenSSL's),
  ``ssl.endpoint.identification.algorithm`` (client side: the inter-broker connection).

OpenSSL loads a key and chain only from files: the decoded key is written, encrypted
with a one-time password, to a private temporary directory that is removed at once.
Every problem raises ``TlsConfigError`` whose message is one line for the operator.
"""

from __future__ import annotations

import os
import re
import secrets
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkette.broker.security.listeners import ListenerSpec, listener_value
from kafkette.broker.security.session import SASL_SSL, KafkaPrincipal

CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOLS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_TLS13_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256")
# Java keystore magic numbers: JKS and JCEKS (Python cannot read either).
_JAVA_KEYSTORE_MAGIC = (b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce")



def _tls_defaults() -> dict[str, str | None]:
    """Kafka's ``ssl.*`` broker configs and defaults, as config.py registers them (each
    may also be given per listener as ``listener.name.<l>.<config>``)."""
    from kafkette.broker.config import BROKER_CONFIGS

    return {n: d.default for n, d in BROKER_CONFIGS.items() if n.startswith("ssl.")}


class TlsConfigError(ValueError):
    """A TLS setting or file the broker cannot use; the message is one line."""


@dataclass(frozen=True)
class ListenerTls:
    """One TLS listener's server context and how it names its clients."""

    context: ssl.SSLContext
    mapper: PrincipalMapper
    client_auth: str


def tls_settings(explicit: Mapping[str, str], listener: ListenerSpec) -> dict[str, str | None]:
    """Every ``ssl.*`` value of ``listener``: its own ``listener.name.<l>.`` value first.

    KIP-684: on a SASL_SSL listener ``ssl.client.auth`` counts only when set with the
    listener prefix (SASL authenticates those clients)."""
    values = {
        name: listener_value(explicit, listener, name, default)
        for name, default in _tls_defaults().items()
    }
    if listener.security_protocol == SASL_SSL:
        values["ssl.client.auth"] = explicit.get(
            listener.config_prefix + "ssl.client.auth", "none"
        )
    return values


def server_tls(explicit: Mapping[str, str], listener: ListenerSpec) -> ListenerTls:
    """The server side of an SSL or SASL_SSL listener; raises TlsConfigError."""
    values = tls_settings(explicit, listener)
    where = f"listener {listener.name}"
    auth = (values["ssl.client.auth"] or "none").strip().lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(
            f"ssl.client.auth={values['ssl.client.auth']} on {where}: expected required,"
            " requested or none"
        )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    chain = _keystore(values, where)
    if chain is None:
        raise TlsConfigError(
            f"{where} ({listener.security_protocol}) needs a keystore: set ssl.keystore.location"
            f" (or {listener.config_prefix}ssl.keystore.location)"
        )
    _load_chain(context, chain, where)
    context.verify_mode = CLIENT_AUTH[auth]
    # The truststore verifies client certificates; read even when none are asked for,
    # so that a broken one stops the start as in Kafka.
    if auth != "none" or values["ssl.truststore.location"] or values["ssl.truststore.certificates"]:
        _load_trust(context, values, where)
    _apply_protocols_and_suites(context, values, where)
    # One context per listener, many connections: no session tickets to rotate; and no
    # TLS 1.2 renegotiation (Kafka's SslTransportLayer refuses it too).
    context.options |= ssl.OP_NO_TICKET | ssl.OP_NO_RENEGOTIATION
    mapper = PrincipalMapper.from_rules(values["ssl.principal.mapping.rules"] or "DEFAULT")
    return ListenerTls(context, mapper, auth)


def client_context(explicit: Mapping[str, str], listener: ListenerSpec) -> ssl.SSLContext:
    """The client side of the inter-broker listener: its truststore verifies the other
    brokers (host names too unless ``ssl.endpoint.identification.algorithm`` is empty),
    its keystore answers their ``ssl.client.auth``."""
    values = tls_settings(explicit, listener)
    where = f"inter-broker listener {listener.name}"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    identification = (values["ssl.endpoint.identification.algorithm"] or "").strip()
    if identification.lower() not in ("", "https"):
        raise TlsConfigError(
            f"ssl.endpoint.identification.algorithm={identification} on {where}:"
            " expected https or empty"
        )
    context.check_hostname = bool(identification)
    context.verify_mode = ssl.CERT_REQUIRED
    _load_trust(context, values, where)
    chain = _keystore(values, where)
    if chain is not None:
        _load_chain(context, chain, where)
    _apply_protocols_and_suites(context, values, where)
    return context


# --- keystores and truststores ----------------------------------------------------


@dataclass(frozen=True)
class _KeyAndChain:
    key: Any  # a cryptography private key
    chain: list[Any]  # cryptography certificates, leaf first


def _keystore(values: Mapping[str, str | None], where: str) -> _KeyAndChain | None:
    kind = (values["ssl.keystore.type"] or "JKS").strip().upper()
    path = values["ssl.keystore.location"]
    password = values["ssl.keystore.password"]
    key_password = values["ssl.key.password"]
    inline_key = values["ssl.keystore.key"]
    inline_chain = values["ssl.keystore.certificate.chain"]
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise TlsConfigError(f"ssl.keystore.type={kind} on {where}: expected PKCS12, PEM or JKS")
    if inline_key is not None:
        if kind != "PEM":
            raise TlsConfigError(
                f"SSL private key can be specified only for PEM, but key store type is {kind}."
            )
        if inline_chain is None:
            raise TlsConfigError(
                "SSL private key is specified, but certificate chain is not specified."
            )
        if path is not None:
            raise TlsConfigError(
                "Both SSL key store location and separate private key are specified."
            )
        if password is not None:
            raise TlsConfigError(
                "SSL key store password cannot be specified with PEM format,"
                " only key password may be specified."
            )
        return _pem_key_and_chain(inline_key, inline_chain, key_password, "ssl.keystore.key")
    if inline_chain is not None:
        raise TlsConfigError(
            "SSL certificate chain is specified, but private key is not specified"
        )
    if kind == "PEM" and path is not None:
        if password is not None:
            raise TlsConfigError(
                "SSL key store password cannot be specified with PEM format,"
                " only key password may be specified"
            )
        if key_password is None:
            raise TlsConfigError(
                "SSL PEM key store is specified, but key password is not specified."
            )
        text = _read_text(path, "keystore")
        return _pem_key_and_chain(text, text, key_password, path)
    if path is None and password is not None:
        raise TlsConfigError(
            "SSL key store is not specified, but key store password is specified."
        )
    if path is not None and password is None:
        raise TlsConfigError("SSL key store is specified, but key store password is not specified.")
    if path is None:
        return None
    assert password is not None
    return _pkcs12_key_and_chain(path, kind, password, key_password)


def _load_trust(context: ssl.SSLContext, values: Mapping[str, str | None], where: str) -> None:
    kind = (values["ssl.truststore.type"] or "JKS").strip().upper()
    path = values["ssl.truststore.location"]
    password = values["ssl.truststore.password"]
    inline = values["ssl.truststore.certificates"]
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise TlsConfigError(
            f"ssl.truststore.type={kind} on {where}: expected PKCS12, PEM or JKS"
        )
    if inline is not None:
        if kind != "PEM":
            raise TlsConfigError(
                "SSL trust store certs can be specified only for PEM, but trust store type"
                f" is {kind}."
            )
        if path is not None:
            raise TlsConfigError(
                "Both SSL trust store location and separate trust certificates are specified."
            )
        if password is not None:
            raise TlsConfigError("SSL trust store password cannot be specified for PEM format.")
        certificates = _pem_certificates(inline, "ssl.truststore.certificates")
    elif kind == "PEM" and path is not None:
        if password is not None:
            raise TlsConfigError("SSL trust store password cannot be specified for PEM format.")
        certificates = _pem_certificates(_read_text(path, "truststore"), path)
    elif path is None and password is not None:
        raise TlsConfigError(
            "SSL trust store is not specified, but trust store password is specified."
        )
    elif path is not None:
        certificates = _pkcs12_certificates(path, kind, password)
    else:
        # Java's default trust store; a server verifies clients, a client servers.
        server = context.protocol == ssl.PROTOCOL_TLS_SERVER
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH if server else ssl.Purpose.SERVER_AUTH)
        return
    from cryptography.hazmat.primitives.serialization import Encoding

    pem = "".join(c.public_bytes(Encoding.PEM).decode() for c in certificates)
    try:
        context.load_verify_locations(cadata=pem)
    except ssl.SSLError as exc:
        raise TlsConfigError(f"truststore of {where}: {exc.reason or exc}") from None


_PEM_BLOCK = re.compile(
    r"-+BEGIN\s+([A-Z0-9 ]+?)\s*-+\s+"  # the label
    r"((?:[^\r\n]*:[^\r\n]*[\r\n]+)*)"  # encoding headers (Proc-Type: ...)
    r"([A-Za-z0-9/+=\s]*?)-+END\s+\1\s*-+"
)


def _pem_blocks(text: str, label: str) -> list[bytes]:
    """The DER of every ``-----BEGIN <label>-----`` block (whitespace anywhere in the
    base64, newlines replaced by spaces too: a properties value is one line)."""
    import base64

    blocks = []
    for match in _PEM_BLOCK.finditer(text + "\n"):
        if match.group(1).replace("  ", " ").strip() == label:
            blocks.append(base64.b64decode(re.sub(r"\s", "", match.group(3))))
    return blocks


def _pem_certificates(text: str, source: str) -> list[Any]:
    from cryptography import x509

    blocks = _pem_blocks(text, "CERTIFICATE")
    if not blocks:
        raise TlsConfigError(f"{source}: no certificate found (expected PEM CERTIFICATE blocks)")
    try:
        return [x509.load_der_x509_certificate(der) for der in blocks]
    except ValueError as exc:
        raise TlsConfigError(f"{source}: invalid certificate: {exc}") from None


def _pem_key_and_chain(
    key_text: str, chain_text: str, key_password: str | None, source: str
) -> _KeyAndChain:
    from cryptography.hazmat.primitives.serialization import load_der_private_key

    encrypted = _pem_blocks(key_text, "ENCRYPTED PRIVATE KEY")
    plain = _pem_blocks(key_text, "PRIVATE KEY")
    keys = encrypted + plain
    if len(keys) != 1:
        raise TlsConfigError(
            f"{source}: expected one PKCS#8 private key (PRIVATE KEY or ENCRYPTED PRIVATE KEY),"
            f" found {len(keys)}"
        )
    password = key_password.encode() if (encrypted and key_password is not None) else None
    if encrypted and password is None:
        raise TlsConfigError(f"{source}: the private key is encrypted: set ssl.key.password")
    try:
        key = load_der_private_key(keys[0], password)
    except (ValueError, TypeError) as exc:
        reason = "wrong ssl.key.password?" if encrypted else str(exc)
        raise TlsConfigError(f"{source}: cannot read the private key ({reason})") from None
    return _KeyAndChain(key, _pem_certificates(chain_text, source))


def _read_bytes(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise TlsConfigError(f"cannot read SSL {what} {path}: {exc.strerror or exc}") from None


def _read_text(path: str, what: str) -> str:
    return _read_bytes(path, what).decode("utf-8", "replace")


def _check_not_java_keystore(data: bytes, path: str, what: str) -> None:
    if data[:4] in _JAVA_KEYSTORE_MAGIC:
        raise TlsConfigError(
            f"SSL {what} {path} is a Java JKS/JCEKS file, which kafkette cannot read: convert"
            f" it with keytool -importkeystore -srckeystore {path} -destkeystore"
            f" {path}.p12 -deststoretype PKCS12 and set the {what} type to PKCS12"
        )


def _pkcs12_key_and_chain(
    path: str, kind: str, password: str, key_password: str | None
) -> _KeyAndChain:
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read_bytes(path, "keystore")
    _check_not_java_keystore(data, path, "keystore")
    loaded = None
    for candidate in dict.fromkeys((password, key_password)):
        if candidate is None:
            continue
        try:
            loaded = pkcs12.load_pkcs12(data, candidate.encode())
            break
        except ValueError:
            continue
    if loaded is None:
        raise TlsConfigError(
            f"Failed to load SSL keystore {path} of type {kind}: not PKCS12, or the"
            " password is wrong"
        )
    if loaded.key is None or loaded.cert is None:
        raise TlsConfigError(f"SSL keystore {path} holds no private key with its certificate")
    chain = [loaded.cert.certificate] + [c.certificate for c in loaded.additional_certs]
    return _KeyAndChain(loaded.key, chain)


def _pkcs12_certificates(path: str, kind: str, password: str | None) -> list[Any]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read_bytes(path, "truststore")
    _check_not_java_keystore(data, path, "truststore")
    try:
        loaded = pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError:
        raise TlsConfigError(
            f"Failed to load SSL truststore {path} of type {kind}: not PKCS12, or the"
            " password is wrong"
        ) from None
    certificates = [c.certificate for c in loaded.additional_certs]
    if loaded.cert is not None:
        certificates.insert(0, loaded.cert.certificate)
    if not certificates:
        raise TlsConfigError(f"SSL truststore {path} holds no certificate")
    return certificates


def _load_chain(context: ssl.SSLContext, material: _KeyAndChain, where: str) -> None:
    """Hand key and chain to OpenSSL through a private, at once deleted, temporary file;
    the key in it is encrypted with a password that lives only in this call."""
    from cryptography.hazmat.primitives.serialization import (
        BestAvailableEncryption,
        Encoding,
        PrivateFormat,
    )

    one_time = secrets.token_hex(16)
    key_pem = material.key.private_bytes(
        Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(one_time.encode())
    )
    chain_pem = b"".join(c.public_bytes(Encoding.PEM) for c in material.chain)
    try:
        with tempfile.TemporaryDirectory(prefix="kafkette-tls-") as directory:
            path = os.path.join(directory, "keystore.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as file:
                file.write(key_pem + chain_pem)
            try:
                context.load_cert_chain(path, path, password=one_time)
            except ssl.SSLError as exc:
                raise TlsConfigError(
                    f"keystore of {where}: the key does not match its certificate"
                    f" ({exc.reason})"
                ) from None
    except OSError as exc:  # no usable temporary directory (TMPDIR)
        raise TlsConfigError(
            f"keystore of {where}: cannot hand the key to OpenSSL through a temporary"
            f" file: {exc.strerror or exc} ({tempfile.gettempdir()})"
        ) from None


# --- protocols and cipher suites ----------------------------------------------------

_KEX = {
    "ECDHE_ECDSA": "ECDHE-ECDSA-",
    "ECDHE_RSA": "ECDHE-RSA-",
    "DHE_RSA": "DHE-RSA-",
    "DHE_DSS": "DHE-DSS-",
    "RSA": "",
}
_BULK = {
    "AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "CHACHA20_POLY1305_SHA256": "CHACHA20-POLY1305",
    "AES_128_CBC_SHA256": "AES128-SHA256",
    "AES_256_CBC_SHA384": "AES256-SHA384",
    "AES_256_CBC_SHA256": "AES256-SHA256",
    "AES_128_CBC_SHA": "AES128-SHA",
    "AES_256_CBC_SHA": "AES256-SHA",
    "AES_128_CCM": "AES128-CCM",
    "AES_256_CCM": "AES256-CCM",
}


def openssl_suite_name(name: str) -> str:
    """A Java / IANA TLS 1.2 suite name in OpenSSL's spelling (OpenSSL names pass)."""
    if not name.startswith("TLS_") or "_WITH_" not in name:
        return name
    kex, _, bulk = name[4:].partition("_WITH_")
    if kex in _KEX and bulk in _BULK:
        return _KEX[kex] + _BULK[bulk]
    return name


def _apply_protocols_and_suites(
    context: ssl.SSLContext, values: Mapping[str, str | None], where: str
) -> None:
    protocols = [p.strip() for p in (values["ssl.enabled.protocols"] or "").split(",") if p.strip()]
    unknown = [p for p in protocols if p not in _PROTOCOLS]
    if unknown or not protocols:
        raise TlsConfigError(
            f"ssl.enabled.protocols on {where}: {', '.join(unknown) or 'empty'}"
            " (expected a list of TLSv1.2, TLSv1.3)"
        )
    versions = sorted(_PROTOCOLS[p] for p in protocols)
    suites = [s.strip() for s in (values["ssl.cipher.suites"] or "").split(",") if s.strip()]
    tls13 = [s for s in suites if s in _TLS13_SUITES]
    tls12 = [s for s in suites if s not in _TLS13_SUITES]
    if suites and not tls13:
        versions = [v for v in versions if v < ssl.TLSVersion.TLSv1_3]
    if suites and not tls12:
        versions = [v for v in versions if v >= ssl.TLSVersion.TLSv1_3]
    if tls13 and set(tls13) != set(_TLS13_SUITES):
        raise TlsConfigError(
            f"ssl.cipher.suites on {where}: Python's ssl cannot enable some TLS 1.3 suites"
            f" and not others: list all of {', '.join(_TLS13_SUITES)} or none"
        )
    if not versions:
        raise TlsConfigError(
            f"ssl.cipher.suites on {where} enables no suite of the ssl.enabled.protocols"
        )
    try:
        context.minimum_version = versions[0]
        context.maximum_version = versions[-1]
    except ValueError as exc:
        raise TlsConfigError(f"ssl.enabled.protocols on {where}: {exc}") from None
    if tls12:
        openssl = [openssl_suite_name(s) for s in tls12]
        try:
            context.set_ciphers(":".join(openssl))
        except ssl.SSLError:
            raise TlsConfigError(
                f"ssl.cipher.suites on {where}: none of {', '.join(tls12)} is supported"
            ) from None
        available = {c["name"] for c in context.get_ciphers()}
        missing = [s for s, o in zip(tls12, openssl, strict=True) if o not in available]
        if missing:
            raise TlsConfigError(
                f"ssl.cipher.suites on {where}: unsupported cipher suite {', '.join(missing)}"
            )


# --- the principal of a client certificate -----------------------------------------------

# Java's X500Principal.getName(RFC2253) keywords; other attributes are OID=#hex(DER).
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.9": "STREET",
    "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}


def rfc2253_subject(der: bytes) -> str:
    """A certificate's subject as Java's ``X500Principal.getName(RFC2253)`` writes it:
    most specific RDN first, attributes of one RDN in their DER order, Java's keywords
    with escaped string values, other attributes (and values that are not strings) as
    ``OID=#<hex of the value's DER, as in the certificate>``."""
    from cryptography import x509

    certificate = x509.load_der_x509_certificate(der)
    rdns = []
    for rdn in reversed(_subject_rdns(certificate.tbs_certificate_bytes)):
        parts = []
        for oid, tag, value, encoded in rdn:
            keyword = _RFC2253_KEYWORDS.get(oid)
            text = _der_string(tag, value) if keyword is not None else None
            if keyword is None or text is None:
                parts.append(f"{keyword or oid}=#{encoded.hex()}")
            else:
                parts.append(f"{keyword}={_escape(text)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


# A subject attribute straight from the DER: (dotted OID, value tag, value, value TLV).
_Attribute = tuple[str, int, bytes, bytes]


def _der_item(data: bytes, offset: int) -> tuple[int, int, int]:
    """(tag, start of the contents, end of the contents) of the TLV at ``offset``."""
    tag = data[offset]
    length = data[offset + 1]
    start = offset + 2
    if length & 0x80:
        size = length & 0x7F
        length = int.from_bytes(data[start:start + size], "big")
        start += size
    return tag, start, start + length


def _der_children(data: bytes, start: int, end: int) -> list[tuple[int, int, int, int]]:
    """(tag, TLV start, contents start, contents end) of each TLV in ``data[start:end]``."""
    children = []
    while start < end:
        tag, contents, after = _der_item(data, start)
        children.append((tag, start, contents, after))
        start = after
    return children


def _subject_rdns(tbs: bytes) -> list[list[_Attribute]]:
    """The subject of a TBSCertificate (version?, serial, signature, issuer, validity,
    subject, ...) as its RDNs, in DER order, each attribute's value as encoded."""
    _, start, end = _der_item(tbs, 0)
    fields = _der_children(tbs, start, end)
    if fields[0][0] == 0xA0:  # [0] EXPLICIT version
        fields = fields[1:]
    _, _, name_start, name_end = fields[4]
    rdns = []
    for _, _, set_start, set_end in _der_children(tbs, name_start, name_end):
        attributes = []
        for _, _, seq_start, seq_end in _der_children(tbs, set_start, set_end):
            (_, _, oid_start, oid_end), (tag, tlv, value_start, value_end) = (
                _der_children(tbs, seq_start, seq_end)[:2]
            )
            attributes.append(
                (
                    _oid_text(tbs[oid_start:oid_end]),
                    tag,
                    tbs[value_start:value_end],
                    tbs[tlv:value_end],
                )
            )
        rdns.append(attributes)
    return rdns


def _oid_text(encoded: bytes) -> str:
    arcs = []
    value = 0
    for byte in encoded:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = min(arcs[0] // 40, 2)
    return ".".join(str(arc) for arc in (first, arcs[0] - 40 * first, *arcs[1:]))


# The DER string types Java writes as text, and how their bytes read.
_DER_STRINGS = {
    12: "utf-8",  # UTF8String
    19: "ascii",  # PrintableString
    20: "latin-1",  # TeletexString (T61String), as Java reads it
    22: "ascii",  # IA5String
    27: "latin-1",  # GeneralString
    30: "utf-16-be",  # BMPString
    28: "utf-32-be",  # UniversalString
}


def _der_string(tag: int, value: bytes) -> str | None:
    encoding = _DER_STRINGS.get(tag)
    if encoding is None:
        return None
    try:
        return value.decode(encoding)
    except UnicodeDecodeError:
        return None


_RFC2253_SPECIALS = frozenset(',=+<>#;"\\')


def _escape(value: str) -> str:
    """Java's escaping: each of ``,=+<>#;"\\`` anywhere, NUL as ``\\00``, and every
    leading and trailing space (or carriage return)."""
    lead = len(value) - len(value.lstrip(" \r"))
    trail = len(value.rstrip(" \r"))
    out = []
    for index, char in enumerate(value):
        if char in _RFC2253_SPECIALS or index < lead or index >= trail:
            out.append("\\" + char)
        elif char == "\0":
            out.append("\\00")
        else:
            out.append(char)
    return "".join(out)


# Kafka's SslPrincipalMapper rule syntax: DEFAULT or RULE:pattern/replacement/[LU].
_RULE = re.compile(
    r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)[^,\n]*?)\s*(?:[,\n]|$)"
)


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str
    case: str

    def apply(self, name: str) -> str | None:
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(self.replacement, name)
        if self.case == "L":
            return result.lower()
        if self.case == "U":
            return result.upper()
        return result


@dataclass(frozen=True)
class PrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule that matches the subject names
    the principal; none matching fails the connection, as in Kafka."""

    rules: tuple[_Rule, ...]
    text: str

    @classmethod
    def from_rules(cls, text: str) -> PrincipalMapper:
        rules = []
        position = 0
        stripped = text.strip()
        while position < len(stripped):
            match = _RULE.match(stripped, position)
            if match is None or match.end() == position:
                raise TlsConfigError(f"Invalid rule: {stripped[position:]}")
            if match.group(1) == "DEFAULT":
                rules.append(_Rule(None, "", ""))
            else:
                try:
                    pattern = re.compile(match.group(2))
                    replacement = _java_replacement(match.group(3), pattern.groups)
                except (re.error, ValueError) as exc:
                    raise TlsConfigError(f"Invalid rule: {match.group(1)} ({exc})") from None
                rules.append(_Rule(pattern, replacement, match.group(4)))
            position = match.end()
        if not rules:
            rules.append(_Rule(None, "", ""))
        return cls(tuple(rules), stripped)

    def name_for(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise ValueError(f"No rules apply to {distinguished_name}, rules [{self.text}]")


def _java_replacement(text: str, groups: int) -> str:
    """Java's ``Matcher.replaceAll`` replacement ($1, \\x) in ``re.sub``'s spelling.

    As Java reads ``$n``: the first digit is the group, each further digit joins it
    while the number stays a group of the pattern (``$12`` with three groups is group 1
    then "2"). A group the pattern lacks, a ``$`` naming none or a trailing ``\\``
    raise ValueError: Java would fail every connection the rule matches, here the
    broker refuses the rule at start."""
    out = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            if index + 1 == len(text):
                raise ValueError("character to be escaped is missing")
            literal = text[index + 1]
            out.append("\\\\" if literal == "\\" else literal)
            index += 2
        elif char == "$":
            if index + 1 == len(text) or not text[index + 1].isdigit():
                raise ValueError("Illegal group reference: $ names no group")
            group = int(text[index + 1])
            if group > groups:
                raise ValueError(f"No group {group}: the pattern has {groups}")
            end = index + 2
            while end < len(text) and text[end].isdigit() and group * 10 + int(text[end]) <= groups:
                group = group * 10 + int(text[end])
                end += 1
            out.append(f"\\g<{group}>")
            index = end
        else:
            out.append("\\\\" if char == "\\" else char)
            index += 1
    return "".join(out)


def peer_principal(tls: ListenerTls, der: bytes | None) -> KafkaPrincipal | None:
    """The principal of a client certificate (None: the client sent none); raises
    ValueError when no mapping rule applies."""
    if der is None:
        return None
    return KafkaPrincipal("User", tls.mapper.name_for(rfc2253_subject(der)))

