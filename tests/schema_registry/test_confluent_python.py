"""confluent-kafka's own schema registry client and serializers against kafkette's registry
(issue 32): Avro, Protobuf and JSON Schema records round-trip through a real broker, and
evolutions are accepted or refused (409) per compatibility level and per type as Confluent
defines them.

One embedded broker with the registry for the module; every test uses its own subjects.
The Protobuf message classes are compiled at test time with grpcio-tools' protoc.
"""

from __future__ import annotations

import importlib
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kafkette.broker.schema_registry.config import COMPATIBILITY_LEVELS
from kafkette.testing import KafkaBroker, broker

RECORDS = 20


@pytest.fixture(scope="module")
def registry_broker() -> Iterator[KafkaBroker]:
    with broker(schema_registry=True) as running:
        yield running


@pytest.fixture(scope="module")
def client(registry_broker: KafkaBroker) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": registry_broker.schema_registry_url})


def _subject(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _round_trip(kb: KafkaBroker, serialize, deserialize, values: list) -> list:
    """Produce ``values`` serialized, read them back deserialized, in order."""
    topic = kb.create_topic()
    producer = Producer({"bootstrap.servers": kb.bootstrap})
    for value in values:
        ctx = SerializationContext(topic, MessageField.VALUE)
        producer.produce(topic, value=serialize(value, ctx))
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": kb.bootstrap,
            "group.id": _subject("serdes"),
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list = []
    try:
        for _ in range(120):
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            ctx = SerializationContext(topic, MessageField.VALUE)
            out.append(deserialize(msg.value(), ctx))
            if len(out) == len(values):
                break
    finally:
        consumer.close()
    return out


CLICK_V1 = """{"type": "record", "name": "Click", "namespace": "demo", "fields": [
  {"name": "user", "type": "string"}, {"name": "n", "type": "int"},
  {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}"""


def test_avro_round_trip(registry_broker: KafkaBroker, client: SchemaRegistryClient) -> None:
    serializer = AvroSerializer(client, CLICK_V1)
    deserializer = AvroDeserializer(client)
    values = [{"user": f"u{i}", "n": i, "at": 1_700_000_000_000 + i} for i in range(RECORDS)]
    back = _round_trip(registry_broker, serializer, deserializer, values)
    assert [(v["user"], v["n"]) for v in back] == [(v["user"], v["n"]) for v in values]
    # One registration, found again by lookup: the id the serializer used is the subject's.
    subjects = client.get_subjects()
    assert any(s.endswith("-value") for s in subjects)


PROTO_COMMON = """syntax = "proto3";
package demo.common;

message Money {
  string currency = 1;
  int64 units = 2;
}
"""

PROTO_ORDER = """syntax = "proto3";
package demo;

import "demo/common.proto";
import "google/protobuf/timestamp.proto";

message Order {
  string id = 1;
  demo.common.Money total = 2;
  repeated string tags = 3;
  google.protobuf.Timestamp placed = 4;
  map<string, int32> counts = 5;
  oneof channel {
    string web = 6;
    string shop = 7;
  }
}
"""


def _compile_protos(tmp: Path) -> object:
    """``demo/order_pb2`` compiled from the two files above and imported."""
    from grpc_tools import protoc

    (tmp / "demo").mkdir()
    (tmp / "demo" / "common.proto").write_text(PROTO_COMMON)
    (tmp / "demo" / "order.proto").write_text(PROTO_ORDER)
    include = Path(protoc.__file__).parent / "_proto"
    code = protoc.main(
        ["protoc", f"-I{tmp}", f"-I{include}", f"--python_out={tmp}",
         "demo/common.proto", "demo/order.proto"]
    )  # fmt: skip
    assert code == 0
    sys.path.insert(0, str(tmp))
    try:
        return importlib.import_module("demo.order_pb2")
    finally:
        sys.path.remove(str(tmp))


def test_protobuf_round_trip_with_a_reference(
    registry_broker: KafkaBroker, client: SchemaRegistryClient, tmp_path_factory
) -> None:
    order_pb2 = _compile_protos(tmp_path_factory.mktemp("protos"))
    serializer = ProtobufSerializer(order_pb2.Order, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(order_pb2.Order, {"use.deprecated.format": False})
    values = []
    for i in range(RECORDS):
        order = order_pb2.Order(id=f"o{i}", tags=["a", str(i)], web=f"w{i}")
        order.total.currency, order.total.units = "EUR", 100 * i
        order.placed.seconds = 1_700_000_000 + i
        order.counts["x"] = i
        values.append(order)
    back = _round_trip(registry_broker, serializer, deserializer, values)
    assert back == values
    # The import became a reference to its own subject (the reference subject strategy).
    assert "demo/common.proto" in client.get_subjects()


ORDER_JSON = """{"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order",
 "type": "object", "properties": {"id": {"type": "string"}, "cents": {"type": "integer"}},
 "required": ["id"]}"""


def test_json_schema_round_trip(registry_broker: KafkaBroker, client: SchemaRegistryClient) -> None:
    serializer = JSONSerializer(ORDER_JSON, client)
    deserializer = JSONDeserializer(ORDER_JSON)
    values = [{"id": f"o{i}", "cents": 100 * i} for i in range(RECORDS)]
    assert _round_trip(registry_broker, serializer, deserializer, values) == values


def _avro(*fields: str) -> str:
    return '{"type":"record","name":"R","namespace":"demo","fields":[' + ",".join(fields) + "]}"


A = '{"name":"a","type":"int"}'
B = '{"name":"b","type":"int"}'
B_DEFAULT = '{"name":"b","type":"int","default":0}'


def _json(properties: dict[str, str], description: str = "") -> str:
    props = ",".join(f'"{name}":{{"type":"{kind}"}}' for name, kind in properties.items())
    extra = f',"description":"{description}"' if description else ""
    return '{"type":"object","properties":{' + props + "}" + extra + "}"


def _proto(*fields: str) -> str:
    return (
        'syntax = "proto3";\npackage demo;\n\nmessage R {\n'
        + "".join(f"  {field};\n" for field in fields)
        + "}\n"
    )


ALL_LEVELS = COMPATIBILITY_LEVELS

# (type, history, evolution, levels that accept it). Avro follows Avro's schema resolution;
# JSON Schema Confluent's diff (adding a property to an open content model breaks BACKWARD,
# removing one does not); Protobuf Confluent's diff (a new field number is compatible both
# ways, a field changing scalar group is not).
EVOLUTIONS = [
    ("AVRO", [_avro(A)], _avro(A, B_DEFAULT), ALL_LEVELS),
    ("AVRO", [_avro(A)], _avro(A, B), ("NONE", "FORWARD", "FORWARD_TRANSITIVE")),
    ("AVRO", [_avro(A, B)], _avro(A), ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE")),
    # The previous version is fine, the first is not: only the transitive level sees it.
    (
        "AVRO",
        [_avro(A), _avro(A, B_DEFAULT)],
        _avro(A, B),
        ("NONE", "BACKWARD", "FORWARD", "FORWARD_TRANSITIVE", "FULL"),
    ),
    (
        "AVRO",
        [_avro(A, B), _avro(A, B_DEFAULT)],
        _avro(A),
        ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FULL"),
    ),
    ("JSON", [_json({"id": "string"})], _json({"id": "string"}, "orders"), ALL_LEVELS),
    ("JSON", [_json({"id": "string"})], _json({"id": "integer"}), ("NONE",)),
    (
        "JSON",
        [_json({"id": "string"})],
        _json({"id": "string", "note": "string"}),
        ("NONE", "FORWARD", "FORWARD_TRANSITIVE"),
    ),
    ("PROTOBUF", [_proto("string id = 1")], _proto("string id = 1", "int64 cents = 2"), ALL_LEVELS),
    ("PROTOBUF", [_proto("string id = 1")], _proto("int32 id = 1"), ("NONE",)),
]


@pytest.mark.parametrize(("schema_type", "history", "evolution", "accepting"), EVOLUTIONS)
def test_evolution_per_level(
    client: SchemaRegistryClient,
    schema_type: str,
    history: list[str],
    evolution: str,
    accepting: tuple[str, ...],
) -> None:
    for level in ALL_LEVELS:
        subject = _subject(f"evolve-{schema_type.lower()}-{level.lower()}")
        assert client.set_compatibility(subject, level) == {"compatibility": level}
        assert client.get_compatibility(subject) == level
        for text in history:
            client.register_schema(subject, Schema(text, schema_type))
        new = Schema(evolution, schema_type)
        expected = level in accepting
        # Against every version: a transitive level compares them all (against ``latest``
        # only, Confluent compares that one version whatever the level).
        assert client.test_compatibility_all_versions(subject, new) is expected, level
        if expected:
            assert client.register_schema(subject, new) > 0
            assert len(client.get_versions(subject)) == len(history) + 1
        else:
            with pytest.raises(SchemaRegistryError) as refused:
                client.register_schema(subject, new)
            assert refused.value.http_status_code == 409, level
            assert refused.value.error_code == 409, level
            assert "is incompatible with an earlier schema" in refused.value.error_message
            assert len(client.get_versions(subject)) == len(history)


def test_same_schema_same_id_across_subjects_and_deletes(client: SchemaRegistryClient) -> None:
    text = _avro(A, '{"name":"tag","type":"string"}')
    first, second = _subject("same-a"), _subject("same-b")
    id_a = client.register_schema(first, Schema(text, "AVRO"))
    # Whitespace does not matter: the registry stores the canonical text.
    id_b = client.register_schema(second, Schema(text.replace(",", ", "), "AVRO"))
    assert id_a == id_b
    assert sorted(client.get_subjects_by_schema_id(id_a)) == sorted([first, second])
    assert client.delete_subject(first) == [1]
    assert first not in client.get_subjects()
    # A soft-deleted version still resolves by id; a permanent delete needs the soft one first.
    assert client.get_schema(id_a).schema_str
    assert client.delete_subject(first, permanent=True) == [1]
    with pytest.raises(SchemaRegistryError) as gone:
        client.get_latest_version(first)
    assert gone.value.error_code == 40401
