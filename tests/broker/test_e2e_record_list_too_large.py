"""A record set larger than the topic's segment.bytes is refused as Kafka does it.

Kafka's log refuses such an append with RecordBatchTooLargeException, which
clients see as RECORD_LIST_TOO_LARGE (18); it is not a storage failure
(KAFKA_STORAGE_ERROR would make an idempotent client retry it forever).
"""

from __future__ import annotations

from kafkette.wire.records import build_batch_from_values

RECORD_LIST_TOO_LARGE = 18


def test_batch_over_segment_bytes_is_record_list_too_large(
    broker, create_topic, raw_client
) -> None:
    topic = create_topic(broker.bootstrap, 1, configs={"segment.bytes": "1024"})
    connection = raw_client(broker.bootstrap)
    big = build_batch_from_values([(None, b"x" * 600), (None, b"y" * 600)])
    assert len(big) > 1024
    refused = connection.produce(topic, 0, big)
    assert refused.error_code == RECORD_LIST_TOO_LARGE
    assert refused.base_offset == -1
    # Nothing was stored and the partition still takes batches that fit.
    small = build_batch_from_values([(None, b"fits")])
    accepted = connection.produce(topic, 0, small)
    assert accepted.error_code == 0
    assert accepted.base_offset == 0
