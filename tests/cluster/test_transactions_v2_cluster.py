"""Transactions v2 (KIP-890 part 2) in a cluster: leaders add partitions at the coordinator.

Three brokers; a replicated three-partition topic whose leaders are spread over them, so
most partitions a transaction writes are led by brokers other than the transactional id's
coordinator. Kafka's Java client 4.0 (transaction.version 2 finalized: no AddPartitionsToTxn,
no AddOffsetsToTxn) commits and aborts transactions with ``sendOffsetsToTransaction``: each
leader has to add its partition at the coordinator (AddPartitionsToTxn v5, verify_only
false, broker to broker), and the group coordinator its offsets partition, or the partition
would get no marker and its last stable offset would stay behind the transaction for ever.
A read_committed consumer then reads exactly the committed records, the group's offset is the
last commit's, and the epoch went up by one per transaction.
"""

from __future__ import annotations

import uuid

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster import zk_wire
from tests.java_txn_loop import committed_offset, java_classpath, read_committed, run_txn_loop

CONFIGS = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
}
PARTITIONS = 3
TRANSACTIONS = 7  # aborts at 2 and 5
PER_TRANSACTION = 6
KEY_TYPE_TRANSACTION = 1


def test_java_client_tv2_transactions_across_leaders(cluster, wait_until) -> None:
    classpath = java_classpath("4.0")
    built = cluster(3, configs=CONFIGS)
    topic = "tv2-" + uuid.uuid4().hex[:8]
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    admin.create_topics(
        [NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})],
        request_timeout=30,
    )[topic].result(30)
    leaders = {built.wait_leader(topic, p) for p in range(PARTITIONS)}
    assert len(leaders) > 1, "the topic's leaders should be spread over the brokers"
    transactional_id = "tv2-" + uuid.uuid4().hex[:8]
    group = "tv2-group-" + uuid.uuid4().hex[:8]

    ends = run_txn_loop(
        classpath, built.bootstrap, topic, transactional_id, group, TRANSACTIONS, PER_TRANSACTION
    )

    assert [e["epoch"] for e in ends] == list(range(1, TRANSACTIONS + 1))
    assert len({e["producer_id"] for e in ends}) == 1
    committed = [e["txn"] for e in ends if e["committed"]]
    expected = sorted(f"t{i}-{j}" for i in committed for j in range(PER_TRANSACTION))
    assert sorted(read_committed(built.bootstrap, topic, PARTITIONS)) == expected
    assert committed_offset(built.bootstrap, group, topic) == committed[-1] + 1

    def coordinator() -> int | None:
        for broker_id in built.running():
            error, node = zk_wire.find_coordinator(
                built.brokers[broker_id].address, transactional_id, KEY_TYPE_TRANSACTION
            )
            if error == 0 and node >= 0:
                return node
        return None

    # Leaders other than the coordinator wrote into the transactions: their adds were remote.
    assert leaders - {wait_until(coordinator, what="the transaction coordinator")}
