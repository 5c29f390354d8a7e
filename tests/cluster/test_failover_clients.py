"""kill -9 of a partition leader under acks=all idempotent load from Kafka's Java client.

Three brokers, replication factor 3, ``min.insync.replicas=2``. Kafka's own
``kafka-verifiable-producer.sh`` (reference Apache Kafka 4.0, the Java client)
produces with ``enable.idempotence=true`` and ``acks=-1``; once a share of its
records is acknowledged the partition's leader is killed with SIGKILL and the
producer carries on by itself. Then: every acknowledged record is in the topic
exactly once, the killed broker comes back, truncates what was never committed,
catches up, rejoins the ISR, and all three replicas hold byte-identical batches.

The same scenario with confluent-kafka and kafka-python producing together is
``test_replication_cluster.py::test_kill_9_leader_under_idempotent_acks_all_load_...``;
the controller, SIGSTOP and rolling-restart variants are in the other
``test_failover_*`` files.
"""

from __future__ import annotations

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RECORDS = 2000
KILL_AFTER_ACKED = 500


def test_java_producer_rides_out_kill_9_of_the_leader(cluster, wait_until) -> None:
    home = fl.kafka_home()
    if home is None:
        pytest.skip("needs java and the reference Kafka (../shared/reference-kafka/kafka-ref)")
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"})
    leader = fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])

    load = fl.JavaLoad(home, c.bootstrap, topic, RECORDS, throughput=400).start()
    wait_until(
        lambda: load.acked_count >= KILL_AFTER_ACKED or load.process.poll() is not None,
        timeout=fl.TIMEOUT,
        what=f"{KILL_AFTER_ACKED} records acknowledged to the Java producer",
    )
    assert load.process.poll() is None, (
        f"the producer ended early: {load.errors[:5]}\n{load.stderr_tail()}"
    )
    before = load.acked_count
    c.kill(leader)
    survivors = [i for i in (1, 2, 3) if i != leader]
    assert c.wait_leader(topic, 0, exclude=(leader,)) in survivors
    acked = load.stop()
    assert load.errors == []
    assert len(acked) == RECORDS > before  # it kept producing after the leader change
    fl.check_exactly_once(fl.read_values(c.bootstrap_of(*survivors), topic), acked)

    c.start(leader)
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)
