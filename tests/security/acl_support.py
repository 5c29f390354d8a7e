"""Helpers of the ACL and authorization tests (loaded by file path: the test modules run
with ``--import-mode=importlib`` and cannot import their siblings).

Every principal on a PLAINTEXT listener is ``User:ANONYMOUS``, so the tests drive the
authorizer with ACLs for that principal (or for others, to see ANONYMOUS refused).
"""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka.admin import (
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaResourceType

from kafkette.broker.embedded import EmbeddedBroker

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"
TIMEOUT = 20


def start_broker(
    data_dir: Path, extra: dict[str, str] | None = None, **configs: str
) -> EmbeddedBroker:
    """A broker with Kafka's StandardAuthorizer, ``extra`` config lines and ``configs``
    (keyword names with ``_`` for ``.``: ``super_users`` is ``super.users``)."""
    props = {"num.partitions": "1", "authorizer.class.name": STANDARD_AUTHORIZER}
    props.update(extra or {})
    props.update({k.replace("_", "."): v for k, v in configs.items()})
    return EmbeddedBroker.start(data_dir=data_dir, configs=props)


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def binding(
    rtype: ResourceType,
    resource: str,
    op: AclOperation,
    permission: AclPermissionType = AclPermissionType.ALLOW,
    *,
    principal: str = ANONYMOUS,
    host: str = "*",
    pattern: ResourcePatternType = ResourcePatternType.LITERAL,
) -> AclBinding:
    return AclBinding(rtype, resource, pattern, principal, host, op, permission)


def everything() -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
        AclOperation.ANY, AclPermissionType.ANY,
    )


def kafka_python_everything() -> ACLFilter:
    """kafka-python's filter matching every ACL: its ``describe_acls`` raises the answer's
    error, as the Java client does (librdkafka answers an empty list instead)."""
    return ACLFilter(
        principal=None, host="*", operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(
            KafkaResourceType.ANY, None, ACLResourcePatternType.ANY
        ),
    )


def create_acls(client: AdminClient, bindings: list[AclBinding]) -> None:
    for future in client.create_acls(bindings, request_timeout=TIMEOUT).values():
        future.result(timeout=TIMEOUT)


def describe_acls(client: AdminClient, selection: AclBindingFilter | None = None) -> set:
    found = client.describe_acls(selection or everything(), request_timeout=TIMEOUT)
    return set(found.result(timeout=TIMEOUT))


def delete_acls(client: AdminClient, selection: AclBindingFilter) -> list:
    futures = client.delete_acls([selection], request_timeout=TIMEOUT)
    return list(futures[selection].result(timeout=TIMEOUT))


def error_name(exc: BaseException) -> str:
    """The Kafka error name inside a confluent-kafka exception."""
    if isinstance(exc, KafkaException):
        return exc.args[0].name()
    return type(exc).__name__


def produce_one(conf: dict, topic: str) -> KafkaError | None:
    """Produce one record with ``conf`` (no idempotence: its InitProducerId would be
    refused first); the delivery error, None when it was written."""
    outcome: list = []
    producer = Producer({"message.timeout.ms": 10000, "enable.idempotence": False, **conf})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
    producer.flush(TIMEOUT)
    assert outcome, "no delivery report"
    return outcome[0]
