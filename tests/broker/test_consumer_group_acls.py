"""KIP-848 under Kafka's StandardAuthorizer: topic DESCRIBE checks of
ConsumerGroupHeartbeat (named subscriptions, regex matches) and ConsumerGroupDescribe,
with Kafka 4.0's codes and message. The principal is User:ANONYMOUS (PLAINTEXT);
``allow.everyone.if.no.acl.found=true`` leaves everything open but the one topic a DENY
ACL closes."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from kafkette.broker.embedded import EmbeddedBroker
from tests.broker.consumer_protocol_client import RawClient

TOPIC_AUTHORIZATION_FAILED = 29


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory):
    broker = EmbeddedBroker.start(data_dir=tmp_path_factory.mktemp("cg-acl"), configs={
        "num.partitions": "1",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    })
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def _join(client, group, **fields) -> dict:
    return client.heartbeat(group_id=group, member_id=uuid.uuid4().hex[:22], member_epoch=0,
                            rebalance_timeout_ms=30000, topic_partitions=[], **fields)


def _describe(client, group) -> dict:
    return client.request(69, 1, {"group_ids": [group],
                                  "include_authorized_operations": False})["groups"][0]


def test_topic_describe_permission(secured) -> None:
    tag = uuid.uuid4().hex[:6]
    public, secret = f"acl-{tag}-public", f"acl-{tag}-secret"
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    for future in admin.create_topics([NewTopic(public, 2, 1), NewTopic(secret, 2, 1)],
                                      request_timeout=20).values():
        future.result(20)
    with RawClient(secured.bootstrap) as client:
        # A member gets the secret topic while it is still open ...
        holder = "acl-holder-" + tag
        assert _join(client, holder, subscribed_topic_names=[secret])["error_code"] == 0
        assert _describe(client, holder)["error_code"] == 0
        deny = AclBinding(ResourceType.TOPIC, secret, ResourcePatternType.LITERAL,
                          "User:ANONYMOUS", "*", AclOperation.DESCRIBE, AclPermissionType.DENY)
        for future in admin.create_acls([deny], request_timeout=20).values():
            future.result(20)
        # ... then DESCRIBE on it is denied: the group is not described any more,
        described = _describe(client, holder)
        assert (described["error_code"], described["error_message"], described["members"]) == (
            TOPIC_AUTHORIZATION_FAILED,
            "The group has described topic(s) that the client is not authorized to describe.",
            [],
        )
        # a subscription naming it is refused as a whole,
        r = _join(client, "acl-names-" + tag, subscribed_topic_names=[public, secret])
        assert (r["error_code"], r["error_message"]) == (TOPIC_AUTHORIZATION_FAILED, None)
        # and a regex matching both only gets the topic it may describe.
        group = "acl-regex-" + tag
        r = _join(client, group, subscribed_topic_regex=f"acl-{tag}-.*")
        assert r["error_code"] == 0
        targets = {t["topic_name"] for t in
                   _describe(client, group)["members"][0]["target_assignment"]["topic_partitions"]}
        assert targets == {public}
