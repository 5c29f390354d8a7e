"""A batch refused for a short ISR does not make its pipelined successor out of order.

Found by bench.nemesis: a leader answered batch N of an idempotent producer
NOT_ENOUGH_REPLICAS (ISR below min.insync.replicas), the ISR grew back a moment later, and
batch N+1, already in flight, was judged out of order; librdkafka then bumped its epoch and
re-sent, under new sequences, records of other partitions whose outcome it did not know:
duplicates. With a producer the leader had no state for, N+1 was even appended without N,
and librdkafka took N as persisted (an acknowledged record lost). The leader now answers N+1
as it answered N (broker/partitions/sequence_gaps.py) and the producer retries both in order.
Raw requests, so the sequences are the test's.
"""

from __future__ import annotations

from kafkette.wire.apis import ApiKey
from kafkette.wire.records import Record, build_batch
from tests.cluster import failover_load as fl
from tests.cluster import zk_wire

NOT_ENOUGH_REPLICAS = 19
OUT_OF_ORDER_SEQUENCE_NUMBER = 45


def test_a_batch_after_one_refused_for_a_short_isr_gets_the_same_answer(cluster, wait_until):
    brokers = cluster(brokers=2, configs={"replica.lag.time.max.ms": "1500"})
    topic = fl.create_topic(brokers.bootstrap, configs={"min.insync.replicas": "2"},
                            assignment=[1, 2])  # fmt: skip
    leader = brokers.brokers[1].address
    error, producer_id = zk_wire.init_producer_id(leader)
    assert error == 0
    error, newcomer = zk_wire.init_producer_id(leader)  # its first batch meets the short ISR
    assert error == 0

    def produce(sequence: int, producer: int = producer_id) -> dict:
        batch = build_batch([Record(0, 0, None, b"v%d" % sequence)], producer_id=producer,
                            producer_epoch=0, base_sequence=sequence)  # fmt: skip
        body = fl.produce_body(topic, -1, [])
        body["topic_data"][0]["partition_data"][0]["records"] = batch
        connection = fl.RawConnection(leader)
        try:
            connection.send(ApiKey.PRODUCE, 8, body)
            return connection.receive().body["responses"][0]["partition_responses"][0]
        finally:
            connection.close()

    assert produce(0)["error_code"] == 0
    brokers.freeze(2)  # the follower stops fetching: the leader drops it from the ISR
    wait_until(lambda: brokers.partition_state(topic, 0)["isr"] == [1], what="ISR [1]")
    assert produce(1)["error_code"] == NOT_ENOUGH_REPLICAS
    assert produce(0, newcomer)["error_code"] == NOT_ENOUGH_REPLICAS
    brokers.thaw(2)
    wait_until(lambda: sorted(brokers.partition_state(topic, 0)["isr"]) == [1, 2],
               what="ISR [1, 2]")  # fmt: skip
    answer = produce(2)  # pipelined behind 1, which the leader refused: not out of order
    assert answer["error_code"] == NOT_ENOUGH_REPLICAS, answer
    assert [(a["error_code"], a["base_offset"]) for a in (produce(1), produce(2))] == [
        (0, 1),
        (0, 2),
    ]
    # A producer the leader has no state for would have had any first sequence accepted:
    # batch 1 appended without 0, and librdkafka would have taken 0 as persisted too.
    answer = produce(1, newcomer)
    assert answer["error_code"] == NOT_ENOUGH_REPLICAS, answer
    answers = [produce(0, newcomer), produce(1, newcomer)]
    assert [(a["error_code"], a["base_offset"]) for a in answers] == [(0, 3), (0, 4)]
    # The producer's own gap, once nothing of it was refused: out of order, as Kafka says.
    assert produce(4)["error_code"] == OUT_OF_ORDER_SEQUENCE_NUMBER
