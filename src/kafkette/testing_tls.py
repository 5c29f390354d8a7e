"""A throwaway certificate authority and the files a TLS broker and its clients need.

Tests of TLS listeners (kafkette's own and anyone's who tests a client against a
secured dev broker) need a CA, a broker certificate for the host names the clients
dial, and a client certificate for mutual TLS, in the formats Kafka's configs take:
PEM files and PKCS12 keystores. ``make_tls_material`` writes them all into one
directory with ``cryptography`` (a test dependency; imported only here).
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PASSWORD = "kafkette-test"


@dataclass(frozen=True)
class TlsMaterial:
    """Paths of the generated files; every keystore and private key uses ``password``."""

    directory: Path
    password: str
    ca_pem: Path  # the CA certificate: the truststore of brokers and clients
    ca_p12: Path  # the same as a PKCS12 truststore (certificate only)
    broker_cert_pem: Path  # broker certificate followed by the CA's
    broker_key_pem: Path  # the broker's private key, unencrypted PEM
    broker_keystore_pem: Path  # key then certificate chain in one PEM (ssl.keystore.type=PEM)
    broker_p12: Path  # key and chain as PKCS12 (ssl.keystore.type=PKCS12)
    client_cert_pem: Path  # subject CN=client,OU=test,O=kafkette
    client_key_pem: Path
    client_keystore_pem: Path
    client_p12: Path
    # The principal name Kafka derives (RFC 2253, most specific first).
    client_subject: str


def make_tls_material(
    directory: Path | str,
    hostnames: tuple[str, ...] = ("localhost", "127.0.0.1"),
    password: str = DEFAULT_PASSWORD,
) -> TlsMaterial:
    """Write a CA, a broker certificate valid for ``hostnames`` and a client certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)

    def name(**parts: str) -> x509.Name:
        oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
                "O": NameOID.ORGANIZATION_NAME}
        return x509.Name([x509.NameAttribute(oids[k], v) for k, v in parts.items()])

    def certificate(subject, key, issuer, issuer_key, *, ca: bool, sans=()):  # type: ignore[no-untyped-def]
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if sans:
            entries: list[x509.GeneralName] = []
            for host in sans:
                try:
                    entries.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    entries.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(entries), critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    def pem_cert(cert) -> bytes:  # type: ignore[no-untyped-def]
        return cert.public_bytes(serialization.Encoding.PEM)

    def pem_key(key, encrypted: bool = False) -> bytes:  # type: ignore[no-untyped-def]
        encryption = (
            serialization.BestAvailableEncryption(password.encode())
            if encrypted
            else serialization.NoEncryption()
        )
        return key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(O="kafkette", CN="kafkette test CA")
    ca_cert = certificate(ca_name, ca_key, ca_name, ca_key, ca=True)
    files: dict[str, Path] = {}

    def write(file_name: str, data: bytes) -> Path:
        path = out / file_name
        path.write_bytes(data)
        files[file_name] = path
        return path

    write("ca.pem", pem_cert(ca_cert))
    write(
        "ca.p12",
        pkcs12.serialize_key_and_certificates(
            b"ca", None, None, [ca_cert], serialization.BestAvailableEncryption(password.encode())
        ),
    )
    subjects = {
        "broker": name(O="kafkette", CN=hostnames[0]),
        "client": name(O="kafkette", OU="test", CN="client"),
    }
    for role, subject in subjects.items():
        key = ec.generate_private_key(ec.SECP256R1())
        cert = certificate(
            subject, key, ca_name, ca_key, ca=False, sans=hostnames if role == "broker" else ()
        )
        chain = pem_cert(cert) + pem_cert(ca_cert)
        write(f"{role}.pem", chain)
        write(f"{role}.key", pem_key(key))
        write(f"{role}-keystore.pem", pem_key(key, encrypted=True) + chain)
        write(
            f"{role}.p12",
            pkcs12.serialize_key_and_certificates(
                role.encode(), key, cert, [ca_cert],
                serialization.BestAvailableEncryption(password.encode()),
            ),
        )
    return TlsMaterial(
        directory=out,
        password=password,
        ca_pem=files["ca.pem"],
        ca_p12=files["ca.p12"],
        broker_cert_pem=files["broker.pem"],
        broker_key_pem=files["broker.key"],
        broker_keystore_pem=files["broker-keystore.pem"],
        broker_p12=files["broker.p12"],
        client_cert_pem=files["client.pem"],
        client_key_pem=files["client.key"],
        client_keystore_pem=files["client-keystore.pem"],
        client_p12=files["client.p12"],
        client_subject="CN=client,OU=test,O=kafkette",
    )
