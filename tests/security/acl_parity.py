"""ACL parity scenarios: the same steps against any bootstrap, each outcome as Kafka's
error name, printed as JSON, to diff kafkette against the reference Kafka 4.0.

Both brokers: PLAINTEXT, ``authorizer.class.name=org.apache.kafka.metadata.authorizer.
StandardAuthorizer``, ``allow.everyone.if.no.acl.found=true``, no super user (the
client is User:ANONYMOUS; a resource no ACL covers is open, so it may manage ACLs)::

    python tests/security/acl_parity.py open 127.0.0.1:9092 > kafkette.json
    KAFKA_REF_CONFIG=$'authorizer.class.name=org.apache.kafka.metadata.authorizer.'\
'StandardAuthorizer\\nallow.everyone.if.no.acl.found=true' kafka-ref start 29192
    python tests/security/acl_parity.py open 127.0.0.1:29192 > kafka.json

``open`` closes some topics, a group and a transactional id with ACLs; ``cluster`` (run
after it) then covers the cluster resource, so ACL management and cluster operations
are refused. Session 26 found every outcome identical on Kafka 4.0 (names aside).
Not a test: it needs the reference Kafka, and each run makes new random names.
"""

from __future__ import annotations

import json
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

# Run as a script: the repository root on sys.path, for the helpers beside this file.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.security import acl_support as support

DENY = AclPermissionType.DENY
PREFIXED = ResourcePatternType.PREFIXED
TIMEOUT = 15


class Run:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.admin = support.admin(bootstrap)
        self.tag = uuid.uuid4().hex[:6]
        self.outcomes: dict[str, str] = {}

    def step(self, name: str, action: Callable[[], object]) -> None:
        try:
            result = action()
            self.outcomes[name] = "OK" if result is None else str(result)
        except KafkaException as exc:
            self.outcomes[name] = exc.args[0].name()
        except Exception as exc:  # a client-side failure is an outcome too
            self.outcomes[name] = f"{type(exc).__name__}: {str(exc)[:80]}"

    def create_topic(self, topic: str) -> None:
        self.admin.create_topics([NewTopic(topic, 1)], request_timeout=20)[topic].result(20)

    def produce(self, topic: str, **extra: object) -> str:
        outcome: list = []
        producer = Producer({"bootstrap.servers": self.bootstrap, "message.timeout.ms": 8000,
                             "enable.idempotence": False, **extra})
        producer.produce(topic, b"v", on_delivery=lambda err, _msg: outcome.append(err))
        producer.flush(TIMEOUT)
        return outcome[0].name() if outcome and outcome[0] else "OK"

    def consume(self, topic: str, group: str) -> str:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + TIMEOUT
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None:
                    return msg.error().name() if msg.error() else "GOT"
            return "NOTHING"
        finally:
            consumer.close()


def open_scenario(run: Run) -> None:
    tag = run.tag
    closed, read_only, hidden = f"deny-{tag}", f"ro{tag}-x", f"hid-{tag}"
    group, transactional_id = f"g-{tag}", f"txn-{tag}"
    for topic in (closed, read_only, hidden):
        run.step(f"create {topic[:3]}", lambda t=topic: run.create_topic(t))
    run.step("produce before ACLs", lambda: run.produce(closed))
    support.create_acls(run.admin, [
        support.binding(ResourceType.TOPIC, closed, AclOperation.WRITE),
        support.binding(ResourceType.TOPIC, closed, AclOperation.ALL, DENY, principal="User:*"),
        support.binding(ResourceType.TOPIC, f"ro{tag}", AclOperation.READ, principal="User:*",
                        pattern=PREFIXED),
        support.binding(ResourceType.TOPIC, hidden, AclOperation.WRITE, principal="User:alice"),
        support.binding(ResourceType.GROUP, group, AclOperation.READ, DENY),
        support.binding(ResourceType.TRANSACTIONAL_ID, transactional_id, AclOperation.WRITE,
                        DENY),
    ])
    time.sleep(2)  # Kafka applies ACLs from its metadata log
    run.step("produce denied", lambda: run.produce(closed))
    run.step("produce read-only", lambda: run.produce(read_only))
    run.step("consume read-only", lambda: run.consume(read_only, f"g2-{tag}"))
    run.step("consume denied topic", lambda: run.consume(closed, f"g3-{tag}"))
    run.step("consume denied group", lambda: run.consume(read_only, group))
    run.step("hidden listed", lambda: hidden in run.admin.list_topics(timeout=10).topics)
    run.step("hidden described", lambda: run.admin.describe_topics(
        TopicCollection([hidden]), request_timeout=10)[hidden].result(10) and None)
    run.step("read-only operations", lambda: sorted(
        op.name for op in run.admin.describe_topics(
            TopicCollection([read_only]), request_timeout=10,
            include_authorized_operations=True,
        )[read_only].result(10).authorized_operations))

    def init_transactions() -> None:
        Producer({"bootstrap.servers": run.bootstrap,
                  "transactional.id": transactional_id}).init_transactions(TIMEOUT)

    run.step("init transactions", init_transactions)

    def invalid_bindings() -> list[str]:
        futures = run.admin.create_acls([
            AclBinding(ResourceType.BROKER, "x", ResourcePatternType.LITERAL, "User:a", "*",
                       AclOperation.ALTER, AclPermissionType.ALLOW),
            support.binding(ResourceType.TOPIC, "t", AclOperation.READ, principal="alice"),
        ], request_timeout=10)
        answers = []
        for future in futures.values():
            try:
                future.result(10)
                answers.append("OK")
            except KafkaException as exc:
                answers.append(f"{exc.args[0].name()}: {exc.args[0].str()[:70]}")
        return answers

    run.step("invalid bindings", invalid_bindings)
    match = AclBindingFilter(ResourceType.TOPIC, read_only, ResourcePatternType.MATCH, None,
                             None, AclOperation.ANY, AclPermissionType.ANY)
    run.step("describe MATCH", lambda: sorted(
        (b.resource_pattern_type.name, b.operation.name)
        for b in run.admin.describe_acls(match, request_timeout=10).result(10)))
    alices = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, "User:alice",
                              None, AclOperation.ANY, AclPermissionType.ANY)
    run.step("delete alice's", lambda: sorted(
        b.operation.name
        for b in run.admin.delete_acls([alices], request_timeout=10)[alices].result(10)))
    run.step("create covered topic", lambda: run.create_topic(f"ro{tag}-new"))
    run.step("delete denied topic", lambda: run.admin.delete_topics(
        [closed], request_timeout=20)[closed].result(20))
    run.step("describe denied group", lambda: run.admin.describe_consumer_groups(
        [group], request_timeout=10)[group].result(10) and None)


def cluster_scenario(run: Run) -> None:
    tag = run.tag
    covered = f"cov{tag}-a"
    run.step("create covered", lambda: run.create_topic(covered))
    support.create_acls(run.admin, [
        support.binding(ResourceType.TOPIC, f"cov{tag}", AclOperation.READ, pattern=PREFIXED),
        support.binding(ResourceType.BROKER, "kafka-cluster", AclOperation.CLUSTER_ACTION),
    ])
    time.sleep(2)
    run.step("create ACL", lambda: support.create_acls(
        run.admin, [support.binding(ResourceType.TOPIC, "x", AclOperation.READ)]))
    run.step("create fresh topic", lambda: run.create_topic(f"fresh-{tag}"))
    run.step("create covered topic", lambda: run.create_topic(f"cov{tag}-b"))
    run.step("delete covered", lambda: run.admin.delete_topics(
        [covered], request_timeout=20)[covered].result(20))
    run.step("partitions covered", lambda: run.admin.create_partitions(
        [NewPartitions(covered, 2)], request_timeout=20)[covered].result(20))
    run.step("cluster operations", lambda: sorted(
        op.name for op in run.admin.describe_cluster(
            request_timeout=10, include_authorized_operations=True
        ).result(10).authorized_operations or []))

    def describe(resource: ConfigResource) -> None:
        for future in run.admin.describe_configs([resource], request_timeout=10).values():
            future.result(10)

    run.step("describe broker configs",
             lambda: describe(ConfigResource(ConfigResource.Type.BROKER, "1")))
    run.step("describe topic configs",
             lambda: describe(ConfigResource(ConfigResource.Type.TOPIC, covered)))

    def alter_topic_configs() -> None:
        entry = ConfigEntry("retention.ms", "1000",
                            incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource(ConfigResource.Type.TOPIC, covered,
                                  incremental_configs=[entry])
        for future in run.admin.incremental_alter_configs(
            [resource], request_timeout=10
        ).values():
            future.result(10)

    run.step("alter topic configs", alter_topic_configs)
    run.step("idempotent produce", lambda: run.produce(f"fresh-{tag}", **{
        "enable.idempotence": True}))


def main() -> None:
    scenario, bootstrap = sys.argv[1], sys.argv[2]
    run = Run(bootstrap)
    {"open": open_scenario, "cluster": cluster_scenario}[scenario](run)
    print(json.dumps(run.outcomes, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
