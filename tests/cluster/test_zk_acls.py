"""ACLs shared through ZooKeeper with Kafka's layout: made on one broker, seen on another,
and written where Kafka's ZooKeeper-era authorizer keeps them (``/kafka-acl/Topic/<name>``,
``/kafka-acl-extended/prefixed/...``, change notifications under ``/kafka-acl-changes``)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

SECURED = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    # Brokers and the test client are all User:ANONYMOUS on PLAINTEXT listeners.
    "super.users": "User:ANONYMOUS",
}
EVERYTHING = AclBindingFilter(
    ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
    AclPermissionType.ANY,
)


def _describe(bootstrap: str) -> set:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return set(admin.describe_acls(EVERYTHING, request_timeout=20).result(timeout=20))


def test_acls_are_shared_through_zookeeper_in_kafkas_layout(cluster, wait_until) -> None:
    built = cluster(2, configs=SECURED)
    literal = AclBinding(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL,
                         "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.GROUP, "team-", ResourcePatternType.PREFIXED,
                          "User:bob", "10.0.0.1", AclOperation.ALL, AclPermissionType.DENY)
    first = AdminClient({"bootstrap.servers": built.bootstrap_of(1)})
    for future in first.create_acls([literal, prefixed], request_timeout=20).values():
        future.result(timeout=20)

    zk = built.zk()
    assert json.loads(zk.get("/kafka-acl/Topic/payments")[0]) == {
        "version": 1,
        "acls": [{"principal": "User:alice", "permissionType": "Allow",
                  "operation": "Read", "host": "*"}],
    }
    assert json.loads(zk.get("/kafka-acl-extended/prefixed/Group/team-")[0])["acls"] == [
        {"principal": "User:bob", "permissionType": "Deny", "operation": "All",
         "host": "10.0.0.1"}
    ]
    assert zk.get_children("/kafka-acl-changes")
    wait_until(lambda: _describe(built.bootstrap_of(2)) == {literal, prefixed}, timeout=30,
               what="the other broker sees the new ACLs")

    # An ACL written straight into ZooKeeper as Kafka's tools did, then announced.
    zk.create("/kafka-acl/Topic/audit", json.dumps({"version": 1, "acls": [
        {"principal": "User:carol", "permissionType": "Allow", "operation": "Write",
         "host": "*"}]}).encode(), makepath=True)
    zk.create("/kafka-acl-changes/acl_changes_", b"Topic:audit", sequence=True)
    audit = AclBinding(ResourceType.TOPIC, "audit", ResourcePatternType.LITERAL,
                       "User:carol", "*", AclOperation.WRITE, AclPermissionType.ALLOW)
    for broker in (1, 2):
        wait_until(lambda b=broker: audit in _describe(built.bootstrap_of(b)), timeout=30,
                   what=f"broker {broker} sees the ACL written in ZooKeeper")

    # Deleted through the second broker: gone from ZooKeeper and from the first.
    second = AdminClient({"bootstrap.servers": built.bootstrap_of(2)})
    deleted = second.delete_acls([EVERYTHING], request_timeout=20)[EVERYTHING].result(20)
    assert set(deleted) == {literal, prefixed, audit}
    assert zk.exists("/kafka-acl/Topic/payments") is None
    wait_until(lambda: not _describe(built.bootstrap_of(1)), timeout=30,
               what="the first broker sees the deletion")


def test_a_name_zookeeper_cannot_hold_is_refused_not_lost(cluster) -> None:
    """A ``/`` in the name would nest znodes the brokers never read back: the ACL is
    refused with INVALID_REQUEST (and nothing written) instead of acknowledged and lost;
    the request's other ACLs go ahead."""
    built = cluster(1, configs=SECURED)
    nested = AclBinding(ResourceType.GROUP, "team/a", ResourcePatternType.LITERAL,
                        "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    prefixed = AclBinding(ResourceType.TOPIC, "logs/", ResourcePatternType.PREFIXED,
                          "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    dots = AclBinding(ResourceType.TOPIC, "..", ResourcePatternType.LITERAL,
                      "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    fine = AclBinding(ResourceType.GROUP, "team-a", ResourcePatternType.LITERAL,
                      "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    admin = AdminClient({"bootstrap.servers": built.bootstrap_of(1)})
    futures = admin.create_acls([nested, prefixed, dots, fine], request_timeout=20)
    for refused in (nested, prefixed, dots):
        with pytest.raises(KafkaException) as caught:
            futures[refused].result(timeout=20)
        error = caught.value.args[0]
        assert error.code() == KafkaError.INVALID_REQUEST
        assert "ZooKeeper" in error.str()
    futures[fine].result(timeout=20)
    assert _describe(built.bootstrap_of(1)) == {fine}
    zk = built.zk()
    assert zk.exists("/kafka-acl/Group/team") is None
    assert zk.exists("/kafka-acl-extended/prefixed/Topic/logs") is None


def test_an_unreadable_acl_znode_never_drops_a_deny(cluster, wait_until) -> None:
    """A znode that cannot be decoded is not skipped (its DENY would vanish): the broker
    logs an ERROR and keeps the ACLs it had; a change made meanwhile is stored and
    acknowledged (not reported failed because reading everything back fails), and
    applied to the ACLs held; a broker cannot start while a znode is unreadable."""
    built = cluster(1, configs=SECURED)
    admin = AdminClient({"bootstrap.servers": built.bootstrap_of(1)})
    deny = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL,
                      "User:mallory", "*", AclOperation.READ, AclPermissionType.DENY)
    for future in admin.create_acls([deny], request_timeout=20).values():
        future.result(timeout=20)
    zk = built.zk()
    zk.set("/kafka-acl/Topic/guarded", b"{not json")
    zk.create("/kafka-acl-changes/acl_changes_", b"Topic:guarded", sequence=True)
    log_path = built.brokers[1].log_path
    wait_until(lambda: "ACLs in ZooKeeper unreadable" in log_path.read_text(errors="replace"),
               timeout=30, what="the broker logs the unreadable znode")
    assert _describe(built.bootstrap_of(1)) == {deny}

    later = AclBinding(ResourceType.GROUP, "later", ResourcePatternType.LITERAL,
                       "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([later], request_timeout=20).values():
        future.result(timeout=20)
    assert zk.exists("/kafka-acl/Group/later") is not None
    assert _describe(built.bootstrap_of(1)) == {deny, later}

    built.stop(1)
    with pytest.raises(AssertionError, match="ready line"):  # it exits instead
        built.start(1)
    assert "cannot read the ACLs from ZooKeeper" in log_path.read_text(errors="replace")
