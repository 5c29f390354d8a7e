"""Share groups on /metrics: acknowledgements counted by type, records acquired and
redelivered, from a real ShareConsumer against a ``kafkette serve`` child."""

from __future__ import annotations

from confluent_kafka import AcknowledgeType

from tests.observability.test_metrics_and_request_log import Served, scrape
from tests.share_groups.share_helpers import (
    create_topic,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
)


def test_share_deliveries_are_counted(tmp_path) -> None:
    served = Served(tmp_path, "--log-format", "json", "--metrics-listen", "127.0.0.1:0")
    try:
        before = scrape(served)
        assert not any(name.startswith("kafkette_share") for name, _ in before)
        # No schema registry on this broker: none of its families either.
        assert not any(name.startswith("kafkette_schema_registry") for name, _ in before)
        boot = served.bootstrap
        create_topic(boot, "jobs")
        set_group_configs(boot, "g", share_auto_offset_reset="earliest")
        produce(boot, "jobs", ["a", "b", "c", "d"])
        consumer = share_consumer(boot, "g", "jobs", **{"share.acknowledgement.mode": "explicit"})
        first = poll_until(consumer, lambda got: len(got) >= 4)
        kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.ACCEPT, AcknowledgeType.REJECT,
                 AcknowledgeType.RELEASE]
        for message, kind in zip(first, kinds, strict=True):
            consumer.acknowledge(message, kind)
        consumer.commit_sync()
        again = poll_until(consumer, lambda got: len(got) >= 1)
        consumer.acknowledge(again[0], AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        consumer.close()
        samples = scrape(served)

        def count(name: str, **labels: str) -> float:
            return samples[(name, frozenset(labels.items()))]

        acked = "kafka_server_share_group_metrics_record_acknowledgement_total"
        assert count(acked, ack_type="Accept") == 3
        assert count(acked, ack_type="Reject") == 1
        assert count(acked, ack_type="Release") == 1
        assert count("kafkette_share_records_acquired_total") == 5
        assert count("kafkette_share_records_redelivered_total") == 1
    finally:
        served.stop()
