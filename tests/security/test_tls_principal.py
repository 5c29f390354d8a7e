"""The principal of a client certificate: its subject as Java writes RFC 2253, then
``ssl.principal.mapping.rules`` (Kafka's SslPrincipalMapper), without a network."""

from __future__ import annotations

import datetime

import pytest

from kafkette.broker.security.tls import PrincipalMapper, TlsConfigError, rfc2253_subject


def certificate_der(*attributes: tuple[object, str]) -> bytes:
    """A self-signed certificate whose subject has ``attributes`` in DER order."""
    from cryptography import x509

    name = x509.Name([x509.NameAttribute(oid, value) for oid, value in attributes])  # type: ignore[arg-type]
    return self_signed_der(name)


def self_signed_der(name: object) -> bytes:
    """A self-signed certificate (DER) whose subject is the ``x509.Name`` ``name``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)  # type: ignore[arg-type]
        .issuer_name(name)  # type: ignore[arg-type]
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.DER)


def test_subject_is_most_specific_first_with_javas_escapes() -> None:
    from cryptography.x509.oid import NameOID

    der = certificate_der(
        (NameOID.COUNTRY_NAME, "FR"),
        (NameOID.ORGANIZATION_NAME, "Acme, Inc."),
        (NameOID.ORGANIZATIONAL_UNIT_NAME, "a+b"),
        (NameOID.COMMON_NAME, "alice"),
    )
    assert rfc2253_subject(der) == r"CN=alice,OU=a\+b,O=Acme\, Inc.,C=FR"


def test_attributes_without_an_rfc2253_keyword_are_oid_and_der_hex() -> None:
    from cryptography.x509.oid import NameOID

    # Java: EMAILADDRESS has no RFC 2253 keyword: 1.2.840.113549.1.9.1=#<IA5String DER>.
    der = certificate_der((NameOID.EMAIL_ADDRESS, "a@b"), (NameOID.COMMON_NAME, "bob"))
    assert rfc2253_subject(der) == "CN=bob,1.2.840.113549.1.9.1=#1603614062"


# Kafka's documented examples of ssl.principal.mapping.rules.
RULES = (
    "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,"
    "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
    "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U,"
    "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,"
    "DEFAULT"
)


@pytest.mark.parametrize(
    ("subject", "principal"),
    [
        ("CN=serviceuser,OU=ServiceUsers,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "serviceuser"),
        ("CN=adminUser,OU=Admin,O=Unknown,L=Unknown,ST=Unknown,C=Unknown", "adminuser@admin"),
        ("cn=hdfs,ou=ServiceUsers,dc=example,dc=com", "HDFS@SERVICEUSERS"),
        ("OU=x,CN=sub.name,O=y", "SUB.NAME"),
        ("OU=no-common-name", "OU=no-common-name"),
    ],
)
def test_mapping_rules_as_kafka_documents_them(subject: str, principal: str) -> None:
    assert PrincipalMapper.from_rules(RULES).name_for(subject) == principal


def test_default_rule_keeps_the_subject_and_no_match_is_an_error() -> None:
    assert PrincipalMapper.from_rules("DEFAULT").name_for("CN=a,O=b") == "CN=a,O=b"
    only = PrincipalMapper.from_rules("RULE:^CN=(.*?),O=b$/$1/")
    assert only.name_for("CN=a,O=b") == "a"
    with pytest.raises(ValueError, match="No rules apply to CN=a,O=c"):
        only.name_for("CN=a,O=c")
    with pytest.raises(TlsConfigError, match="Invalid rule"):
        PrincipalMapper.from_rules("RULE:^CN=(.*)$")


def test_every_rfc2253_special_is_escaped_as_java_does() -> None:
    """Java's X500Principal.getName(): `,=+<>#;"\\` anywhere, every leading and trailing
    space, NUL as \\00."""
    from cryptography.x509.oid import NameOID

    def subject(common_name: str) -> str:
        return rfc2253_subject(certificate_der((NameOID.COMMON_NAME, common_name)))

    assert subject("a=b#c") == r"CN=a\=b\#c"
    assert subject("  two") == r"CN=\ \ two"
    assert subject("end  ") == r"CN=end\ \ "
    assert subject("in side") == "CN=in side"
    assert subject('<x>;"y"\\') == r'CN=\<x\>\;\"y\"\\'
    assert subject("nul\0") == r"CN=nul\00"


def test_non_utf8_string_types_keep_their_der() -> None:
    """A BMPString value of a keyword attribute reads as text; the #hex of an attribute
    without a keyword is its DER as in the certificate (not re-encoded as UTF-8)."""
    from cryptography.x509 import NameAttribute
    from cryptography.x509.name import _ASN1Type
    from cryptography.x509.oid import NameOID, ObjectIdentifier

    der = certificate_der(
        (NameOID.ORGANIZATION_NAME, "x"),
        (NameOID.COMMON_NAME, "é"),
    )
    assert rfc2253_subject(der) == "CN=é,O=x"
    from cryptography import x509

    name = x509.Name(
        [
            NameAttribute(NameOID.COMMON_NAME, "bé", _ASN1Type.BMPString),
            NameAttribute(ObjectIdentifier("2.5.4.45"), "zé", _ASN1Type.BMPString),
        ]
    )
    subject = rfc2253_subject(self_signed_der(name))
    # 2.5.4.45 (x500UniqueIdentifier) has no RFC 2253 keyword: BMPString tag 0x1e, UTF-16BE.
    assert subject == "2.5.4.45=#1e04007a00e9,CN=bé"


@pytest.mark.parametrize(
    "rule",
    [
        "RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$4/",  # a group the pattern lacks
        "RULE:^CN=(.*)$/$1$/",  # $ naming no group
    ],
)
def test_a_replacement_naming_a_missing_group_is_refused(rule: str) -> None:
    """Java would throw on every connection the rule matches; refused at start here."""
    with pytest.raises(TlsConfigError, match="Invalid rule"):
        PrincipalMapper.from_rules(rule)


def test_group_numbers_read_as_java_reads_them() -> None:
    # Three groups: $12 is group 1 then "2"; $3 is group 3; $0 the whole match.
    mapper = PrincipalMapper.from_rules("RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$12-$3-$0/")
    assert mapper.name_for("CN=a,OU=b,O=c") == "a2-c-CN=a,OU=b,O=c"
