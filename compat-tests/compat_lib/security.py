"""What a secured broker of the suite looks like, and how each client family is told to use it.

One layout serves both brokers the secured scenarios run against (the reference Apache Kafka 4.0
and kafkette), written with Kafka's own config names so the very same lines configure both:

- listeners ``PLAINTEXT`` (principal ``User:ANONYMOUS``), ``SSL`` (server certificate only,
  principal ``User:ANONYMOUS``), ``MTLS`` (an SSL listener with ``ssl.client.auth=required``:
  the principal is the client certificate's subject, ``User:CN=client,OU=test,O=kafkette``)
  and ``SASL_SSL`` (PLAIN users from the listener's JAAS ``user_<name>="<password>"`` options,
  SCRAM-SHA-256/512 users from the broker's credential store);
- ``StandardAuthorizer`` with ``super.users=User:admin``, ``allow.everyone.if.no.acl.found``
  left at its default (false) and the ACLs of :data:`ACLS`.

:class:`ClientSecurity` is a client's side of it (Kafka's client config names) and translates
itself into each client's spelling; docs/security.md shows the same settings per client.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

# Listener names (upper case, as in ``listeners``) and their security protocols.
PLAINTEXT, SSL, MTLS, SASL_SSL = "PLAINTEXT", "SSL", "MTLS", "SASL_SSL"
LISTENER_PROTOCOLS = {PLAINTEXT: "PLAINTEXT", SSL: "SSL", MTLS: "SSL", SASL_SSL: "SASL_SSL"}

ADMIN = ("admin", "admin-secret")  # super user: the suite's set-up and the broker itself
# PLAIN users (JAAS ``user_<name>`` options on the SASL_SSL listener).
PLAIN_USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
# SCRAM users: other passwords than PLAIN's, so that a SCRAM login that succeeds proves the
# broker checked the SCRAM store, not the JAAS options.
SCRAM_USERS = {"alice": "alice-scram-secret", "bob": "bob-scram-secret"}
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SCRAM_ITERATIONS = 8192
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)

TLS_PRINCIPAL = "User:CN=client,OU=test,O=kafkette"

# Topic and group name prefixes the ACLs are written for; scenarios name everything under them.
ANON_PREFIX = "sec-anon-"
MTLS_PREFIX = "sec-mtls-"
ALICE_PREFIX = "sec-alice-"
BOB_GROUP_PREFIX = "sec-bob-"
PRIVATE_TOPIC = "sec-alice-private"  # under alice's prefix, with a literal DENY for bob
OTHER_TOPIC = "sec-other-topic"  # created by admin; only super users may see it


@dataclass(frozen=True)
class Acl:
    """One ACL binding, Kafka's way: (resource type, pattern type, name) x (principal, host,
    operation, permission)."""

    resource: str  # TOPIC, GROUP, CLUSTER
    pattern: str  # LITERAL, PREFIXED
    name: str
    principal: str
    operation: str  # READ, WRITE, CREATE, DESCRIBE_CONFIGS, ALL, ...
    permission: str = "ALLOW"
    host: str = "*"


# The confluent-kafka driver's assign()-only consumers still carry a group.id (librdkafka
# needs one) and look up its coordinator: every principal may use that group.
UNUSED_GROUP = "compat-unused"

ACLS: tuple[Acl, ...] = (
    Acl("GROUP", "LITERAL", UNUSED_GROUP, "User:*", "READ"),
    # Anonymous clients (PLAINTEXT, SSL without a certificate) own the sec-anon- topics/groups.
    Acl("TOPIC", "PREFIXED", ANON_PREFIX, "User:ANONYMOUS", "ALL"),
    Acl("GROUP", "PREFIXED", ANON_PREFIX, "User:ANONYMOUS", "READ"),
    # The mutual-TLS client, by its certificate's subject.
    Acl("TOPIC", "PREFIXED", MTLS_PREFIX, TLS_PRINCIPAL, "ALL"),
    Acl("GROUP", "PREFIXED", MTLS_PREFIX, TLS_PRINCIPAL, "READ"),
    # alice: write, read, create and describe configs of her topics; no DELETE, no ALTER_CONFIGS.
    *(
        Acl("TOPIC", "PREFIXED", ALICE_PREFIX, "User:alice", op)
        for op in ("WRITE", "READ", "CREATE", "DESCRIBE_CONFIGS")
    ),
    Acl("GROUP", "PREFIXED", ALICE_PREFIX, "User:alice", "READ"),
    # bob may read alice's topics (READ implies DESCRIBE) but not write them, has no group,
    # and a literal DENY on one of them wins over the prefixed ALLOW.
    Acl("TOPIC", "PREFIXED", ALICE_PREFIX, "User:bob", "READ"),
    Acl("TOPIC", "LITERAL", PRIVATE_TOPIC, "User:bob", "READ", permission="DENY"),
)


@dataclass(frozen=True)
class TlsFiles:
    """The test CA's files the clients use (a subset of ``kafkette.testing_tls.TlsMaterial``)."""

    ca_pem: Path
    client_cert_pem: Path  # client certificate + CA
    client_key_pem: Path  # unencrypted
    client_p12: Path  # key + chain, for the Java client
    password: str

    @staticmethod
    def of(material) -> TlsFiles:  # a kafkette.testing_tls.TlsMaterial
        return TlsFiles(
            material.ca_pem,
            material.client_cert_pem,
            material.client_key_pem,
            material.client_p12,
            material.password,
        )


@dataclass(frozen=True)
class ClientSecurity:
    """A client's security settings in Kafka's terms: ``security.protocol``, the CA it trusts,
    its own certificate (mutual TLS) and its SASL mechanism, user name and password."""

    protocol: str = "PLAINTEXT"
    tls: TlsFiles | None = None
    client_cert: bool = False
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    def with_password(self, password: str) -> ClientSecurity:
        return replace(self, password=password)

    def describe(self) -> str:
        parts = [self.protocol]
        if self.client_cert:
            parts.append("client certificate")
        if self.uses_sasl:
            parts.append(f"{self.mechanism} as {self.username}")
        return ", ".join(parts)

    # --- each client's spelling -------------------------------------------------------------
    def java_properties(self) -> dict[str, str]:
        """The Java client's properties (also what kafka-*.sh tools take in --command-config)."""
        props = {"security.protocol": self.protocol}
        if self.uses_tls and self.tls is not None:
            props |= {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(self.tls.ca_pem),
            }
            if self.client_cert:
                props |= {
                    "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": str(self.tls.client_p12),
                    "ssl.keystore.password": self.tls.password,
                }
        if self.uses_sasl:
            module = (
                "org.apache.kafka.common.security.plain.PlainLoginModule"
                if self.mechanism == "PLAIN"
                else "org.apache.kafka.common.security.scram.ScramLoginModule"
            )
            props["sasl.mechanism"] = str(self.mechanism)
            props["sasl.jaas.config"] = (
                f'{module} required username="{self.username}" password="{self.password}";'
            )
        return props

    def librdkafka(self) -> dict[str, str]:
        """confluent-kafka's and kcat's (``-X``) settings."""
        conf = {"security.protocol": self.protocol}
        if self.uses_tls and self.tls is not None:
            conf["ssl.ca.location"] = str(self.tls.ca_pem)
            if self.client_cert:
                conf["ssl.certificate.location"] = str(self.tls.client_cert_pem)
                conf["ssl.key.location"] = str(self.tls.client_key_pem)
        if self.uses_sasl:
            conf |= {
                "sasl.mechanism": str(self.mechanism),
                "sasl.username": str(self.username),
                "sasl.password": str(self.password),
            }
        return conf

    def kafka_python(self) -> dict[str, object]:
        """kafka-python's keyword arguments."""
        conf: dict[str, object] = {"security_protocol": self.protocol}
        if self.uses_tls and self.tls is not None:
            conf["ssl_cafile"] = str(self.tls.ca_pem)
            if self.client_cert:
                conf["ssl_certfile"] = str(self.tls.client_cert_pem)
                conf["ssl_keyfile"] = str(self.tls.client_key_pem)
        if self.uses_sasl:
            conf |= {
                "sasl_mechanism": self.mechanism,
                "sasl_plain_username": self.username,
                "sasl_plain_password": self.password,
            }
        return conf

    def aiokafka(self) -> dict[str, object]:
        """aiokafka's keyword arguments (TLS through an ``ssl.SSLContext``)."""
        conf: dict[str, object] = {"security_protocol": self.protocol}
        if self.uses_tls and self.tls is not None:
            from aiokafka.helpers import create_ssl_context

            certs = {}
            if self.client_cert:
                certs = {
                    "certfile": str(self.tls.client_cert_pem),
                    "keyfile": str(self.tls.client_key_pem),
                }
            conf["ssl_context"] = create_ssl_context(cafile=str(self.tls.ca_pem), **certs)
        if self.uses_sasl:
            conf |= {
                "sasl_mechanism": self.mechanism,
                "sasl_plain_username": self.username,
                "sasl_plain_password": self.password,
            }
        return conf


def plain_jaas(users: dict[str, str], login: tuple[str, str] = ADMIN) -> str:
    """A broker listener's PLAIN JAAS config: its own login (inter-broker / controller client
    side) and one ``user_<name>="<password>"`` option per user it accepts."""
    options = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{login[0]}" password="{login[1]}" {options};'
    )


SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def security_properties(ports: dict[str, int], tls_dir: Path, password: str) -> dict[str, str]:
    """The broker lines both brokers share (Kafka's names): listeners, TLS, SASL, authorizer.
    ``tls_dir`` holds ``kafkette.testing_tls.make_tls_material``'s files."""
    listeners = ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
    protocol_map = ",".join(f"{name}:{LISTENER_PROTOCOLS[name]}" for name in ports)
    return {
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": protocol_map,
        "inter.broker.listener.name": SASL_SSL,
        # TLS: one PKCS12 keystore for every TLS listener, the CA as a PEM truststore.
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(tls_dir / "broker.p12"),
        "ssl.keystore.password": password,
        "ssl.key.password": password,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls_dir / "ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required",
        # SASL on the SASL_SSL listener.
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(PLAIN_USERS),
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
        # Authorization.
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{ADMIN[0]}",
    }
