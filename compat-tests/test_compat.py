"""The scenario matrix: each test is one scenario, parametrized over the client families whose
driver declares it (see ``conftest.pytest_generate_tests``). Test ids are ``test_<scenario>
[<family>]`` (plus ``-<codec>`` for the codec scenario); the recorder turns them into rows.

Assertion messages say what the client saw so a broker author can act on a failure directly.
"""

from __future__ import annotations

import random
import re
import string
import time
from collections.abc import Callable

import pytest
from compat_lib.family import Unsupported
from compat_lib.model import CODECS, MESSAGE_MAX_BYTES, ClientError, Got, Rec, Start

TOO_LARGE = re.compile(
    r"MESSAGE_TOO_LARGE|MSG_SIZE_TOO_LARGE|RecordTooLarge|MessageSizeTooLarge|too large",
    re.IGNORECASE,
)
# Raised client-side limits so the broker, not the client, judges record size.
BIG_CLIENT_LIMIT = 4 * MESSAGE_MAX_BYTES


def text(n: int, seed: int) -> bytes:
    """``n`` printable bytes (no newline: kcat reads records line by line), deterministic."""
    rng = random.Random(seed)
    return "".join(rng.choices(string.ascii_letters + string.digits, k=n)).encode()


def fresh_topic(client, topic: str, partitions: int = 1) -> None:
    """Create ``topic`` with the family's own admin API, or by metadata auto-create if the
    family has none (kcat); tests then address partition 0 explicitly."""
    try:
        client.create_topic(topic, partitions)
    except Unsupported:
        assert client.partitions_for(topic) >= 1, f"auto-create of {topic} gave no partitions"


def eventually(check: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"{what} (waited {timeout_s:.0f}s)"
        time.sleep(0.2)


def short(data: bytes | None) -> str:
    if data is None:
        return "null"
    return repr(data[:24]) + (f"...({len(data)} bytes)" if len(data) > 24 else "")


def assert_records(sent: list[Rec], got: list[Got], first_offset: int = 0, what: str = "") -> None:
    """Same count, contiguous offsets from ``first_offset``, and equal key/value/headers."""
    note = getattr(got, "note", "")
    assert len(got) == len(sent), (
        f"{what or 'consumer'} got {len(got)} of {len(sent)} records "
        f"(offsets seen: {[g.offset for g in got][:20]})" + (f"; {note}" if note else "")
    )
    for i, (s, g) in enumerate(zip(sent, got, strict=True)):
        want = first_offset + i
        assert g.offset == want, f"record {i}: offset {g.offset}, expected {want}"
        assert (g.key, g.value) == (s.key, s.value), (
            f"record {i}: sent key={short(s.key)} value={short(s.value)}, "
            f"got key={short(g.key)} value={short(g.value)}"
        )
        assert g.headers == s.headers, f"record {i}: sent headers {s.headers}, got {g.headers}"


def batch(n: int, seed: int = 0, partition: int = 0) -> list[Rec]:
    return [
        Rec(f"key-{i}".encode(), b"value-%d " % i + text(40, seed + i) * 5, partition=partition)
        for i in range(n)
    ]


def test_metadata_auto_create(client, topic):
    count = client.partitions_for(topic)
    assert count >= 1, f"metadata for unknown topic {topic} returned {count} partitions"
    eventually(lambda: topic in client.list_topics(), f"auto-created {topic} not listed")


def test_create_delete_topic(client, topic):
    client.create_topic(topic, 3)
    assert client.describe_partition_count(topic) == 3
    assert topic in client.list_topics(), f"created topic {topic} not in list_topics"
    client.delete_topic(topic)
    eventually(lambda: topic not in client.list_topics(), f"deleted topic {topic} still listed")


def test_create_partitions(client, topic):
    client.create_topic(topic, 1)
    client.create_partitions(topic, 3)
    assert client.describe_partition_count(topic) == 3
    sent = [Rec(b"k", b"to the new partition", partition=2)]
    client.produce(topic, sent)
    assert_records(sent, client.consume(topic, 2, Start.earliest(), 1))


@pytest.mark.parametrize("codec", CODECS)
def test_codec(client, topic, codec):
    fresh_topic(client, topic)
    sent = batch(20, seed=7)
    client.produce(topic, sent, codec=codec)
    assert_records(sent, client.consume(topic, 0, Start.earliest(), len(sent)))


def test_bulk_roundtrip(client, topic):
    """Thousands of records: many batches per produce request and many fetches to read back."""
    fresh_topic(client, topic)
    sent = [
        Rec(b"k%05d" % i, b"bulk %05d " % i + text(150, i), partition=0) for i in range(3000)
    ]
    client.produce(topic, sent, codec="lz4")
    assert_records(sent, client.consume(topic, 0, Start.earliest(), len(sent)))


def test_headers_nulls(client, topic):
    fresh_topic(client, topic)
    sent = [
        Rec(b"k1", b"v1", (("h1", b"one"), ("h2", b""), ("h1", b"repeated")), partition=0),
        Rec(None, b"null key", partition=0),
        Rec(b"null value", None, (("only", b"header"),), partition=0),
        Rec(b"", b"empty key", partition=0),
        Rec(b"k5", b"", partition=0),
    ]
    client.produce(topic, sent)
    assert_records(sent, client.consume(topic, 0, Start.earliest(), len(sent)))


def test_near_max_message_bytes(client, topic):
    # A one-record batch adds ~72 bytes of framing; stay 128 bytes under message.max.bytes.
    fresh_topic(client, topic)
    sent = [Rec(None, text(MESSAGE_MAX_BYTES - 128, seed=1), partition=0)]
    client.produce(topic, sent, config={"max.request.size": BIG_CLIENT_LIMIT})
    assert_records(sent, client.consume(topic, 0, Start.earliest(), 1))


def test_too_large_rejected(client, topic):
    fresh_topic(client, topic)
    big = Rec(None, text(MESSAGE_MAX_BYTES + 1024, seed=2), partition=0)
    try:
        client.produce(topic, [big], config={"max.request.size": BIG_CLIENT_LIMIT})
    except ClientError as refused:
        assert TOO_LARGE.search(refused.detail), (
            f"expected MESSAGE_TOO_LARGE (error 10), client saw: {refused}"
        )
    else:
        pytest.fail(
            f"broker accepted a {len(big.value)}-byte record (message.max.bytes is "
            f"{MESSAGE_MAX_BYTES}); expected MESSAGE_TOO_LARGE (error 10)"
        )
    sent = [Rec(b"after", b"still accepting", partition=0)]
    client.produce(topic, sent)
    assert_records(sent, client.consume(topic, 0, Start.earliest(), 1))


def test_idempotent_produce(client, topic):
    fresh_topic(client, topic)
    sent = batch(30, seed=3)
    client.produce(topic, sent, config={"enable.idempotence": True, "acks": "all"})
    assert_records(sent, client.consume(topic, 0, Start.earliest(), len(sent)))


def test_consume_earliest(client, topic):
    fresh_topic(client, topic)
    sent = batch(5)
    client.produce(topic, sent)
    assert_records(sent, client.consume(topic, 0, Start.earliest(), 5))


def test_consume_latest(client, topic):
    fresh_topic(client, topic)
    sent = batch(5)
    client.produce(topic, sent)
    # "tail 2": the client resolves the latest offset (ListOffsets -1) and backs off 2.
    assert_records(sent[3:], client.consume(topic, 0, Start.tail(2), 2), first_offset=3)


def test_consume_timestamp(client, topic):
    fresh_topic(client, topic)
    first, second = batch(3, seed=10), batch(3, seed=20)
    client.produce(topic, first)
    time.sleep(0.05)
    client.produce(topic, second)
    got = client.consume(topic, 0, Start.earliest(), 6)
    assert_records(first + second, got)
    ts = got[3].timestamp_ms
    assert ts > got[2].timestamp_ms, f"timestamps not increasing: {[g.timestamp_ms for g in got]}"
    from_ts = client.consume(topic, 0, Start.timestamp(ts), 3)
    assert_records(second, from_ts, first_offset=3)


def test_seek_reread(client, topic):
    fresh_topic(client, topic)
    sent = batch(5)
    client.produce(topic, sent)
    one, two = client.seek_reread(topic, 0, 5, 1, 4)
    assert_records(sent, one)
    assert_records(sent[1:], two, first_offset=1)


def test_group_commit_resume(client, topic, group):
    fresh_topic(client, topic)
    sent = batch(10)
    client.produce(topic, sent)
    assert_records(sent[:4], client.group_consume(group, topic, 4), what="group consumer")
    # A new consumer in the same group must resume at the committed offset 4.
    again = client.group_consume(group, topic, 3)
    assert_records(sent[4:7], again, first_offset=4, what="restarted group consumer")


def test_group_two_members(client, topic, group):
    """A second member joins: the group rebalances and each member ends with one partition."""
    client.create_topic(topic, 2)
    client.produce(topic, batch(5, seed=1, partition=0) + batch(5, seed=2, partition=1))
    one, two, seen = client.group_two_members(group, topic, 10)
    assert sorted(one + two) == [0, 1] and one and two, (
        f"after the second member joined, assignments are {one} and {two} "
        "(expected one partition each)"
    )
    want = {(p, o) for p in (0, 1) for o in range(5)}
    assert seen >= want, f"the two members missed records {sorted(want - seen)}"


def test_describe_alter_configs(client, topic):
    client.create_topic(topic, 1)
    before = client.describe_configs(topic)
    assert "retention.ms" in before, f"describe_configs lacks retention.ms: {sorted(before)[:20]}"
    assert before["retention.ms"] != "3600000", "retention.ms already 3600000 before alter"
    client.alter_configs(topic, {"retention.ms": "3600000"})
    after = client.describe_configs(topic)
    assert after.get("retention.ms") == "3600000", (
        f"after alter retention.ms=3600000, describe says {after.get('retention.ms')!r}"
    )


def test_delete_records(client, topic):
    fresh_topic(client, topic)
    sent = batch(10)
    client.produce(topic, sent)
    low = client.delete_records(topic, 0, 4)
    assert low == 4, f"delete_records(before=4) reported low watermark {low}"
    assert client.list_offset(topic, 0, "earliest") == 4
    assert_records(sent[4:6], client.consume(topic, 0, Start.earliest(), 2), first_offset=4)


def test_list_describe_groups(client, topic, group):
    fresh_topic(client, topic)
    sent = batch(2)
    client.produce(topic, sent)
    assert_records(sent[:1], client.group_consume(group, topic, 1), what="group consumer")
    eventually(lambda: group in client.list_groups(), f"group {group} not in list_groups")
    info = client.describe_group(group)
    assert (info.state, info.protocol_type, info.members) == ("Empty", "consumer", 0), (
        f"describe_group after the member left: {info}"
    )


def test_spark_pattern(client, topic):
    """Spark's Kafka source/sink calls: AdminClient describeTopics + listOffsets on the driver,
    assign/seek/poll without a group on executors, a default KafkaProducer as the sink."""
    client.create_topic(topic, 2)
    first = batch(4, seed=1, partition=0) + batch(3, seed=2, partition=1)
    client.produce(topic, first)  # the sink: a KafkaProducer with default settings
    time.sleep(0.05)
    later = batch(2, seed=3, partition=0)
    client.produce(topic, later)
    assert topic in client.list_topics(), "listTopics (subscribePattern) misses the topic"
    assert client.describe_partition_count(topic) == 2
    ends = {p: client.list_offset(topic, p, "latest") for p in (0, 1)}
    starts = {p: client.list_offset(topic, p, "earliest") for p in (0, 1)}
    assert (starts, ends) == ({0: 0, 1: 0}, {0: 6, 1: 3}), f"earliest {starts}, latest {ends}"
    range0, p0 = client.spark_read(topic, 0, 0, 6)
    assert range0 == (0, 6), f"executor consumer sees offsets {range0} on partition 0"
    assert_records(first[:4] + later, p0)
    range1, p1 = client.spark_read(topic, 1, 0, 3)
    assert range1 == (0, 3), f"executor consumer sees offsets {range1} on partition 1"
    assert_records(first[4:], p1)
    ts_offset = client.list_offset(topic, 0, p0[4].timestamp_ms)
    assert ts_offset == 4, f"listOffsets(timestamp of offset 4) returned {ts_offset}"
    future = client.list_offset(topic, 0, p0[-1].timestamp_ms + 3_600_000)
    assert future == -1, f"listOffsets(timestamp after all records) returned {future}, want -1"


# ---- transactions (KIP-98, KIP-447) ------------------------------------------------------
# One producer on one partition lays offsets out deterministically: a transaction's records
# take consecutive offsets and its COMMIT/ABORT marker (a control batch, never handed to the
# application) takes the next one. Offsets below are asserted exactly, so a broker that
# writes no marker, or two, or lets an aborted record through, fails here.
FENCED = re.compile(r"fenc|INVALID_PRODUCER_EPOCH|InvalidProducerEpoch", re.IGNORECASE)


def txn_id(topic: str) -> str:
    return f"txid-{topic}"


def tagged(recs: list[Rec], tag: bytes) -> list[Rec]:
    return [Rec(r.key, tag + b" " + (r.value or b""), r.headers, r.partition) for r in recs]


def data_offsets(sizes: list[int]) -> list[int]:
    """Offsets of the data records of consecutive transactions of ``sizes`` records each
    (each followed by its one-offset marker)."""
    offsets, at = [], 0
    for n in sizes:
        offsets.extend(range(at, at + n))
        at += n + 1
    return offsets


def assert_txn_records(sent: list[Rec], got: list[Got], offsets: list[int], what: str) -> None:
    """Exactly ``sent``, in order, at exactly ``offsets`` (markers leave gaps)."""
    note = getattr(got, "note", "")
    assert [(g.key, g.value) for g in got] == [(s.key, s.value) for s in sent], (
        f"{what}: got {len(got)} records {[short(g.value) for g in got][:12]}, expected "
        f"{len(sent)} {[short(s.value) for s in sent][:12]}" + (f"; {note}" if note else "")
    )
    assert [g.offset for g in got] == offsets, (
        f"{what}: records at offsets {[g.offset for g in got]}, expected {offsets}"
    )


def test_txn_commit_abort(client, topic):
    """Commit, abort, commit: read_committed sees exactly the committed records (the aborted
    ones lie between them), read_uncommitted sees all three transactions' records."""
    client.create_topic(topic, 1)
    one = tagged(batch(3, seed=31), b"committed-1")
    aborted = tagged(batch(2, seed=32), b"ABORTED")
    two = tagged(batch(4, seed=33), b"committed-2")
    client.txn_produce(topic, txn_id(topic), [(one, True), (aborted, False), (two, True)])
    got = client.consume(topic, 0, Start.earliest(), len(one + two), isolation="read_committed")
    # Committed at 0-2 (marker 3), aborted at 4-5 (marker 6), committed at 7-10 (marker 11).
    assert_txn_records(one + two, got, [0, 1, 2, 7, 8, 9, 10], "read_committed consumer")
    everything = client.consume(topic, 0, Start.earliest(), 9, isolation="read_uncommitted")
    assert_txn_records(one + aborted + two, everything, data_offsets([3, 2, 4]),
                       "read_uncommitted consumer")
    # Three markers: the log ends one past the last one.
    assert client.list_offset(topic, 0, "latest") == 12


def test_txn_offsets(client, topic, group):
    """Consume-transform-produce with sendOffsetsToTransaction: an aborted round neither
    moves the group's offset nor shows its output; two committed rounds copy every input
    record exactly once and leave the group's committed offset after the last one."""
    source, dest = topic, topic + "-out"
    client.create_topic(source, 1)
    client.create_topic(dest, 1)
    inputs = batch(6, seed=41)
    client.produce(source, inputs)
    tid = txn_id(topic)
    read = client.txn_copy(group, source, dest, tid, 3, commit=False)
    assert_records(inputs[:3], read, what="aborted round's consumer")
    assert client.committed_offset(group, source, 0) is None, (
        "the group has a committed offset after its only transaction was aborted"
    )
    read = client.txn_copy(group, source, dest, tid, 3, commit=True)
    assert_records(inputs[:3], read, what="retried round's consumer (must restart at 0)")
    assert client.committed_offset(group, source, 0) == 3
    read = client.txn_copy(group, source, dest, tid, 3, commit=True)
    assert_records(inputs[3:], read, first_offset=3, what="second committed round's consumer")
    assert client.committed_offset(group, source, 0) == 6
    copies = [Rec(r.key, b"copied:" + r.value, partition=0) for r in inputs]
    got = client.consume(dest, 0, Start.earliest(), 6, isolation="read_committed")
    # Aborted round at 0-2 (marker 3), committed rounds at 4-6 (marker 7) and 8-10 (11).
    assert_txn_records(copies, got, [4, 5, 6, 8, 9, 10], "read_committed consumer of the output")


def test_txn_fencing(client, topic):
    """A second producer with the same transactional.id fences the first: the zombie's
    open transaction is aborted, its next send/commit fails with a fencing error, and
    read_committed sees only the successor's record."""
    client.create_topic(topic, 1)
    first, late, successor = (
        Rec(b"zombie", b"zombie before fencing", partition=0),
        Rec(b"zombie", b"zombie after fencing", partition=0),
        Rec(b"successor", b"successor committed", partition=0),
    )
    send_error, commit_error = client.txn_fencing(topic, txn_id(topic), first, late, successor)
    seen = f"send: {send_error or 'no error'}; commit: {commit_error or 'no error'}"
    assert commit_error, f"the fenced producer committed its transaction ({seen})"
    assert FENCED.search(send_error + " " + commit_error), (
        f"the fenced producer should see PRODUCER_FENCED or INVALID_PRODUCER_EPOCH; {seen}"
    )
    got = client.consume(topic, 0, Start.earliest(), 1, isolation="read_committed")
    # The zombie's record at 0, the abort marker at 1, the successor's record at 2.
    assert_txn_records([successor], got, [2], "read_committed consumer")
    everything = client.consume(topic, 0, Start.earliest(), 2, isolation="read_uncommitted")
    assert_txn_records([first, successor], everything, [0, 2], "read_uncommitted consumer")
    # Nothing of the zombie's after fencing: abort marker at 1, commit marker at 3.
    assert client.list_offset(topic, 0, "latest") == 4


def test_txn_fencing_commit(client, topic):
    """As ``txn_fencing``, but the zombie's next request is its commit (EndTxn with the old
    epoch, which the coordinator must refuse), not a produce."""
    client.create_topic(topic, 1)
    first = Rec(b"zombie", b"zombie before fencing", partition=0)
    successor = Rec(b"successor", b"successor committed", partition=0)
    _, commit_error = client.txn_fencing(topic, txn_id(topic), first, None, successor)
    # Kafka 4.0 answers PRODUCER_FENCED (90); every client names it "fenced".
    assert re.search("fenc", commit_error, re.IGNORECASE), (
        "the fenced producer's commit should fail with PRODUCER_FENCED; "
        f"its client saw: {commit_error or 'no error'}"
    )
    got = client.consume(topic, 0, Start.earliest(), 1, isolation="read_committed")
    assert_txn_records([successor], got, [2], "read_committed consumer")
    assert client.list_offset(topic, 0, "latest") == 4

