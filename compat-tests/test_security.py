"""Secured scenarios (issue 19): every client family against a broker with TLS, mutual TLS,
SASL_SSL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and Kafka's StandardAuthorizer.

The suite starts the secured broker itself (it needs the test CA and the users), by default
kafkette, or the reference Apache Kafka 4.0 with ``--secured-broker kafka`` (that run checks
the scenarios themselves). The layout (listeners, users, ACLs) is in ``compat_lib/security.py``;
the launcher in ``compat_lib/secured_broker.py``. Test ids are ``test_<scenario>[<family>]``
and land in the same results file as the rest of the suite.

What each scenario asks is written so that any Kafka-compatible broker set up the same way
passes it and a broker that does not check (accepts any password, ignores ACLs, hands out
the wrong listener's endpoints) fails it with the client's own one-line error.
"""

from __future__ import annotations

import os
import re
import socket
import ssl
import struct
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from compat_lib import secured_broker
from compat_lib.family import guarded
from compat_lib.model import ClientError, Rec, Start
from compat_lib.registry import BY_NAME, FAMILIES
from compat_lib.security import (
    ALICE_PREFIX,
    ANON_PREFIX,
    BOB_GROUP_PREFIX,
    MTLS,
    MTLS_PREFIX,
    OTHER_TOPIC,
    PLAIN_USERS,
    PLAINTEXT,
    PRIVATE_TOPIC,
    SASL_SSL,
    SCRAM_USERS,
    SSL,
)

# What each client prints for Kafka's error codes (Java exception, kafka-python/aiokafka
# error class, librdkafka's text, the code name).
TOPIC_DENIED = re.compile(
    r"TOPIC_AUTHORIZATION_FAILED|TopicAuthorization|Topic authorization failed", re.IGNORECASE
)
WRITE_DENIED = re.compile(
    TOPIC_DENIED.pattern + r"|CLUSTER_AUTHORIZATION_FAILED|ClusterAuthorization"
    r"|Cluster authorization failed",
    re.IGNORECASE,
)
GROUP_DENIED = re.compile(
    r"GROUP_AUTHORIZATION_FAILED|GroupAuthorization|Group authorization failed", re.IGNORECASE
)
# SASL_AUTHENTICATION_FAILED (58): Java SaslAuthenticationException, kafka-python's
# SaslAuthenticationFailedError, aiokafka's "[Error 58] SaslAuthenticationFailed" (logged),
# librdkafka's "SASL authentication error: <the broker's message>".
LOGIN_REFUSED = re.compile(
    r"SASL_AUTHENTICATION_FAILED|SaslAuthentication|SASL authentication error|\[Error 58\]",
    re.IGNORECASE,
)

SCENARIOS = frozenset(
    {
        "tls_roundtrip",
        "mtls_principal",
        "sasl_plain",
        "sasl_scram_sha_256",
        "sasl_scram_sha_512",
        "sasl_wrong_password",
        "acl_produce_consume",
        "acl_group",
        "acl_admin",
    }
)
SCRAM_SCENARIOS = frozenset({"sasl_scram_sha_256", "sasl_scram_sha_512"})
# librdkafka before 2.6.1 puts the client nonce twice into its SCRAM client-final-message;
# Kafka 4.x compares the nonce strictly (RFC 5802) and refuses every such login
# (confluentinc/librdkafka#4895, edenhill/kcat#462). Debian's kcat 1.7.1 has librdkafka 2.0.2.
LIBRDKAFKA_SCRAM_FIXED = (2, 6, 1)


def not_for(family: str) -> set[str]:
    """Scenarios ``family`` cannot express: kcat has no admin API (as in the unsecured
    matrix), and no working SCRAM with a librdkafka older than 2.6.1. The Java 4.3 client
    runs the unsecured matrix only: its TLS and SASL are the same JDK and Kafka classes the
    3.9 client's runs here exercise, and the run stays inside CI's time budget."""
    if family == "java43":
        return set(SCENARIOS)
    if family != "kcat":
        return set()
    missing = {"acl_admin"}
    if not scram_works("kcat"):
        missing |= SCRAM_SCENARIOS
    return missing


def scram_works(family: str) -> bool:
    if family != "kcat":
        return True
    kcat = BY_NAME["kcat"]("127.0.0.1:0")
    if kcat.available() is not None:
        return True  # skipped anyway, with the reason
    return kcat.librdkafka_version() >= LIBRDKAFKA_SCRAM_FIXED


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "clients" not in metafunc.fixturenames:
        return
    scenario = metafunc.function.__name__.removeprefix("test_")
    wanted = metafunc.config.getoption("--families")
    names = [c.name for c in FAMILIES if scenario not in not_for(c.name)]
    if wanted:
        chosen = {n.strip() for n in wanted.split(",")}
        names = [n for n in names if n in chosen]
    if not names:
        skip = pytest.mark.skip(reason=f"no selected client family expresses {scenario}")
        metafunc.parametrize("family", [pytest.param("none", marks=skip)], indirect=True)
        return
    metafunc.parametrize("family", names, indirect=True, scope="session")


@pytest.fixture(scope="session")
def secured(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The secured broker of this run, started once; every test fails at once if it cannot."""
    kind = request.config.getoption("--secured-broker")
    workdir = tmp_path_factory.mktemp(f"secured-{kind}")
    try:
        broker = secured_broker.start(kind, workdir)
    except secured_broker.SecuredBrokerError as exc:
        pytest.fail(f"secured {kind} did not start: {exc}", pytrace=False)
    try:
        yield broker
    finally:
        code = broker.stop()
        worker = os.environ.get("PYTEST_XDIST_WORKER")  # each xdist worker keeps its own
        name = f"secured-{kind}-{worker}.log" if worker else f"secured-{kind}.log"
        keep = Path(__file__).resolve().parent / ".build" / name
        keep.parent.mkdir(parents=True, exist_ok=True)
        keep.write_bytes(broker.log_path.read_bytes())
        print(f"\nsecured {kind} stopped (exit code {code}); its log: {keep}")


_bases: dict[str, object] = {}


@pytest.fixture(scope="session")
def family(request: pytest.FixtureRequest, secured) -> str:
    """The family name; its plaintext driver is made once (the Java JVM is shared by every
    secured view of it), or the test skips with the reason the family cannot run here."""
    name = request.param
    if name not in _bases:
        _bases[name] = BY_NAME[name](secured.bootstrap(PLAINTEXT))
        request.addfinalizer(_bases[name].close)
    reason = _bases[name].available()
    if reason is not None:
        pytest.skip(f"{name} not available: {reason}")
    return name


class Clients:
    """Drivers of one family for the secured broker's listeners and users."""

    def __init__(self, base, broker: secured_broker.SecuredBroker) -> None:
        self.base, self.broker = base, broker

    def on(self, listener: str, mechanism: str | None = None, user: str | None = None,
           password: str | None = None):
        security = self.broker.security(listener, mechanism, user, password)
        return guarded(self.base.secured(self.broker.bootstrap(listener), security))

    def alice(self, mechanism: str = "PLAIN"):
        return self.on(SASL_SSL, mechanism, "alice")

    def bob(self, mechanism: str = "PLAIN"):
        return self.on(SASL_SSL, mechanism, "bob")


@pytest.fixture
def clients(family: str, secured) -> Clients:
    if not secured.alive():
        pytest.fail(f"secured broker exited mid-run: {secured.log_tail()}", pytrace=False)
    return Clients(_bases[family], secured)


def unique(prefix: str, family: str) -> str:
    return f"{prefix}{family}-{uuid.uuid4().hex[:8]}"


def records(n: int, tag: str) -> list[Rec]:
    return [Rec(f"k{i}".encode(), f"{tag} record {i}".encode(), partition=0) for i in range(n)]


def assert_read(sent: list[Rec], got, what: str) -> None:
    assert [(g.offset, g.key, g.value) for g in got] == [
        (i, r.key, r.value) for i, r in enumerate(sent)
    ], f"{what}: read {[(g.offset, g.value) for g in got][:10]}, expected {len(sent)} records"


def refused(call, pattern: re.Pattern, what: str) -> str:
    """Run ``call``; it must fail with the client's form of the error ``pattern`` names."""
    try:
        result = call()
    except ClientError as exc:
        assert pattern.search(str(exc)), f"{what}: failed, but not as expected: {exc}"
        return str(exc)
    raise AssertionError(f"{what}: allowed (returned {result!r:.200}), expected refusal")


def roundtrip(client, secured, topic: str, tag: str) -> None:
    secured_broker.admin_create_topic(secured, topic)
    sent = records(5, tag)
    client.produce(topic, sent)
    assert_read(sent, client.consume(topic, 0, Start.earliest(), len(sent)), f"{tag} consumer")


# ---- TLS ------------------------------------------------------------------------------------

def test_tls_roundtrip(clients, secured, family):
    """SSL listener, the test CA as truststore, no client certificate (User:ANONYMOUS): produce,
    consume and a consumer group, whose coordinator must be the SSL listener's endpoint."""
    client = clients.on(SSL)
    topic = unique(ANON_PREFIX, family)
    roundtrip(client, secured, topic, "tls")
    got = client.group_consume(unique(ANON_PREFIX, family), topic, 5)
    assert len(got) == 5, f"group consumer over TLS read {len(got)} of 5 records"


def test_mtls_principal(clients, secured, family):
    """Mutual TLS: the principal is the certificate's subject, which owns the sec-mtls- topics
    and nothing else (so it is neither ANONYMOUS nor a super user)."""
    client = clients.on(MTLS)
    roundtrip(client, secured, unique(MTLS_PREFIX, family), "mtls")
    other = unique(ANON_PREFIX, family)
    secured_broker.admin_create_topic(secured, other)
    refused(lambda: client.produce(other, records(1, "mtls")), TOPIC_DENIED,
            "mTLS client producing to an ANONYMOUS-only topic")


def test_mtls_without_certificate_refused(secured):
    """A TLS client without a certificate gets no Kafka answer on the MTLS listener (required
    client auth): the handshake fails, or (TLS 1.3) the connection is closed with an alert."""
    context = ssl.create_default_context(cafile=str(secured.tls.ca_pem))
    api_versions = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    with socket.create_connection(("127.0.0.1", secured.ports[MTLS]), timeout=10) as raw:
        try:
            with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                tls.sendall(struct.pack(">i", len(api_versions)) + api_versions)
                answer = tls.recv(4)
        except (ssl.SSLError, ConnectionError) as exc:
            answer = f"refused: {exc}"
    assert not isinstance(answer, bytes) or answer == b"", (
        f"a client without a certificate got an answer on the MTLS listener: {answer!r}"
    )


# ---- SASL -----------------------------------------------------------------------------------

def test_sasl_plain(clients, secured, family):
    roundtrip(clients.alice("PLAIN"), secured, unique(ALICE_PREFIX, family), "plain")


def test_sasl_scram_sha_256(clients, secured, family):
    roundtrip(clients.alice("SCRAM-SHA-256"), secured, unique(ALICE_PREFIX, family), "scram256")


def test_sasl_scram_sha_512(clients, secured, family):
    roundtrip(clients.alice("SCRAM-SHA-512"), secured, unique(ALICE_PREFIX, family), "scram512")


def test_sasl_wrong_password(clients, family):
    """A wrong password, a SCRAM login with the PLAIN password (the stores are separate) and an
    unknown SCRAM user are all refused with SASL_AUTHENTICATION_FAILED (the SCRAM ones only
    for clients whose SCRAM works at all: see LIBRDKAFKA_SCRAM_FIXED)."""
    attempts = {
        "PLAIN alice, wrong password": clients.on(SASL_SSL, "PLAIN", "alice", "not-her-password"),
    }
    if scram_works(family):
        attempts |= {
            "SCRAM-SHA-256 alice with her PLAIN password": clients.on(
                SASL_SSL, "SCRAM-SHA-256", "alice", PLAIN_USERS["alice"]
            ),
            "SCRAM-SHA-512 unknown user": clients.on(
                SASL_SSL, "SCRAM-SHA-512", "mallory", SCRAM_USERS["alice"]
            ),
        }
    for what, client in attempts.items():
        refused(client.check_login, LOGIN_REFUSED, what)


# ---- ACLs -----------------------------------------------------------------------------------

def test_acl_produce_consume(clients, secured, family):
    """alice writes her topic; bob may read it but not write it; a literal DENY for bob wins
    over his prefixed ALLOW; a PLAINTEXT client (User:ANONYMOUS) may not touch it; Metadata
    lists only the topics a principal may describe."""
    alice, bob = clients.alice(), clients.bob()
    anonymous = clients.on(PLAINTEXT)
    topic = unique(ALICE_PREFIX, family)
    secured_broker.admin_create_topic(secured, topic)
    sent = records(4, "acl")
    alice.produce(topic, sent)
    assert_read(sent, bob.consume(topic, 0, Start.earliest(), len(sent)), "bob (READ)")
    # bob may WRITE no topic at all, so an idempotent producer (kafka-python 3 and the Java
    # client by default) is refused earlier, at InitProducerId: IDEMPOTENT_WRITE on the
    # cluster is implied only by WRITE on some topic (KIP-679).
    refused(lambda: bob.produce(topic, records(1, "bob")), WRITE_DENIED, "bob producing")
    refused(lambda: anonymous.produce(topic, records(1, "anon")), TOPIC_DENIED,
            "PLAINTEXT (ANONYMOUS) producing to alice's topic")
    alice.produce(PRIVATE_TOPIC, records(1, "private"))
    refused(lambda: bob.consume(PRIVATE_TOPIC, 0, Start.earliest(), 1), TOPIC_DENIED,
            f"bob reading {PRIVATE_TOPIC} (literal DENY READ)")
    seen = bob.list_topics()
    assert topic in seen and OTHER_TOPIC not in seen, (
        f"bob's Metadata must list {topic} (READ) and not {OTHER_TOPIC} (no ACL): "
        f"{sorted(t for t in seen if t.startswith('sec-'))[:20]}"
    )


def test_acl_group(clients, secured, family):
    """alice may consume in her sec-alice- groups (and commits); bob has no group ACL:
    GROUP_AUTHORIZATION_FAILED."""
    alice, bob = clients.alice(), clients.bob()
    topic = unique(ALICE_PREFIX, family)
    secured_broker.admin_create_topic(secured, topic)
    sent = records(6, "group")
    alice.produce(topic, sent)
    group = unique(ALICE_PREFIX, family)
    assert_read(sent[:3], alice.group_consume(group, topic, 3), "alice's group consumer")
    again = alice.group_consume(group, topic, 3)
    assert [g.offset for g in again] == [3, 4, 5], (
        f"alice's restarted group consumer read offsets {[g.offset for g in again]}, "
        "expected to resume at the committed offset 3"
    )
    refused(lambda: bob.group_consume(unique(BOB_GROUP_PREFIX, family), topic, 1),
            GROUP_DENIED, "bob consuming in a group he has no ACL for")


def test_acl_admin(clients, secured, family):
    """alice may create topics under her prefix and describe their configs; she may not create
    elsewhere, delete, or alter configs (no DELETE / ALTER_CONFIGS ACL)."""
    alice = clients.alice()
    mine = unique(ALICE_PREFIX, family)
    alice.create_topic(mine, 1)
    configs = alice.describe_configs(mine)
    assert "retention.ms" in configs, f"DescribeConfigs as alice lacks retention.ms: {configs}"
    refused(lambda: alice.create_topic(unique("sec-other-", family), 1), TOPIC_DENIED,
            "alice creating a topic outside her prefix")
    refused(lambda: alice.alter_configs(mine, {"retention.ms": "3600000"}), TOPIC_DENIED,
            "alice altering configs (no ALTER_CONFIGS)")
    refused(lambda: alice.delete_topic(mine), TOPIC_DENIED, "alice deleting (no DELETE)")
    deadline = time.monotonic() + 10
    while mine not in (seen := alice.list_topics()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert mine in seen and OTHER_TOPIC not in seen, (
        f"alice's Metadata must list {mine} and not {OTHER_TOPIC}: "
        f"{sorted(t for t in seen if t.startswith('sec-'))[:20]}"
    )


# ---- Kafka's own tools ----------------------------------------------------------------------

TOOL_TIMEOUT_S = 120


def kafka_tool(secured, tool: str, *args: str, succeed: bool = True) -> str:
    """Run a ``bin/`` tool of the reference Kafka 4.0 against the secured broker as the super
    user (``--command-config`` with the Java client's SASL_SSL settings); its stdout (its
    stderr too when ``succeed`` is False: then it must fail)."""
    home = secured_broker.kafka_home()
    if isinstance(home, str):
        pytest.skip(home)
    config = secured.workdir / "admin.properties"
    config.write_text(
        "".join(f"{k}={v}\n" for k, v in secured.admin_security().java_properties().items())
    )
    command = [str(home / "bin" / tool), "--bootstrap-server", secured.bootstrap(SASL_SSL),
               "--command-config", str(config), *args]
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m", "LOG_DIR": str(secured.workdir / "tools")}
    done = subprocess.run(command, capture_output=True, text=True, env=env,
                          timeout=TOOL_TIMEOUT_S, check=False)
    if not succeed:
        assert done.returncode != 0, f"{tool} {' '.join(args)} succeeded: {done.stdout.strip()}"
        return done.stdout + done.stderr
    assert done.returncode == 0, (
        f"{tool} {' '.join(args)} exited {done.returncode}: "
        f"{(done.stderr.strip() or done.stdout.strip())[-500:]}"
    )
    return done.stdout


def confluent(secured, listener: str, mechanism: str | None = None, user: str | None = None,
              password: str | None = None):
    """A confluent-kafka driver (librdkafka >= 2.6.1: working SCRAM) for the tool tests."""
    base = BY_NAME["confluent-kafka"](secured.bootstrap(PLAINTEXT))
    if base.available() is not None:
        pytest.skip(f"confluent-kafka not available: {base.available()}")
    security = secured.security(listener, mechanism, user, password)
    return guarded(base.secured(secured.bootstrap(listener), security))


def eventually_refused(call, pattern: re.Pattern, what: str, timeout_s: float = 15.0) -> None:
    """``refused``, allowing the broker ``timeout_s`` to apply an ACL or credential change."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            refused(call, pattern, what)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_kafka_configs_scram_users(secured):
    """kafka-configs.sh adds, describes and deletes SCRAM credentials; logins follow. Both
    mechanisms in one --add-config put the user twice into one AlterUserScramCredentials
    request, which Kafka 4.0 refuses (DUPLICATE_RESOURCE): one mechanism per call."""
    user, password = f"carol-{uuid.uuid4().hex[:6]}", "carol-secret"
    entity = ["--entity-type", "users", "--entity-name", user]
    both = kafka_tool(secured, "kafka-configs.sh", "--alter", *entity, "--add-config",
                      f"SCRAM-SHA-256=[iterations=8192,password={password}],"
                      f"SCRAM-SHA-512=[password={password}]", succeed=False)
    assert "DuplicateResourceException" in both, f"both mechanisms at once: {both[-500:]}"
    kafka_tool(secured, "kafka-configs.sh", "--alter", *entity, "--add-config",
               f"SCRAM-SHA-256=[iterations=8192,password={password}]")
    kafka_tool(secured, "kafka-configs.sh", "--alter", *entity, "--add-config",
               f"SCRAM-SHA-512=[password={password}]")
    described = kafka_tool(secured, "kafka-configs.sh", "--describe", *entity)
    assert "SCRAM-SHA-256=iterations=8192" in described and (
        "SCRAM-SHA-512=iterations=4096" in described
    ), f"kafka-configs.sh --describe: {described.strip()}"
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        confluent(secured, SASL_SSL, mechanism, user, password).check_login()
    kafka_tool(secured, "kafka-configs.sh", "--alter", *entity, "--delete-config",
               "SCRAM-SHA-512")
    described = kafka_tool(secured, "kafka-configs.sh", "--describe", *entity)
    assert "SCRAM-SHA-512" not in described and "SCRAM-SHA-256" in described, (
        f"after --delete-config SCRAM-SHA-512, kafka-configs.sh --describe: {described.strip()}"
    )
    eventually_refused(confluent(secured, SASL_SSL, "SCRAM-SHA-512", user, password).check_login,
                       LOGIN_REFUSED, "SCRAM-SHA-512 login after its credential was deleted")
    confluent(secured, SASL_SSL, "SCRAM-SHA-256", user, password).check_login()


def test_kafka_acls_tool(secured):
    """kafka-acls.sh adds, lists and removes a prefixed ACL; a client's rights follow."""
    user, password = f"dave-{uuid.uuid4().hex[:6]}", "dave-secret"
    admin = secured_broker.admin_client(secured)
    secured_broker.add_scram_users(admin, {user: password})
    prefix = f"sec-{user}-"
    topic = prefix + "t"
    secured_broker.create_topic(admin, topic)
    acl = ["--allow-principal", f"User:{user}", "--operation", "Write", "--operation",
           "Describe", "--topic", prefix, "--resource-pattern-type", "prefixed"]
    kafka_tool(secured, "kafka-acls.sh", "--add", *acl)
    listed = kafka_tool(secured, "kafka-acls.sh", "--list", "--topic", prefix,
                        "--resource-pattern-type", "prefixed")
    assert f"User:{user}" in listed and "WRITE" in listed and "DESCRIBE" in listed, (
        f"kafka-acls.sh --list: {listed.strip()}"
    )
    client = confluent(secured, SASL_SSL, "SCRAM-SHA-512", user, password)
    deadline = time.monotonic() + 15
    while True:  # the broker applies a new ACL within moments, not necessarily at once
        try:
            client.produce(topic, records(1, "dave"))
            break
        except ClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    kafka_tool(secured, "kafka-acls.sh", "--remove", "--force", *acl)
    listed = kafka_tool(secured, "kafka-acls.sh", "--list", "--topic", prefix,
                        "--resource-pattern-type", "prefixed")
    assert f"User:{user}" not in listed, f"kafka-acls.sh --list after --remove: {listed.strip()}"
    eventually_refused(lambda: client.produce(topic, records(1, "dave")), WRITE_DENIED,
                       "producing after the ACL was removed")
