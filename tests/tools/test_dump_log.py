"""``kafkette dump-log``: a real kafkette writes the files, the CLI reads them with no broker.

One broker run per module produces what a data dir holds (keyed records with headers, a
null key and a null value, a gzip and a zstd batch, an idempotent producer, committed and
aborted transactions, a group's commits); the broker is stopped, then the CLI dumps its
files and the tests check exact offsets, keys and values. Where Java and the reference
Kafka are there, Kafka's own kafka-dump-log.sh reads the same files and every line must
be the same.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkette.broker.embedded import EmbeddedBroker
from tests.reference_kafka import reference_script

SEGMENT = "00000000000000000000"
T0 = 1_700_000_000_000
CliRun = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    directory = tmp_path_factory.mktemp("dump-log-data")
    configs = {"group.initial.rebalance.delay.ms": "0"}
    with EmbeddedBroker.start(data_dir=directory, configs=configs) as broker:
        bootstrap = broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        created = admin.create_topics([
            NewTopic("plain", 1, 1, config={"index.interval.bytes": "1"}),
            NewTopic("txn", 1, 1),
        ])
        for future in created.values():
            future.result(30)
        asyncio.run(_produce_plain_batches(bootstrap))
        txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "dump-tx"})
        txn.init_transactions(30)
        for key, value, commit in ((b"c1", b"committed", True), (b"a1", b"aborted", False),
                                   (b"c2", b"again", True)):
            txn.begin_transaction()
            txn.produce("txn", key=key, value=value)
            assert txn.flush(30) == 0
            (txn.commit_transaction if commit else txn.abort_transaction)(30)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dump-group",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
        consumer.subscribe(["plain"])
        seen = 0
        for _ in range(60):
            message = consumer.poll(1)
            if message is not None and not message.error():
                seen += 1
            if seen == 7:
                break
        assert seen == 7
        consumer.commit(offsets=[TopicPartition("plain", 0, 7)], asynchronous=False)
        consumer.close()
    return directory


async def _produce_plain_batches(bootstrap: str) -> None:
    """Three batches, each exactly as built (aiokafka's batch API; a lingering producer may
    split them on a loaded machine): an idempotent one with headers and a null key, then
    gzip and zstd ones with a null value."""
    from aiokafka import AIOKafkaProducer

    plan = [
        ({"enable_idempotence": True}, [
            (b"k1", b"v1", [("h1", b"x"), ("h2", None)], T0),
            (b"k2", b"v2", [], T0 + 1),
            (None, b"v3", [], T0 + 2),
        ]),
        *(({"compression_type": codec}, [
            (codec.encode(), b"z" * 100, [], base),
            (b"tomb", None, [], base + 1),
        ]) for codec, base in (("gzip", T0 + 1000), ("zstd", T0 + 2000))),
    ]
    for settings, records in plan:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **settings)
        await producer.start()
        try:
            batch = producer.create_batch()
            for key, value, headers, timestamp in records:
                assert batch.append(key=key, value=value, headers=headers, timestamp=timestamp)
            await (await producer.send_batch(batch, "plain", partition=0))
        finally:
            await producer.stop()


def _internal_log(data_dir: Path, topic: str) -> Path:
    """The one non-empty first segment among an internal topic's partitions."""
    found = [p for p in data_dir.glob(f"{topic}-*/{SEGMENT}.log") if p.stat().st_size]
    assert len(found) == 1, found
    return found[0]


def _lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return done.stdout.splitlines()


def test_batches_and_records_of_a_segment(cli: CliRun, data_dir: Path) -> None:
    log = data_dir / "plain-0" / f"{SEGMENT}.log"
    done = cli("dump-log", "--print-data-log", str(log))
    assert done.returncode == 0, done.stderr
    lines = _lines(done)
    assert lines[:2] == [f"Dumping {log}", "Log starting offset: 0"]
    batches = [line for line in lines if line.startswith("baseOffset:")]
    records = [line for line in lines if line.startswith("| offset:")]
    assert [b.split()[1:4:2] for b in batches] == [["0", "2"], ["3", "4"], ["5", "6"]]
    first = batches[0]
    assert "count: 3 baseSequence: 0 lastSequence: 2 producerId: 0 producerEpoch: 0" in first
    assert "isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty" in first
    assert f"position: 0 CreateTime: {T0 + 2}" in first and "compresscodec: none" in first
    assert "isvalid: true" in first
    assert "compresscodec: gzip" in batches[1] and "compresscodec: zstd" in batches[2]
    # aiokafka numbers even a non-idempotent batch from sequence 0 (producerId -1)
    assert "baseSequence: 0 lastSequence: 1 producerId: -1 producerEpoch: -1" in batches[1]
    assert records == [
        f"| offset: 0 CreateTime: {T0} keySize: 2 valueSize: 2 sequence: 0 "
        "headerKeys: [h1,h2] key: k1 payload: v1",
        f"| offset: 1 CreateTime: {T0 + 1} keySize: 2 valueSize: 2 sequence: 1 "
        "headerKeys: [] key: k2 payload: v2",
        f"| offset: 2 CreateTime: {T0 + 2} keySize: -1 valueSize: 2 sequence: 2 "
        "headerKeys: [] payload: v3",
        f"| offset: 3 CreateTime: {T0 + 1000} keySize: 4 valueSize: 100 sequence: 0 "
        f"headerKeys: [] key: gzip payload: {'z' * 100}",
        f"| offset: 4 CreateTime: {T0 + 1001} keySize: 4 valueSize: -1 sequence: 1 "
        "headerKeys: [] key: tomb",
        f"| offset: 5 CreateTime: {T0 + 2000} keySize: 4 valueSize: 100 sequence: 0 "
        f"headerKeys: [] key: zstd payload: {'z' * 100}",
        f"| offset: 6 CreateTime: {T0 + 2001} keySize: 4 valueSize: -1 sequence: 1 "
        "headerKeys: [] key: tomb",
    ]
    shallow = _lines(cli("dump-log", str(log)))
    assert [line for line in shallow if line.startswith("baseOffset:")] == batches
    assert not any(line.startswith("|") for line in shallow)
    deep = _lines(cli("dump-log", "--deep-iteration", str(log)))
    assert [line.split(" key:")[0].split(" payload:")[0] for line in records] == [
        line for line in deep if line.startswith("|")
    ]


def test_transaction_markers_abort_index_snapshot_and_epochs(cli: CliRun, data_dir: Path) -> None:
    done = cli("dump-log", "--print-data-log", str(data_dir / "txn-0"))
    assert done.returncode == 0, done.stderr
    lines = _lines(done)
    records = [line.split(" CreateTime:")[0] + " ... " + line.split("headerKeys: [] ")[1]
               for line in lines if line.startswith("| offset:")]
    assert records == [
        "| offset: 0 ... key: c1 payload: committed",
        "| offset: 1 ... endTxnMarker: COMMIT coordinatorEpoch: 0",
        "| offset: 2 ... key: a1 payload: aborted",
        "| offset: 3 ... endTxnMarker: ABORT coordinatorEpoch: 0",
        "| offset: 4 ... key: c2 payload: again",
        "| offset: 5 ... endTxnMarker: COMMIT coordinatorEpoch: 0",
    ]
    controls = [line for line in lines if line.startswith("baseOffset:") and "isControl: true"
                in line]
    assert [line.split()[1] for line in controls] == ["1", "3", "5"]
    assert all("isTransactional: true" in line for line in controls)
    dumped = [line for line in lines if line.startswith("Dumping ")]
    assert [Path(line.split()[1]).name for line in dumped] == [
        f"{SEGMENT}.log", f"{SEGMENT}.timeindex", f"{SEGMENT}.txnindex",
        "00000000000000000006.snapshot", "leader-epoch-checkpoint",
    ]
    producer_id = controls[0].split("producerId: ")[1].split()[0]
    after = {line.split()[1]: lines[i + 1] for i, line in enumerate(lines)
             if line.startswith("Dumping ")}
    assert after[str(data_dir / "txn-0" / f"{SEGMENT}.txnindex")] == (
        f"version: 0 producerId: {producer_id} firstOffset: 2 lastOffset: 3 lastStableOffset: 4")
    snapshot = after[str(data_dir / "txn-0" / "00000000000000000006.snapshot")]
    assert snapshot.startswith(f"producerId: {producer_id} producerEpoch: 0 coordinatorEpoch: 0 "
                               "currentTxnFirstOffset: Optional.empty")
    assert "firstSequence: 2 lastSequence: 2 lastOffset: 4 offsetDelta: 0" in snapshot
    assert after[str(data_dir / "txn-0" / "leader-epoch-checkpoint")] == "epoch: 0 startOffset: 0"


def test_json_lines_for_scripts(cli: CliRun, data_dir: Path) -> None:
    log = data_dir / "plain-0" / f"{SEGMENT}.log"
    done = cli("dump-log", "--json", "--print-data-log", str(log),
               str(data_dir / "plain-0" / f"{SEGMENT}.index"))
    assert done.returncode == 0, done.stderr
    docs = [json.loads(line) for line in _lines(done)]
    batches = [d for d in docs if d["type"] == "batch"]
    assert [(b["baseOffset"], b["lastOffset"], b["compresscodec"]) for b in batches] == [
        (0, 2, "none"), (3, 4, "gzip"), (5, 6, "zstd")]
    records = [r for b in batches for r in b["records"]]
    assert [(r["offset"], r["key"], r["payload"]) for r in records] == [
        (0, "k1", "v1"), (1, "k2", "v2"), (2, None, "v3"), (3, "gzip", "z" * 100),
        (4, "tomb", None), (5, "zstd", "z" * 100), (6, "tomb", None)]
    assert records[0]["headers"] == [["h1", "x"], ["h2", None]]
    assert batches[0]["timestampType"] == "CreateTime" and batches[0]["maxTimestamp"] == T0 + 2
    entries = [(d["offset"], d["position"]) for d in docs if d["type"] == "index"]
    assert entries == [(4, batches[1]["position"]), (6, batches[2]["position"])]


def test_index_checks(cli: CliRun, data_dir: Path, tmp_path: Path) -> None:
    source = data_dir / "plain-0"
    index = source / f"{SEGMENT}.index"
    verified = cli("dump-log", "--verify-index-only", str(index),
                   str(source / f"{SEGMENT}.timeindex"))
    assert verified.returncode == 0, verified.stderr
    assert _lines(verified) == [f"Dumping {index}", f"Dumping {source / f'{SEGMENT}.timeindex'}"]
    sane = cli("dump-log", "--index-sanity-check", str(source))
    assert sane.returncode == 0
    assert f"{index} passed sanity check." in _lines(sane)

    copy = tmp_path / "plain-0"
    shutil.copytree(source, copy)
    (copy / f"{SEGMENT}.index").write_bytes(index.read_bytes()[:8] + (5).to_bytes(4, "big")
                                            + (0).to_bytes(4, "big"))
    wrong = cli("dump-log", str(copy / f"{SEGMENT}.index"))
    assert wrong.returncode == 1
    assert _lines(wrong)[1:] == ["offset: 4 position: 101", "offset: 5 position: 0"]
    assert wrong.stderr.splitlines() == [f"Mismatches in :{copy.resolve() / f'{SEGMENT}.index'}",
                                         "  Index offset: 5, log offset: 2"]
    timeindex = copy / f"{SEGMENT}.timeindex"
    timeindex.write_bytes((T0 + 999).to_bytes(8, "big") + (4).to_bytes(4, "big"))
    late = cli("dump-log", "--verify-index-only", str(timeindex))
    assert late.returncode == 1 and _lines(late) == [f"Dumping {timeindex}"]
    assert late.stderr.splitlines() == [f"Found timestamp mismatch in :{timeindex.resolve()}",
                                        f"  Index timestamp: {T0 + 999}, log timestamp: "
                                        f"{T0 + 1001}"]
    (copy / f"{SEGMENT}.index").write_bytes(b"\0" * 7)
    torn = cli("dump-log", "--index-sanity-check", str(copy / f"{SEGMENT}.index"))
    assert torn.returncode == 1
    assert "failed sanity check" in torn.stdout and "not a multiple of 8" in torn.stdout


def test_torn_and_corrupt_segments_say_where_they_stop(cli: CliRun, data_dir: Path,
                                                       tmp_path: Path) -> None:
    data = (data_dir / "plain-0" / f"{SEGMENT}.log").read_bytes()
    torn = tmp_path / f"{SEGMENT}.log"
    torn.write_bytes(data[:150])
    done = cli("dump-log", "--print-data-log", str(torn))
    assert done.returncode == 1
    assert _lines(done)[-1] == "Found 49 invalid bytes at the end of 00000000000000000000.log"
    assert sum(line.startswith("| offset:") for line in _lines(done)) == 3
    assert done.stderr.strip().startswith(f"kafkette: {torn}: stops at position 101: batch of")
    assert "Traceback" not in done.stderr

    first_only = cli("dump-log", "--max-bytes", "150", str(data_dir / "plain-0" / f"{SEGMENT}.log"))
    assert first_only.returncode == 0, first_only.stderr
    assert [line.split()[1] for line in _lines(first_only) if line.startswith("baseOffset")] == [
        "0"]

    flipped = bytearray(data)
    flipped[80] ^= 0xFF  # inside the first batch's records, under its CRC
    torn.write_bytes(bytes(flipped))
    shallow = cli("dump-log", str(torn))
    assert shallow.returncode == 1
    assert [line.rsplit(" ", 1)[1] for line in _lines(shallow) if "isvalid" in line] == [
        "false", "true", "true"]
    missing = cli("dump-log", str(tmp_path / "nothere.log"), str(data_dir / "txn-0"))
    assert missing.returncode == 1
    assert missing.stderr.startswith(f"kafkette: {tmp_path / 'nothere.log'}: no such file")
    assert sum(line.startswith("baseOffset:") for line in _lines(missing)) == 6
    assert _lines(cli("dump-log")) == [] and cli("dump-log").returncode == 2

    deep = cli("dump-log", "--print-data-log", str(torn))
    assert deep.returncode == 1 and "Traceback" not in deep.stderr
    assert "isvalid: false" in _lines(deep)[-1]
    assert deep.stderr.startswith(f"kafkette: {torn}: stops at position 0: records of batch 0")


def test_offsets_and_transaction_log_decoders(cli: CliRun, data_dir: Path) -> None:
    offsets = cli("dump-log", "--offsets-decoder", str(_internal_log(data_dir,
                                                                     "__consumer_offsets")))
    assert offsets.returncode == 0, offsets.stderr
    commit = ('key: {"type":"1","data":{"group":"dump-group","topic":"plain","partition":0}} '
              'payload: {"version":"3","data":{"offset":7,')
    assert any(commit in line for line in _lines(offsets))
    assert any('"subscription":{"topics":["plain"]' in line for line in _lines(offsets))
    txn = cli("dump-log", "--transaction-log-decoder",
              str(_internal_log(data_dir, "__transaction_state")))
    assert txn.returncode == 0, txn.stderr
    payloads = [line.split("payload: ")[1] for line in _lines(txn) if "payload: " in line]
    states = [p.split("state=")[1].split(",")[0] for p in payloads]
    assert states[0] == "Empty" and states[-1] == "CompleteCommit"
    assert states.count("PrepareAbort") == 1 and states.count("CompleteAbort") == 1
    assert "partitions=[txn-0]" in payloads[1]
    assert all(line.split(" key: ")[1].startswith("transaction_metadata::transactionalId=dump-tx")
               for line in _lines(txn) if " key: " in line)


def _kafka_dump_log() -> Path:
    if shutil.which("java") is None:
        pytest.skip("java is not installed: Kafka's kafka-dump-log.sh runs on the JVM")
    script = reference_script()
    if script is None:
        pytest.skip("reference Kafka not found: set KAFKETTE_KAFKA_REF to shared/reference-kafka")
    home = subprocess.run([str(script), "home"], capture_output=True, text=True, timeout=60,
                          check=False).stdout.strip()
    tool = Path(home) / "bin" / "kafka-dump-log.sh"
    if not tool.is_file():
        pytest.skip(f"no kafka-dump-log.sh under {home!r}")
    return tool


def test_same_lines_as_kafkas_dump_log(cli: CliRun, data_dir: Path) -> None:
    """Kafka's tool and ours on the same files: every line, field by field, the same."""
    tool = _kafka_dump_log()
    plain, txn = data_dir / "plain-0", data_dir / "txn-0"
    runs = [
        ["--print-data-log", "--files", ",".join(str(p) for p in (
            plain / f"{SEGMENT}.log", plain / f"{SEGMENT}.index", plain / f"{SEGMENT}.timeindex",
            # Not txn-0's .timeindex: kafkette writes no .index for a segment with no offset
            # index entry, and Kafka's tool cannot open a .timeindex without its .index.
            txn / f"{SEGMENT}.log", txn / f"{SEGMENT}.txnindex"))],
        ["--offsets-decoder", "--files", str(_internal_log(data_dir, "__consumer_offsets"))],
        ["--transaction-log-decoder", "--files",
         str(_internal_log(data_dir, "__transaction_state"))],
    ]
    for args in runs:
        kafka = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=120,
                               check=False)
        assert kafka.returncode == 0, kafka.stderr
        ours = cli("dump-log", *args)
        assert ours.returncode == 0, ours.stderr
        expected, got = _lines(kafka), _lines(ours)
        assert len(got) == len(expected), (args[0], got, expected)
        for mine, theirs in zip(got, expected, strict=True):
            assert mine.split(" ") == theirs.split(" "), args[0]
