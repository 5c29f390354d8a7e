"""Refusals that must not tell a principal what it may not see (topic ids, names).

DeleteTopics, ElectLeaders and the requests that name topics by id answered over a
real socket with kafkette's own client codec (the admin clients hide the fields that
leak: ids, names, the partitions of "every partition"). The principal is
User:ANONYMOUS (PLAINTEXT listener).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation, AclPermissionType, NewTopic, ResourceType

from bench.harness.raw_wire import call as request
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.apis import ApiKey
from kafkette.wire.primitives import ZERO_UUID
from kafkette.wire.records import build_batch_from_values
from tests.security import acl_support as support

DENY = AclPermissionType.DENY
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
UNKNOWN_TOPIC_OR_PARTITION = 3


def create_topics(bootstrap: str, *names: str) -> None:
    client = support.admin(bootstrap)
    futures = client.create_topics([NewTopic(n, 1) for n in names], request_timeout=20)
    for future in futures.values():
        future.result(timeout=20)


@pytest.fixture
def open_broker(tmp_path: Path):
    broker = support.start_broker(tmp_path, allow_everyone_if_no_acl_found="true")
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def test_delete_topics_refused_tells_neither_ids_nor_hidden_names(
    open_broker: EmbeddedBroker,
) -> None:
    """Kafka's ControllerApis.deleteTopics: a name the principal may not delete gets
    ZERO_UUID (as a missing topic does); an id gets its name back only when the
    principal may DESCRIBE the topic."""
    visible, hidden = support.name("del-visible"), support.name("del-hidden")
    create_topics(open_broker.bootstrap, visible, hidden)
    topics = open_broker.broker.topics
    visible_id = topics.metadata(visible).topic_id
    hidden_id = topics.metadata(hidden).topic_id
    # One batch: the ACL on the cluster (for someone else) ends ANONYMOUS's right to
    # change ACLs along with DELETE on the cluster, so each topic is checked.
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(ResourceType.BROKER, "kafka-cluster", AclOperation.DELETE,
                        principal="User:operator"),
        support.binding(ResourceType.TOPIC, visible, AclOperation.DESCRIBE),
        support.binding(ResourceType.TOPIC, visible, AclOperation.DELETE, DENY),
        support.binding(ResourceType.TOPIC, hidden, AclOperation.DELETE, DENY),
        support.binding(ResourceType.TOPIC, hidden, AclOperation.DESCRIBE, DENY),
    ])
    missing = support.name("del-missing")
    body = request(open_broker.bootstrap, ApiKey.DELETE_TOPICS, 6, {
        "topics": [
            {"name": visible, "topic_id": ZERO_UUID},
            {"name": hidden, "topic_id": ZERO_UUID},
            {"name": missing, "topic_id": ZERO_UUID},
            {"name": None, "topic_id": visible_id},
            {"name": None, "topic_id": hidden_id},
        ],
        "timeout_ms": 10_000,
    })
    answers = {
        (r["name"], r["topic_id"]): r["error_code"] for r in body["responses"]
    }
    assert answers == {
        (visible, ZERO_UUID): TOPIC_AUTHORIZATION_FAILED,
        (hidden, ZERO_UUID): TOPIC_AUTHORIZATION_FAILED,
        (missing, ZERO_UUID): UNKNOWN_TOPIC_OR_PARTITION,
        (visible, visible_id): TOPIC_AUTHORIZATION_FAILED,
        (None, hidden_id): TOPIC_AUTHORIZATION_FAILED,
    }
    assert topics.metadata(visible) is not None and topics.metadata(hidden) is not None


def test_elect_leaders_refused_lists_only_the_requested_partitions(
    open_broker: EmbeddedBroker,
) -> None:
    """ALTER on the cluster is checked before "every partition" is expanded: a refused
    principal gets no topic names back (Kafka's ElectLeadersRequest.getErrorResponse)."""
    secret = support.name("elect-secret")
    create_topics(open_broker.bootstrap, secret)
    # An ACL on the cluster for someone else: ANONYMOUS no longer falls back to
    # allow.everyone.if.no.acl.found for ALTER on the cluster.
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(ResourceType.BROKER, "kafka-cluster", AclOperation.ALTER,
                        principal="User:operator"),
    ])
    every = request(open_broker.bootstrap, ApiKey.ELECT_LEADERS, 2, {
        "election_type": 0, "topic_partitions": None, "timeout_ms": 10_000,
    })
    assert every["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    assert every["replica_election_results"] == []
    named = request(open_broker.bootstrap, ApiKey.ELECT_LEADERS, 2, {
        "election_type": 0,
        "topic_partitions": [{"topic": "asked-for", "partitions": [0, 3]}],
        "timeout_ms": 10_000,
    })
    assert named["error_code"] == CLUSTER_AUTHORIZATION_FAILED
    [result] = named["replica_election_results"]
    assert result["topic"] == "asked-for"
    assert [(p["partition_id"], p["error_code"]) for p in result["partition_result"]] == [
        (0, CLUSTER_AUTHORIZATION_FAILED), (3, CLUSTER_AUTHORIZATION_FAILED),
    ]


def test_offset_for_leader_epoch_without_cluster_action_is_checked_per_topic(
    open_broker: EmbeddedBroker,
) -> None:
    """Kafka (KIP-320): CLUSTER_ACTION allows every topic, or else each topic needs
    DESCRIBE, even when the request names a replica_id: a topic the principal may
    describe is answered, another is TOPIC_AUTHORIZATION_FAILED."""
    visible, hidden = support.name("ofle-visible"), support.name("ofle-hidden")
    create_topics(open_broker.bootstrap, visible, hidden)
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION,
                        principal="User:operator"),
        support.binding(ResourceType.TOPIC, hidden, AclOperation.DESCRIBE, DENY),
    ])
    body = request(open_broker.bootstrap, ApiKey.OFFSET_FOR_LEADER_EPOCH, 4, {
        "replica_id": 1,
        "topics": [
            {"topic": name, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]}
            for name in (visible, hidden)
        ],
    })
    errors = {t["topic"]: [p["error_code"] for p in t["partitions"]] for t in body["topics"]}
    assert errors == {visible: [0], hidden: [TOPIC_AUTHORIZATION_FAILED]}


UNKNOWN_TOPIC_ID = 100


def _partition_errors(topics: list[dict], key: str = "partitions") -> dict:
    return {t["topic_id"]: [p["error_code"] for p in t[key]] for t in topics}


def test_requests_by_topic_id_are_authorized_as_by_name(open_broker: EmbeddedBroker) -> None:
    """Metadata 12, Produce 13, OffsetCommit/OffsetFetch 10 name topics by id: a topic the
    principal may not use is TOPIC_AUTHORIZATION_FAILED (Metadata: name null, so the id
    tells no name), an id no topic has is UNKNOWN_TOPIC_ID; Metadata for all topics
    leaves out what the principal may not describe, ``__consumer_offsets`` included."""
    visible, hidden = support.name("byid-visible"), support.name("byid-hidden")
    create_topics(open_broker.bootstrap, visible, hidden)
    topics = open_broker.broker.topics
    ids = {name: topics.metadata(name).topic_id for name in (visible, hidden)}
    unknown = uuid.uuid4()
    group = support.name("byid-group")
    commit = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
              "group_instance_id": None}
    partition_0 = {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                   "committed_metadata": None}
    # A commit before the ACLs: __consumer_offsets exists and is listed by Metadata.
    first = request(open_broker.bootstrap, ApiKey.OFFSET_COMMIT, 10, {
        **commit, "topics": [{"topic_id": ids[visible], "partitions": [partition_0]}]})
    assert _partition_errors(first["topics"]) == {ids[visible]: [0]}
    everything = {"topics": None, "allow_auto_topic_creation": False,
                  "include_topic_authorized_operations": False}
    listed = {t["name"] for t in request(open_broker.bootstrap, ApiKey.METADATA, 12,
                                         everything)["topics"]}
    assert {visible, hidden, "__consumer_offsets"} <= listed
    support.create_acls(support.admin(open_broker.bootstrap), [
        support.binding(ResourceType.TOPIC, name, operation, DENY)
        for name in (hidden, "__consumer_offsets")
        for operation in (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE)
    ])

    asked = [{"name": None, "topic_id": i} for i in (ids[visible], ids[hidden], unknown)]
    answer = request(open_broker.bootstrap, ApiKey.METADATA, 12, {**everything, "topics": asked})
    assert [(t["name"], t["topic_id"], t["error_code"]) for t in answer["topics"]] == [
        (visible, ids[visible], 0),
        (None, ids[hidden], TOPIC_AUTHORIZATION_FAILED),
        (None, unknown, UNKNOWN_TOPIC_ID),
    ]
    listed = {t["name"] for t in request(open_broker.bootstrap, ApiKey.METADATA, 12,
                                         everything)["topics"]}
    assert visible in listed and hidden not in listed and "__consumer_offsets" not in listed

    batch = build_batch_from_values([(None, b"x")])
    produced = request(open_broker.bootstrap, ApiKey.PRODUCE, 13, {
        "transactional_id": None, "acks": 1, "timeout_ms": 10_000,
        "topic_data": [{"topic_id": i, "partition_data": [{"index": 0, "records": batch}]}
                       for i in (ids[visible], ids[hidden], unknown)]})
    assert _partition_errors(produced["responses"], "partition_responses") == {
        ids[visible]: [0], ids[hidden]: [TOPIC_AUTHORIZATION_FAILED], unknown: [UNKNOWN_TOPIC_ID]}

    committed = request(open_broker.bootstrap, ApiKey.OFFSET_COMMIT, 10, {
        **commit, "topics": [{"topic_id": i, "partitions": [partition_0]}
                             for i in (ids[visible], ids[hidden], unknown)]})
    assert _partition_errors(committed["topics"]) == {
        ids[visible]: [0], ids[hidden]: [TOPIC_AUTHORIZATION_FAILED], unknown: [UNKNOWN_TOPIC_ID]}

    fetched = request(open_broker.bootstrap, ApiKey.OFFSET_FETCH, 10, {
        "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": [
            {"topic_id": i, "partition_indexes": [0]}
            for i in (ids[visible], ids[hidden], unknown)]}],
        "require_stable": False})
    (answered,) = fetched["groups"]
    assert answered["error_code"] == 0
    assert _partition_errors(answered["topics"]) == {
        ids[visible]: [0], ids[hidden]: [TOPIC_AUTHORIZATION_FAILED], unknown: [UNKNOWN_TOPIC_ID]}
    (visible_answer,) = [t for t in answered["topics"] if t["topic_id"] == ids[visible]]
    assert visible_answer["partitions"][0]["committed_offset"] == 7
