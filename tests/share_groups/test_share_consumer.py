"""confluent-kafka's ShareConsumer (librdkafka 2.16) against kafkette, over real sockets:
queue semantics as Kafka 4.3 serves them. Every record delivered to one member at a
time; implicit and explicit acknowledgement; RELEASE redelivers with the delivery count
up, REJECT never; an expired acquisition lock or a closed consumer gives records back;
the delivery count limit archives; commit_sync/commit_async report to the callback;
share.isolation.level=read_committed never delivers an aborted transaction."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, DeserializingShareConsumer, KafkaError, Producer
from confluent_kafka.serialization import StringDeserializer

from tests.share_groups.share_helpers import (
    create_topic,
    nothing_more,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
    values,
)


def test_implicit_acknowledgement_delivers_each_record_once(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, [f"v{i}" for i in range(50)])
    consumer = share_consumer(boot, group, topic)
    got = poll_until(consumer, lambda got: len(got) >= 50)
    assert sorted(values(got), key=lambda v: int(v[1:])) == [f"v{i}" for i in range(50)]
    assert {m.delivery_count() for m in got} == {1}
    # Implicit mode accepts a poll's records on the next poll or commit; librdkafka's
    # close() does not (it sends an empty final ShareAcknowledge): commit first.
    consumer.commit_sync()
    consumer.close()
    # A new member of the group finds nothing left: every record was accepted.
    again = share_consumer(boot, group, topic)
    assert nothing_more(again, 3.0) == []
    produce(boot, topic, ["late"])
    assert values(poll_until(again, lambda got: len(got) >= 1)) == ["late"]
    again.close()


def test_latest_is_the_default_start(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    produce(boot, topic, ["before"])
    consumer = share_consumer(boot, group, topic)
    nothing_more(consumer, 2.0)  # joins, and the share partition starts at the end
    produce(boot, topic, ["after"])
    assert values(poll_until(consumer, lambda got: len(got) >= 1)) == ["after"]
    consumer.close()


def test_several_consumers_share_one_partition(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    explicit = {"share.acknowledgement.mode": "explicit"}
    consumers = [share_consumer(boot, group, topic, **explicit) for _ in range(3)]
    for consumer in consumers:
        nothing_more(consumer, 1.0)  # every member has joined and has the partition
    # Small log batches, so one fetch (at most 500 records) cannot take all 1,200.
    producer = Producer({"bootstrap.servers": boot, "batch.num.messages": 20})
    for i in range(1200):
        producer.produce(topic, value=str(i).encode(), partition=0)
    assert producer.flush(10) == 0
    seen: dict[int, list[str]] = {i: [] for i in range(3)}
    deadline = time.monotonic() + 30
    while sum(len(v) for v in seen.values()) < 1200 and time.monotonic() < deadline:
        for i, consumer in enumerate(consumers):
            batch = consumer.poll(0.2) or []
            for m in batch:
                assert m.error() is None, m.error()
                seen[i].append(m.value().decode())
            # A member holds what it got (locked to it) until its next round.
            for m in batch:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    everything = [v for vs in seen.values() for v in vs]
    assert sorted(everything, key=int) == [str(i) for i in range(1200)]  # once each
    assert sum(1 for vs in seen.values() if vs) >= 2, {i: len(v) for i, v in seen.items()}
    for consumer in consumers:
        consumer.commit_sync()
        consumer.close()


def test_release_redelivers_and_reject_never(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, ["keep", "again", "poison"])
    consumer = share_consumer(boot, group, topic, **{"share.acknowledgement.mode": "explicit"})
    first = poll_until(consumer, lambda got: len(got) >= 3)
    for m in first:
        kind = {"keep": AcknowledgeType.ACCEPT, "again": AcknowledgeType.RELEASE,
                "poison": AcknowledgeType.REJECT}[m.value().decode()]
        consumer.acknowledge(m, kind)
    consumer.commit_sync()
    second = poll_until(consumer, lambda got: len(got) >= 1)
    assert values(second) == ["again"]
    assert second[0].delivery_count() == 2 and second[0].offset() == first[1].offset()
    consumer.acknowledge(second[0], AcknowledgeType.ACCEPT)
    consumer.commit_sync()
    assert nothing_more(consumer, 1.0) == []
    consumer.close()


def test_an_expired_lock_gives_the_records_to_another_member(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="1500")
    produce(boot, topic, ["a", "b"])
    holder = share_consumer(boot, group, topic, **{"share.acknowledgement.mode": "explicit"})
    held = poll_until(holder, lambda got: len(got) >= 2)
    assert values(held) == ["a", "b"]
    other = share_consumer(boot, group, topic)
    # The holder never acknowledges: after 1.5 s the records are the other's, second delivery.
    redelivered = poll_until(other, lambda got: len(got) >= 2, timeout=15)
    assert values(redelivered) == ["a", "b"]
    assert {m.delivery_count() for m in redelivered} == {2}
    other.close()
    holder.close()


def test_closing_gives_back_what_was_not_acknowledged(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, ["x", "y"])
    first = share_consumer(boot, group, topic, **{"share.acknowledgement.mode": "explicit"})
    got = poll_until(first, lambda got: len(got) >= 2)
    first.acknowledge(got[0], AcknowledgeType.ACCEPT)
    first.close()  # sends x's ACCEPT; y was never acknowledged: released at once
    started = time.monotonic()
    second = share_consumer(boot, group, topic)
    again = poll_until(second, lambda got: len(got) >= 1)
    assert values(again) == ["y"] and again[0].delivery_count() == 2
    assert time.monotonic() - started < 20  # not after the 30 s lock
    second.close()


def test_the_delivery_count_limit_archives(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest",
                      share_delivery_count_limit="2")
    produce(boot, topic, ["bad", "good"])
    consumer = share_consumer(boot, group, topic, **{"share.acknowledgement.mode": "explicit"})
    counts = []
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        batch = consumer.poll(0.5) or []
        for m in batch:
            if m.value() == b"bad":
                counts.append(m.delivery_count())
                consumer.acknowledge(m, AcknowledgeType.RELEASE)
            else:
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        if batch:
            consumer.commit_sync()
        if len(counts) >= 2:
            break
    assert counts == [1, 2]
    assert nothing_more(consumer, 1.0) == []  # archived after its second delivery
    consumer.close()


def test_commit_callbacks_report_the_acknowledged_offsets(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, ["p", "q", "r"])
    reported: list = []
    consumer = share_consumer(boot, group, topic, **{"share.acknowledgement.mode": "explicit"})
    consumer.set_acknowledgement_commit_callback(
        lambda offsets, error: reported.append((offsets, error)))
    got = poll_until(consumer, lambda got: len(got) >= 3)
    consumer.acknowledge(got[0], AcknowledgeType.ACCEPT)
    consumer.commit_sync()
    for m in got[1:]:
        consumer.acknowledge_offset(m.topic(), m.partition(), m.offset(), AcknowledgeType.ACCEPT)
    consumer.commit_async()
    deadline = time.monotonic() + 10
    while len(reported) < 2 and time.monotonic() < deadline:
        consumer.poll(0.2)
    acknowledged = set()
    for offsets, error in reported:
        assert error is None, error
        for tp, offs in offsets.items():
            assert (tp.topic, tp.partition) == (topic, 0)
            acknowledged |= set(offs)
    assert acknowledged == {m.offset() for m in got}
    consumer.close()


def test_deserializing_share_consumer(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, ["héllo"])
    consumer = DeserializingShareConsumer({
        "bootstrap.servers": boot, "group.id": group,
        "value.deserializer": StringDeserializer("utf_8"),
    })
    consumer.subscribe([topic])
    got = poll_until(consumer, lambda got: len(got) >= 1)
    assert [m.value() for m in got] == ["héllo"]
    consumer.close()


def test_read_committed_never_delivers_an_aborted_transaction(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    set_group_configs(boot, group, share_auto_offset_reset="earliest",
                      share_isolation_level="read_committed")
    producer = Producer({"bootstrap.servers": boot,
                         "transactional.id": f"share-txn-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(10)
    for label, commit in (("c1", True), ("a1", False), ("c2", True)):
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, value=f"{label}-{i}".encode(), partition=0)
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    consumer = share_consumer(boot, group, topic)
    got = poll_until(consumer, lambda got: len(got) >= 6)
    got += nothing_more(consumer, 1.0)
    assert values(got) == [f"{t}-{i}" for t in ("c1", "c2") for i in range(3)]
    consumer.close()


def test_a_share_group_id_is_not_a_consumer_group(broker, names) -> None:
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic)
    sharer = share_consumer(boot, group, topic)
    nothing_more(sharer, 1.0)  # joined
    from confluent_kafka import Consumer

    classic = Consumer({"bootstrap.servers": boot, "group.id": group, "group.protocol": "consumer"})
    classic.subscribe([topic])
    deadline = time.monotonic() + 15
    error = None
    while error is None and time.monotonic() < deadline:
        m = classic.poll(0.5)
        if m is not None and m.error() is not None:
            error = m.error()
    # GROUP_ID_NOT_FOUND, which librdkafka makes a fatal error of its consumer
    assert error is not None and error.code() == KafkaError._FATAL, error
    assert "group id does not exist" in error.str(), error
    classic.close()
    sharer.close()


@pytest.mark.parametrize("value", ["0", "11"])
def test_group_configs_keep_kafkas_bounds(broker, names, value) -> None:
    _topic, group = names
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException) as refused:
        set_group_configs(broker.bootstrap, group, share_delivery_count_limit=value)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG


def test_an_empty_partition_does_not_hide_the_others(broker, names) -> None:
    """A partition with nothing to acquire is answered with empty records, never null:
    librdkafka drops a whole ShareFetch answer with a null record set."""
    topic, group = names
    boot = broker.bootstrap
    create_topic(boot, topic, partitions=2)
    set_group_configs(boot, group, share_auto_offset_reset="earliest")
    produce(boot, topic, [f"only-{i}" for i in range(10)], partition=1)
    consumer = share_consumer(boot, group, topic)
    got = poll_until(consumer, lambda got: len(got) >= 10, timeout=15)
    assert sorted(values(got)) == sorted(f"only-{i}" for i in range(10))
    assert {m.partition() for m in got} == {1}
    consumer.commit_sync()
    consumer.close()
