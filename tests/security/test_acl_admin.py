"""CreateAcls, DescribeAcls, DeleteAcls with real clients: confluent-kafka's AdminClient
and the reference distribution's ``kafka-acls.sh``; ACLs surviving a restart.

The broker's principal here is User:ANONYMOUS (PLAINTEXT), made a super user so it may
manage ACLs whatever they say.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    KafkaAdminClient,
)
from kafka.errors import SecurityDisabledError

from kafkette.broker.embedded import EmbeddedBroker
from tests.security import acl_support as support

TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
LITERAL = ResourcePatternType.LITERAL
PREFIXED = ResourcePatternType.PREFIXED
ALLOW = AclPermissionType.ALLOW
DENY = AclPermissionType.DENY


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory):
    broker = support.start_broker(
        tmp_path_factory.mktemp("acl-admin"), super_users="User:ANONYMOUS;User:admin"
    )
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def test_without_an_authorizer_the_acl_apis_answer_security_disabled(tmp_path: Path) -> None:
    broker = EmbeddedBroker.start(data_dir=tmp_path, configs={})
    try:
        client = support.admin(broker.bootstrap)
        # librdkafka drops DescribeAcls' error (it answers an empty list); kafka-python
        # raises it, as the Java client does.
        legacy = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            with pytest.raises(SecurityDisabledError, match="No Authorizer is configured"):
                legacy.describe_acls(support.kafka_python_everything())
        finally:
            legacy.close()
        with pytest.raises(KafkaException) as created:
            support.create_acls(client, [support.binding(TOPIC, "t", AclOperation.READ)])
        assert support.error_name(created.value) == "SECURITY_DISABLED"
    finally:
        broker.stop(timeout=30)


def test_create_describe_and_delete_with_kafkas_filters(secured: EmbeddedBroker) -> None:
    client = support.admin(secured.bootstrap)
    base = support.name("orders")
    alice_reads = support.binding(TOPIC, base, AclOperation.READ, principal="User:alice")
    bob_writes_prefix = support.binding(
        TOPIC, base[:8], AclOperation.WRITE, principal="User:bob", pattern=PREFIXED
    )
    anyone_describes_all = support.binding(
        TOPIC, "*", AclOperation.DESCRIBE, principal="User:*"
    )
    alice_denied_group = support.binding(
        GROUP, base, AclOperation.READ, DENY, principal="User:alice", host="10.0.0.1"
    )
    created = [alice_reads, bob_writes_prefix, anyone_describes_all, alice_denied_group]
    support.create_acls(client, created)
    support.create_acls(client, [alice_reads])  # again: no change, no error

    assert set(created) <= support.describe_acls(client)
    # LITERAL/PREFIXED filters select that pattern type and exact name only.
    literal = AclBindingFilter(
        TOPIC, base, LITERAL, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert support.describe_acls(client, literal) == {alice_reads}
    # MATCH: every binding that covers the resource named, wildcard and prefixes included.
    match = AclBindingFilter(
        TOPIC, base, ResourcePatternType.MATCH, None, None, AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert support.describe_acls(client, match) == {
        alice_reads, bob_writes_prefix, anyone_describes_all
    }
    by_principal = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
        AclOperation.ANY, AclPermissionType.ANY,
    )
    assert support.describe_acls(client, by_principal) == {alice_reads, alice_denied_group}
    by_host_and_permission = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, "10.0.0.1",
        AclOperation.ANY, DENY,
    )
    assert support.describe_acls(client, by_host_and_permission) == {alice_denied_group}

    # DeleteAcls answers what it removed; the rest stays.
    writes = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
        AclOperation.WRITE, AclPermissionType.ANY,
    )
    assert support.delete_acls(client, writes) == [bob_writes_prefix]
    remaining = support.describe_acls(client)
    assert bob_writes_prefix not in remaining
    assert {alice_reads, anyone_describes_all, alice_denied_group} <= remaining
    assert support.delete_acls(client, writes) == []
    for binding in (alice_reads, anyone_describes_all, alice_denied_group):
        support.delete_acls(client, AclBindingFilter(
            binding.restype, binding.name, binding.resource_pattern_type, binding.principal,
            binding.host, binding.operation, binding.permission_type,
        ))
    assert not set(created) & support.describe_acls(client)


def test_bindings_kafka_refuses_get_invalid_request(secured: EmbeddedBroker) -> None:
    client = support.admin(secured.bootstrap)
    good = support.binding(TOPIC, support.name("fine"), AclOperation.ALTER)
    wrong_cluster = AclBinding(
        ResourceType.BROKER, "my-cluster", LITERAL, "User:x", "*", AclOperation.ALTER, ALLOW
    )
    no_colon = support.binding(TOPIC, "t", AclOperation.READ, principal="alice")
    futures = client.create_acls([good, wrong_cluster, no_colon], request_timeout=20)
    futures[good].result(timeout=20)
    for bad, message in ((wrong_cluster, "kafka-cluster"), (no_colon, "principal")):
        with pytest.raises(KafkaException) as refused:
            futures[bad].result(timeout=20)
        assert support.error_name(refused.value) == "INVALID_REQUEST"
        assert message in str(refused.value)
    assert good in support.describe_acls(client)
    assert no_colon not in support.describe_acls(client)


def test_acls_survive_a_restart(tmp_path: Path) -> None:
    binding = support.binding(
        TOPIC, "kept-", AclOperation.READ, DENY, principal="User:eve", pattern=PREFIXED
    )
    broker = support.start_broker(tmp_path, super_users="User:ANONYMOUS")
    try:
        support.create_acls(support.admin(broker.bootstrap), [binding])
    finally:
        broker.stop(timeout=30)
    assert (tmp_path / "acls.json").exists()
    broker = support.start_broker(tmp_path, super_users="User:ANONYMOUS")
    try:
        assert support.describe_acls(support.admin(broker.bootstrap)) == {binding}
    finally:
        broker.stop(timeout=30)


def test_a_corrupt_acl_file_stops_the_start(tmp_path: Path) -> None:
    """Starting with fewer ACLs than were acknowledged could open access a DENY closed."""
    (tmp_path / "acls.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(Exception, match="cannot read ACLs"):
        support.start_broker(tmp_path)


def test_kafka_acls_sh_adds_lists_and_removes(secured: EmbeddedBroker, kafka_ref) -> None:
    """The reference distribution's kafka-acls.sh against kafkette. It skips only where
    the machine really lacks Java or the reference Kafka (it runs on the dev machine
    and in CI, where both are installed)."""
    script = kafka_ref
    if shutil.which("java") is None:
        pytest.skip("kafka-acls.sh needs Java (not on PATH)")
    if script is None:
        pytest.skip("kafka-acls.sh needs the reference Kafka (../shared/reference-kafka/"
                    "kafka-ref or KAFKETTE_KAFKA_REF)")
    topic = support.name("acls-sh")

    def acls(*args: str) -> str:
        done = subprocess.run(
            [str(script), "bin", "kafka-acls.sh", "--bootstrap-server", secured.bootstrap,
             *args],
            capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    acls("--add", "--allow-principal", "User:alice", "--operation", "Read",
         "--operation", "Describe", "--topic", topic, "--group", "g-" + topic)
    listed = acls("--list", "--topic", topic)
    assert "principal=User:alice" in listed and "operation=READ" in listed
    assert "operation=DESCRIBE" in listed and "permissionType=ALLOW" in listed
    client = support.admin(secured.bootstrap)
    assert support.binding(TOPIC, topic, AclOperation.READ, principal="User:alice") in (
        support.describe_acls(client)
    )
    acls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read",
         "--topic", topic)
    left = {(b.operation, b.principal) for b in support.describe_acls(client) if b.name == topic}
    assert left == {(AclOperation.DESCRIBE, "User:alice")}


def test_kafkas_authorizer_class_names_are_accepted_and_others_refused(tmp_path: Path) -> None:
    from kafkette.broker.config import ConfigError, load_config

    for accepted in ("org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                     "kafka.security.authorizer.AclAuthorizer", ""):
        load_config({"authorizer.class.name": accepted}, data_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"authorizer\.class\.name"):
        load_config({"authorizer.class.name": "com.example.MyAuthorizer"}, data_dir=tmp_path)
    with pytest.raises(Exception, match=r"super\.users"):
        support.start_broker(tmp_path, super_users="admin")
