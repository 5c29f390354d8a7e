"""Apache Kafka's own transaction tooling (the reference Kafka 4.0's scripts) against the broker
under test (issue 14):

* ``test_producer_perf_test_transactional``: ``kafka-producer-perf-test.sh --transactional-id
  ... --transaction-duration-ms 200`` completes, and a read_committed consumer counts every
  record; the log holds one commit marker per transaction (several transactions ran).
* ``test_kafka_transactions_abort_hanging``: a producer begins a transaction, writes records
  and is killed (SIGKILL). ``kafka-transactions.sh list`` and ``describe`` show it Ongoing on
  the partition, ``describe-producers`` shows its open transaction's start offset, ``abort
  --topic --partition --start-offset`` writes the ABORT marker: the last stable offset moves
  on, a record produced afterwards is readable with read_committed, the aborted ones are not.

Like ``test_streams_eos.py``: its own ``kafkette serve`` by default, ``--bootstrap HOST:PORT``
(or ``KAFKETTE_BOOTSTRAP``) for a running broker; skips without Java or the reference.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import test_streams_eos as eos

# Shared fixtures: the broker (``--bootstrap`` or a fresh kafkette), the reference's KAFKA_HOME.
bootstrap = eos.bootstrap
kafkette = eos.kafkette
kafka_home = eos.kafka_home

TOOL_TIMEOUT_S = 120
PERF_RECORDS = 20_000
HANGING_RECORDS = 5

# A producer that leaves a transaction open: init, begin, send, flush, say so, wait to be killed.
HANGING_PRODUCER = """
import sys, time
from confluent_kafka import Producer
bootstrap, txn_id, topic, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
              "transaction.timeout.ms": 900000})
p.init_transactions(30)
p.begin_transaction()
for i in range(count):
    p.produce(topic, value=b"hanging %d" % i, partition=0)
assert p.flush(30) == 0
print("open", flush=True)
time.sleep(300)
"""


def tool(home: Path, script: str, *args: str) -> str:
    """Run ``bin/<script> args``; its stdout, or fail with its exit code and output."""
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    done = subprocess.run(
        [str(home / "bin" / script), *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script} {' '.join(args)} exited {done.returncode}: "
        f"{(done.stderr or done.stdout).strip()[-1500:]}"
    )
    return done.stdout


def table(output: str) -> list[dict[str, str]]:
    """kafka-transactions.sh's tab-separated table (header line first) as dicts."""
    rows = [
        [cell.strip() for cell in line.split("\t")] for line in output.splitlines() if "\t" in line
    ]
    assert rows, f"no table in the tool's output: {output[-500:]!r}"
    header = rows[0]
    return [dict(zip(header, row, strict=False)) for row in rows[1:]]


def create_topic(server: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": server})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)


def offsets(server: str, topic: str, isolation: str) -> int:
    """ListOffsets latest at ``isolation``: the LSO (read_committed) or high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": server, "group.id": "unused", "isolation.level": isolation}
    )
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=15, cached=False)[1]
    finally:
        consumer.close()


def read_values(server: str, topic: str, isolation: str, want: int) -> list[bytes]:
    """Values read from offset 0 at ``isolation``: until ``want`` arrived, then one more
    second to catch any extra record (bounded by 60 s in all)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": server,
            "group.id": f"txn-tools-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    quiet_until = None
    try:
        while time.monotonic() < deadline:
            batch = [m for m in consumer.consume(10000, timeout=0.5) if m.error() is None]
            values.extend(m.value() for m in batch)
            if len(values) >= want:
                if quiet_until is None:
                    quiet_until = time.monotonic() + 1.0
                elif time.monotonic() >= quiet_until:
                    break
        return values
    finally:
        consumer.close()


def test_producer_perf_test_transactional(bootstrap: str, kafka_home: Path) -> None:
    topic = f"perf-txn-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    out = tool(
        kafka_home,
        "kafka-producer-perf-test.sh",
        "--topic",
        topic,
        "--num-records",
        str(PERF_RECORDS),
        "--record-size",
        "1024",
        "--throughput",
        "-1",
        "--transactional-id",
        f"perf-{topic}",
        "--transaction-duration-ms",
        "200",
        "--producer-props",
        f"bootstrap.servers={bootstrap}",
    )
    # The last line is the run's summary; a run longer than the tool's 5 s reporting window
    # also prints progress lines of the same form before it.
    summary = re.search(r"^(\d+) records sent, ([\d.]+) records/sec.* 50th", out, re.MULTILINE)
    assert summary and int(summary.group(1)) == PERF_RECORDS, f"perf test said: {out[-500:]}"
    print(f"kafka-producer-perf-test (transactional): {summary.group(0)}")
    committed = read_values(bootstrap, topic, "read_committed", PERF_RECORDS)
    assert len(committed) == PERF_RECORDS, (
        f"read_committed consumer counted {len(committed)} of {PERF_RECORDS} records"
    )
    high, stable = (
        offsets(bootstrap, topic, "read_uncommitted"),
        offsets(bootstrap, topic, "read_committed"),
    )
    assert stable == high, f"transactions left open: LSO {stable}, high watermark {high}"
    markers = high - PERF_RECORDS
    assert markers >= 2, f"{markers} commit markers: expected several 200 ms transactions"


def test_kafka_transactions_abort_hanging(bootstrap: str, kafka_home: Path, tmp_path: Path) -> None:
    topic = f"hanging-{uuid.uuid4().hex[:8]}"
    txn_id = f"hanging-txn-{topic}"
    create_topic(bootstrap, topic)
    hanging = subprocess.Popen(
        [sys.executable, "-c", HANGING_PRODUCER, bootstrap, txn_id, topic, str(HANGING_RECORDS)],
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "hanging.log", "wb"),
        text=True,
        start_new_session=True,
    )
    try:
        line = hanging.stdout.readline() if hanging.stdout else ""
        assert line.strip() == "open", (
            f"the hanging producer did not open its transaction: "
            f"{(tmp_path / 'hanging.log').read_text(errors='replace')[-800:]}"
        )
    finally:
        os.killpg(hanging.pid, signal.SIGKILL)
        hanging.wait(10)
    server = ("--bootstrap-server", bootstrap)

    listed = {
        row["TransactionalId"]: row
        for row in table(tool(kafka_home, "kafka-transactions.sh", *server, "list"))
    }
    assert txn_id in listed, f"list does not show {txn_id}: {sorted(listed)[:10]}"
    assert listed[txn_id]["TransactionState"] == "Ongoing", listed[txn_id]

    (described,) = table(
        tool(kafka_home, "kafka-transactions.sh", *server, "describe", "--transactional-id", txn_id)
    )
    assert described["TransactionState"] == "Ongoing", described
    assert described["TopicPartitions"] == f"{topic}-0", described
    assert described["ProducerId"] == listed[txn_id]["ProducerId"], (described, listed[txn_id])

    partition = ("--topic", topic, "--partition", "0")
    (producer,) = table(
        tool(kafka_home, "kafka-transactions.sh", *server, "describe-producers", *partition)
    )
    assert producer["ProducerId"] == described["ProducerId"], (producer, described)
    assert producer["CurrentTransactionStartOffset"] == "0", producer
    assert producer["LastSequence"] == str(HANGING_RECORDS - 1), producer
    assert offsets(bootstrap, topic, "read_committed") == 0, "LSO not held by the open transaction"

    tool(kafka_home, "kafka-transactions.sh", *server, "abort", *partition, "--start-offset", "0")

    (after,) = table(
        tool(kafka_home, "kafka-transactions.sh", *server, "describe-producers", *partition)
    )
    assert after["CurrentTransactionStartOffset"] in ("None", "-1"), after
    # The records at 0..4, the ABORT marker at 5: the LSO is past it.
    assert offsets(bootstrap, topic, "read_committed") == HANGING_RECORDS + 1
    from confluent_kafka import Producer

    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"after the abort", partition=0)
    assert plain.flush(15) == 0
    del plain
    assert read_values(bootstrap, topic, "read_committed", 1) == [b"after the abort"]
    everything = read_values(bootstrap, topic, "read_uncommitted", HANGING_RECORDS + 1)
    assert everything == [b"hanging %d" % i for i in range(HANGING_RECORDS)] + [b"after the abort"]
