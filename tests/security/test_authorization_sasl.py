"""ACLs for authenticated principals: SASL/PLAIN users get what their ACLs give them.

One broker: a SASL_PLAINTEXT listener with PLAIN users admin (super user), alice and
bob, beside a PLAINTEXT listener (User:ANONYMOUS). The admin grants alice produce and
consume rights on the ``orders-`` topics and her groups, bob only reading; each is
then refused exactly where Kafka's StandardAuthorizer refuses, with real clients
(confluent-kafka, kafka-python).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    KafkaAdminClient,
)
from kafka.errors import ClusterAuthorizationFailedError

from kafkette.broker.embedded import EmbeddedBroker
from tests.security import acl_support as support

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
PREFIXED = ResourcePatternType.PREFIXED
TIMEOUT = 20


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    users = " ".join(f'user_{name}="{password}"' for name, password in PASSWORDS.items())
    configs = {
        "num.partitions": "1",
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{PLAIN_MODULE} required {users};",
        "authorizer.class.name": support.STANDARD_AUTHORIZER,
        "super.users": "User:admin",
    }
    broker = EmbeddedBroker.start(tmp_path_factory.mktemp("authz-sasl"), configs)
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def _sasl(broker: EmbeddedBroker, user: str) -> dict:
    return {
        "bootstrap.servers": str(broker.broker.endpoint_for("SASL_PLAINTEXT")),
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": PASSWORDS[user],
    }


def _admin(broker: EmbeddedBroker, user: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient(_sasl(broker, user))


def _consume(conf: dict, topic: str, group: str):
    consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            return msg.error() or msg.value()
        return None
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def granted(broker: EmbeddedBroker) -> str:
    """The admin's grants; the topic alice and bob use."""
    topic = support.name("orders")
    admin = _admin(broker, "admin")  # a client dropped before its answer cancels it
    admin.create_topics([NewTopic(topic, 1)], request_timeout=20)[topic].result(TIMEOUT)
    support.create_acls(admin, [
        support.binding(ResourceType.TOPIC, "orders-", AclOperation.WRITE,
                        principal="User:alice", pattern=PREFIXED),
        support.binding(ResourceType.TOPIC, "orders-", AclOperation.READ,
                        principal="User:alice", pattern=PREFIXED),
        support.binding(ResourceType.GROUP, "alice-", AclOperation.READ,
                        principal="User:alice", pattern=PREFIXED),
        support.binding(ResourceType.TOPIC, "orders-", AclOperation.READ,
                        principal="User:bob", pattern=PREFIXED),
    ])
    return topic


def test_a_user_with_grants_produces_and_consumes(broker, granted) -> None:
    alice = _sasl(broker, "alice")
    assert support.produce_one(alice, granted) is None
    assert _consume(alice, granted, support.name("alice-app")) == b"v"


def test_a_user_without_write_or_group_rights_is_refused(broker, granted) -> None:
    bob = _sasl(broker, "bob")
    error = support.produce_one(bob, granted)
    assert error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # bob may read the topic, but no group is his.
    refused = _consume(bob, granted, support.name("bob-app"))
    assert isinstance(refused, KafkaError)
    assert refused.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    # alice's groups are hers: bob may not use one either.
    refused = _consume(bob, granted, support.name("alice-app"))
    assert isinstance(refused, KafkaError)
    assert refused.code() == KafkaError.GROUP_AUTHORIZATION_FAILED


def test_only_the_super_user_manages_acls(broker, granted) -> None:
    with pytest.raises(KafkaException) as refused:
        support.create_acls(_admin(broker, "alice"), [
            support.binding(ResourceType.TOPIC, "x", AclOperation.ALL, principal="User:alice"),
        ])
    assert support.error_name(refused.value) == "CLUSTER_AUTHORIZATION_FAILED"
    legacy = KafkaAdminClient(
        bootstrap_servers=str(broker.broker.endpoint_for("SASL_PLAINTEXT")),
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
        sasl_plain_username="bob", sasl_plain_password=PASSWORDS["bob"],
    )
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            legacy.describe_acls(support.kafka_python_everything())
    finally:
        legacy.close()
    alices = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice", None,
        AclOperation.ANY, AclPermissionType.ANY,
    )
    assert len(support.describe_acls(_admin(broker, "admin"), alices)) == 3


def test_metadata_shows_each_principal_its_own_topics(broker, granted) -> None:
    hidden = support.name("payroll")
    admin = _admin(broker, "admin")
    admin.create_topics([NewTopic(hidden, 1)], request_timeout=20)[hidden].result(TIMEOUT)
    assert {granted, hidden} <= set(admin.list_topics(timeout=TIMEOUT).topics)
    from confluent_kafka.admin import AdminClient

    alice_sees = set(AdminClient(_sasl(broker, "alice")).list_topics(timeout=TIMEOUT).topics)
    assert granted in alice_sees and hidden not in alice_sees
    anonymous = AdminClient({"bootstrap.servers": str(broker.broker.endpoint_for("PLAINTEXT"))})
    assert not {granted, hidden} & set(anonymous.list_topics(timeout=TIMEOUT).topics)


def test_scram_credentials_need_alter_on_the_cluster(broker, granted) -> None:
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret"
    )
    # Kept in names: a client dropped before its answer cancels the request.
    alice, admin = _admin(broker, "alice"), _admin(broker, "admin")
    with pytest.raises(KafkaException) as denied:
        alice.alter_user_scram_credentials([upsert])["carol"].result(timeout=TIMEOUT)
    assert support.error_name(denied.value) == "CLUSTER_AUTHORIZATION_FAILED"
    admin.alter_user_scram_credentials([upsert])["carol"].result(timeout=TIMEOUT)
