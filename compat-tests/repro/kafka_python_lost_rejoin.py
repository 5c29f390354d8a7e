"""Deterministic check for the kafka-python bug ``fam_kafka_python._subscribe`` works around.

Usage: ``python compat-tests/repro/kafka_python_lost_rejoin.py HOST:PORT`` against any broker
(kafkette or Apache Kafka). A consumer owns partition 0 of a new topic; a second partition is
added, so its coordinator wants to rejoin (driven by its metadata snapshot only). One
``poll(timeout_ms=0)`` starts that rejoin and returns; the round trip finishes in the
background. A client without the bug applies the new assignment on a later poll; kafka-python
3.0.12 never does and prints ``BUG``. Exits 1 on ``BUG``, so it can tell when an upgrade of
kafka-python makes the workaround unnecessary. Creates one topic and one group.
"""

from __future__ import annotations

import sys
import time
import uuid

from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic


def main(bootstrap: str) -> int:
    topic = f"lost-rejoin-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=topic,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
        enable_auto_commit=False,
    )
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        consumer.subscribe([topic])
        consumer.partitions_for_topic(topic)
        deadline = time.monotonic() + 15
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        first = sorted(tp.partition for tp in consumer.assignment())
        admin.create_partitions({topic: NewPartitions(2)})
        consumer.topics()  # fresh metadata: the coordinator now wants to rejoin
        consumer.poll(timeout_ms=0)  # starts the rejoin and gives up at once
        time.sleep(2)  # the JoinGroup/SyncGroup round trip finishes meanwhile
        deadline = time.monotonic() + 12
        while len(consumer.assignment()) < 2 and time.monotonic() < deadline:
            consumer.poll(timeout_ms=500)
        final = sorted(tp.partition for tp in consumer.assignment())
    finally:
        consumer.close()
        admin.close()
    verdict = "ok" if final == [0, 1] else "BUG: the rejoin's assignment was never applied"
    print(f"assignment before {first}, 12 s after the partition was added {final}: {verdict}")
    return 0 if final == [0, 1] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
