"""The StandardAuthorizer rules themselves (matcher.py, acl.py), decided without a
broker: every rule the end-to-end tests rely on, and the corners they cannot reach
cheaply (principals other than ANONYMOUS, authorizeByResourceType)."""

from __future__ import annotations

import pytest

from kafkette.broker.security.authorizer.acl import (
    AclBinding,
    AclError,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    new_binding,
    new_filter,
)
from kafkette.broker.security.authorizer.authorizer import (
    AuthorizerConfigError,
    parse_super_users,
)
from kafkette.broker.security.authorizer.matcher import AclIndex

Op = AclOperation
TOPIC = ResourceType.TOPIC
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def acl(name, op, permission=ALLOW, principal="User:alice", host="*", pattern=LITERAL,
        rtype=TOPIC) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, permission)


def decide(index, op, name, principal="User:alice", host="10.0.0.1", open_=False,
           rtype=TOPIC) -> bool:
    return index.decide(principal, host, op, rtype, name, open_)


def test_no_acl_on_the_resource_follows_allow_everyone_if_no_acl_found() -> None:
    index = AclIndex([acl("other", Op.READ)])
    assert decide(index, Op.READ, "orders") is False
    assert decide(index, Op.READ, "orders", open_=True) is True
    # An ACL for someone else still covers the resource: no open rule for it.
    assert decide(index, Op.READ, "other", principal="User:bob", open_=True) is False


def test_deny_wins_and_all_covers_every_operation() -> None:
    index = AclIndex([acl("t", Op.ALL), acl("t", Op.WRITE, DENY)])
    assert decide(index, Op.READ, "t") is True
    assert decide(index, Op.WRITE, "t") is False
    index.add(acl("t", Op.ALL, DENY, principal="User:*"))
    assert decide(index, Op.READ, "t") is False


def test_implied_operations_come_from_allows_only() -> None:
    index = AclIndex([acl("t", Op.READ), acl("c", Op.ALTER_CONFIGS)])
    assert decide(index, Op.DESCRIBE, "t") is True
    assert decide(index, Op.DESCRIBE_CONFIGS, "c") is True
    assert decide(index, Op.WRITE, "t") is False
    # A DENY of READ does not deny DESCRIBE (Kafka: no implied denials).
    index = AclIndex([acl("t", Op.DESCRIBE), acl("t", Op.READ, DENY)])
    assert decide(index, Op.DESCRIBE, "t") is True


def test_wildcards_prefixes_principals_and_hosts() -> None:
    index = AclIndex([
        acl("*", Op.DESCRIBE, principal="User:*"),
        acl("pay-", Op.WRITE, pattern=PREFIXED),
        acl("pay-secret", Op.WRITE, DENY, host="10.0.0.1"),
    ])
    assert decide(index, Op.DESCRIBE, "anything", principal="User:bob") is True
    assert decide(index, Op.WRITE, "pay-in") is True
    assert decide(index, Op.WRITE, "pay") is False
    assert decide(index, Op.WRITE, "pay-secret") is False
    assert decide(index, Op.WRITE, "pay-secret", host="10.0.0.2") is True
    index.remove(acl("pay-", Op.WRITE, pattern=PREFIXED))
    assert decide(index, Op.WRITE, "pay-in") is False


def test_allows_some_is_kafkas_authorize_by_resource_type() -> None:
    index = AclIndex([acl("logs-", Op.WRITE, pattern=PREFIXED)])
    assert index.allows_some("User:alice", "h", Op.WRITE, TOPIC) is True
    assert index.allows_some("User:bob", "h", Op.WRITE, TOPIC) is False
    # A prefix DENY that dominates every ALLOW leaves nothing allowed.
    index.add(acl("log", Op.WRITE, DENY, pattern=PREFIXED))
    assert index.allows_some("User:alice", "h", Op.WRITE, TOPIC) is False
    index.add(acl("metrics", Op.WRITE))
    assert index.allows_some("User:alice", "h", Op.WRITE, TOPIC) is True
    index.add(acl("*", Op.WRITE, DENY))
    assert index.allows_some("User:alice", "h", Op.WRITE, TOPIC) is False


def test_create_acls_validation_messages() -> None:
    ok = new_binding(2, "t", 3, "User:a", "*", 3, 3)
    assert ok == acl("t", Op.READ, principal="User:a")
    for args, message in (
        ((1, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType"),
        ((2, "t", 2, "User:a", "*", 3, 3), "Invalid patternType"),
        ((2, "t", 3, "User:a", "*", 1, 3), "Invalid operation"),
        ((2, "t", 3, "User:a", "*", 3, 1), "Invalid permissionType"),
        ((2, "", 3, "User:a", "*", 3, 3), "Invalid empty resource name"),
        # Kafka's order: the CLUSTER name, then the empty name, then the codes.
        ((4, "", 0, "User:a", "*", 0, 0), "kafka-cluster"),
        ((2, "", 0, "User:a", "*", 0, 0), "Invalid empty resource name"),
        ((4, "kafka-cluster", 0, "User:a", "*", 0, 0), "Invalid patternType"),
        ((4, "c", 3, "User:a", "*", 7, 3), "kafka-cluster"),
        ((2, "t", 3, "alice", "*", 3, 3), "no colon"),
        ((2, "t", 3, "User:a", "*", 99, 3), "Invalid operation"),
    ):
        with pytest.raises(AclError, match=message):
            new_binding(*args)
    with pytest.raises(AclError):
        new_filter(0, None, 1, None, None, 1, 1)


def test_super_users_are_semicolon_separated_principals() -> None:
    assert parse_super_users("User:admin; User:ops;") == {"User:admin", "User:ops"}
    with pytest.raises(AuthorizerConfigError):
        parse_super_users("admin")


def test_the_decision_cache_keeps_neither_long_names_nor_operation_masks() -> None:
    """Hostile 32 KiB names are decided, not cached (the cache counts entries, not
    bytes), and authorized-operations lookups live in their own cache, so listing
    many resources cannot flush the decisions Produce and Fetch look up."""
    from kafkette.broker.security.authorizer.authorizer import Authorizer
    from kafkette.broker.security.session import KafkaPrincipal, Session

    authorizer = Authorizer(super_users=frozenset(), allow_if_no_acl=False)
    authorizer.replace_all([acl("hot", Op.WRITE, principal="User:alice"),
                            acl("x", Op.READ, principal="User:alice", pattern=PREFIXED)])
    session = Session("PLAINTEXT", "PLAINTEXT", "10.0.0.1", KafkaPrincipal("User", "alice"))
    assert authorizer.allowed(session, Op.WRITE, TOPIC, "hot")
    long_name = "x" * 32768
    assert authorizer.allowed(session, Op.READ, TOPIC, long_name)
    assert not authorizer.allowed(session, Op.WRITE, TOPIC, long_name)
    for i in range(50):
        mask = authorizer.authorized_operations(session, TOPIC, f"x-{i}")
        assert mask == (1 << Op.READ) | (1 << Op.DESCRIBE)
    assert authorizer.authorized_operations(session, TOPIC, long_name) == mask
    assert list(authorizer._cache) == [("alice", "User", "10.0.0.1", Op.WRITE, TOPIC, "hot")]


def test_ipv6_hosts_match_in_javas_form() -> None:
    """Kafka compares a binding's host with ``getHostAddress()``: ACLs written for Kafka
    (``0:0:0:0:0:0:0:1``) match a client on ``::1``, as do compressed ones; an
    IPv4-mapped client address is its IPv4 address."""
    from kafkette.broker.security.authorizer.matcher import java_host

    assert java_host("::1") == "0:0:0:0:0:0:0:1"
    assert java_host("fe80::0001:ab%eth0") == "fe80:0:0:0:0:0:1:ab%eth0"
    assert java_host("::ffff:10.0.0.1") == "10.0.0.1"
    assert java_host("*") == "*" and java_host("broker.example") == "broker.example"
    index = AclIndex([
        acl("java", Op.READ, host="0:0:0:0:0:0:0:1"),
        acl("short", Op.READ, host="::1"),
        acl("mapped", Op.READ, host="10.0.0.1"),
    ])
    for client in ("::1", "0:0:0:0:0:0:0:1", "0::0:1"):
        assert decide(index, Op.READ, "java", host=client)
        assert decide(index, Op.READ, "short", host=client)
    assert not decide(index, Op.READ, "java", host="::2")
    assert decide(index, Op.READ, "mapped", host="::ffff:10.0.0.1")
    assert index.allows_some("User:alice", "::1", Op.READ, TOPIC)
    assert not index.allows_some("User:alice", "::2", Op.READ, TOPIC)
