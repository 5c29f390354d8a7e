"""The nullable request fields handlers know of are exactly those the definitions allow.

``NULLABLE_REQUEST_FIELDS`` says what a null means in each; this test derives the
list again from Kafka's definitions for every (API, version) served, so a new
version or API that makes another field nullable fails here until its meaning is
decided and written down (and the fuzz test then checks that the handler copes).
"""

from __future__ import annotations

from kafkette.broker.handlers.nullable_fields import NULLABLE_REQUEST_FIELDS
from kafkette.wire.apis import SUPPORTED
from kafkette.wire.schema import FieldSpec, in_range, load_message


def _nullable_paths(fields: tuple[FieldSpec, ...], low: int, high: int, prefix: str = ""):
    for f in fields:
        path = prefix + f.name
        if any(
            in_range(v, f.versions) and in_range(v, f.nullable_versions)
            for v in range(low, high + 1)
        ):
            yield path
        if f.fields:
            yield from _nullable_paths(f.fields, low, high, path + ".")


def test_every_nullable_request_field_has_a_decided_meaning() -> None:
    from_definitions = {
        (spec.name, path)
        for spec in SUPPORTED.values()
        for path in _nullable_paths(
            load_message(spec.request_definition).fields, spec.decode_min, spec.max_version
        )
    }
    assert set(NULLABLE_REQUEST_FIELDS) == from_definitions


def test_null_topic_config_value_is_invalid_config(broker, raw_client) -> None:
    """Kafka: INVALID_CONFIG 'Null value not supported for topic configs: <names>'."""
    from kafka.protocol.admin import CreateTopicsRequest

    topic = CreateTopicsRequest.CreatableTopic(
        name="null-config",
        num_partitions=1,
        replication_factor=1,
        assignments=[],
        configs=[
            CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(name="retention.ms", value=None)
        ],
    )
    request = CreateTopicsRequest(topics=[topic], timeout_ms=5000, validate_only=False)
    response = raw_client(broker.bootstrap).request(request, 5)
    result = response.topics[0]
    assert result.error_code == 40  # INVALID_CONFIG
    assert result.error_message == "Null value not supported for topic configs: retention.ms"
