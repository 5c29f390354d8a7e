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


def test_one_unreadable_znode_does_not_freeze_the_other_acls(cluster, wait_until) -> None:
    """While one resource's znode is unreadable, a broker keeps the ACLs it held for that
    resource only: changes to other resources made through another broker (a new DENY,
    a revoked ALLOW) are installed here too, not acknowledged and left unenforced."""
    built = cluster(2, configs=SECURED)
    guarded = AclBinding(ResourceType.TOPIC, "guarded", ResourcePatternType.LITERAL,
                         "User:mallory", "*", AclOperation.READ, AclPermissionType.DENY)
    allowed = AclBinding(ResourceType.TOPIC, "open", ResourcePatternType.LITERAL,
                         "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    first = AdminClient({"bootstrap.servers": built.bootstrap_of(1)})
    for future in first.create_acls([guarded, allowed], request_timeout=20).values():
        future.result(timeout=20)
    wait_until(lambda: _describe(built.bootstrap_of(2)) == {guarded, allowed}, timeout=30,
               what="the second broker sees the ACLs")

    zk = built.zk()
    zk.set("/kafka-acl/Topic/guarded", b"{not json")
    zk.create("/kafka-acl-changes/acl_changes_", b"Topic:guarded", sequence=True)
    for broker in (1, 2):
        log_path = built.brokers[broker].log_path
        wait_until(lambda p=log_path: "ACLs in ZooKeeper unreadable" in p.read_text(
            errors="replace"), timeout=30, what=f"broker {broker} logs the unreadable znode")

    # Another broker's changes (an admin client may send its requests to any broker, so
    # they are written as a broker writes them): a new DENY elsewhere, the ALLOW revoked.
    zk.create("/kafka-acl/Topic/payments", json.dumps({"version": 1, "acls": [
        {"principal": "User:mallory", "permissionType": "Deny", "operation": "Write",
         "host": "*"}]}).encode(), makepath=True)
    zk.create("/kafka-acl-changes/acl_changes_", b"Topic:payments", sequence=True)
    zk.delete("/kafka-acl/Topic/open")
    zk.create("/kafka-acl-changes/acl_changes_", b"Topic:open", sequence=True)
    deny = AclBinding(ResourceType.TOPIC, "payments", ResourcePatternType.LITERAL,
                      "User:mallory", "*", AclOperation.WRITE, AclPermissionType.DENY)
    # Each broker decides with these (DescribeAcls shows the ACLs it decides with); the
    # unreadable resource's DENY is still held.
    for broker in (1, 2):
        wait_until(lambda b=broker: _describe(built.bootstrap_of(b)) == {guarded, deny},
                   timeout=30, what=f"broker {broker} installs the changes made meanwhile")

    # A binding held only because its znode is unreadable is not "already there": it
    # cannot be stored, and the answer says so instead of acknowledging it.
    with pytest.raises(KafkaException) as caught:
        first.create_acls([guarded], request_timeout=20)[guarded].result(timeout=20)
    assert caught.value.args[0].code() == KafkaError.UNKNOWN  # UNKNOWN_SERVER_ERROR (-1)
    assert zk.get("/kafka-acl/Topic/guarded")[0] == b"{not json"


def test_changes_are_decided_by_zookeeper_not_the_acls_held(cluster) -> None:
    """DeleteAcls matches what ZooKeeper has when it runs (a binding whose notification
    has not come yet is deleted too), and CreateAcls writes what ZooKeeper lacks even
    when the broker believes it is there."""
    built = cluster(1, configs=SECURED)
    zk = built.zk()
    unannounced = AclBinding(ResourceType.GROUP, "quiet", ResourcePatternType.LITERAL,
                             "User:carol", "*", AclOperation.READ, AclPermissionType.ALLOW)
    zk.create("/kafka-acl/Group/quiet", json.dumps({"version": 1, "acls": [
        {"principal": "User:carol", "permissionType": "Allow", "operation": "Read",
         "host": "*"}]}).encode(), makepath=True)
    admin = AdminClient({"bootstrap.servers": built.bootstrap_of(1)})
    groups = AclBindingFilter(ResourceType.GROUP, None, ResourcePatternType.ANY, None, None,
                              AclOperation.ANY, AclPermissionType.ANY)
    assert admin.delete_acls([groups], request_timeout=20)[groups].result(20) == [unannounced]
    assert zk.exists("/kafka-acl/Group/quiet") is None

    held = AclBinding(ResourceType.TOPIC, "kept", ResourcePatternType.LITERAL,
                      "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
    for future in admin.create_acls([held], request_timeout=20).values():
        future.result(timeout=20)
    zk.delete("/kafka-acl/Topic/kept")  # removed behind the broker's back, unannounced
    for future in admin.create_acls([held], request_timeout=20).values():
        future.result(timeout=20)
    assert json.loads(zk.get("/kafka-acl/Topic/kept")[0])["acls"] == [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read",
         "host": "*"}]
