"""Per-check cost of authorization on the Produce/Fetch path.

Times, with ``timeit``, what a handler pays per topic: the ``topic_denied`` test with
no authorizer (the default: one attribute read and ``is None``), with an authorizer
whose decision is cached (every request after the first for a principal, host and
topic), and an uncached decision against many ACLs (1,000 literal topic bindings and
100 prefixed ones: the first request after an ACL change). Prints nanoseconds per
check. Run: ``python -m bench.authorizer_cost``.
"""

from __future__ import annotations

import timeit
from types import SimpleNamespace

from kafkette.broker.security.authorizer.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkette.broker.security.authorizer.authorizer import Authorizer
from kafkette.broker.security.authorizer.checks import WRITE, topic_denied
from kafkette.broker.security.session import KafkaPrincipal, Session

LITERAL_ACLS = 1000
PREFIXED_ACLS = 100


def _bindings() -> list[AclBinding]:
    topic = ResourceType.TOPIC
    allow = AclPermissionType.ALLOW
    bindings = [
        AclBinding(topic, f"topic-{n}", PatternType.LITERAL, f"User:app-{n % 50}", "*",
                   AclOperation.WRITE, allow)
        for n in range(LITERAL_ACLS)
    ]
    bindings += [
        AclBinding(topic, f"team-{n}-", PatternType.PREFIXED, f"User:app-{n % 50}", "*",
                   AclOperation.READ, allow)
        for n in range(PREFIXED_ACLS)
    ]
    return bindings


def _per_call_ns(statement, number: int) -> float:
    best = min(timeit.repeat(statement, number=number, repeat=5))
    return best / number * 1e9


def main() -> None:
    session = Session("PLAINTEXT", "PLAINTEXT", "127.0.0.1", KafkaPrincipal("User", "app-7"))
    request = SimpleNamespace(session=session)
    none = SimpleNamespace(authorizer=None)
    authorizer = Authorizer(super_users=frozenset(), allow_if_no_acl=False)
    authorizer.replace_all(_bindings())
    secured = SimpleNamespace(authorizer=authorizer)

    print(f"topic_denied per topic ({LITERAL_ACLS} literal + {PREFIXED_ACLS} prefixed ACLs):")
    ns = _per_call_ns(lambda: topic_denied(none, request, WRITE, "topic-7"), 200_000)
    print(f"  no authorizer           {ns:8.0f} ns")
    topic_denied(secured, request, WRITE, "topic-7")  # the decision is now cached
    ns = _per_call_ns(lambda: topic_denied(secured, request, WRITE, "topic-7"), 200_000)
    print(f"  authorizer, cached      {ns:8.0f} ns")

    def uncached() -> None:
        authorizer._cache.clear()
        topic_denied(secured, request, WRITE, "topic-7")

    ns = _per_call_ns(uncached, 20_000)
    print(f"  authorizer, uncached    {ns:8.0f} ns")


if __name__ == "__main__":
    main()
