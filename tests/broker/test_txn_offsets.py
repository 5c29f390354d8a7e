"""TxnOffsetCommit end to end: raw wire requests, markers, OffsetFetch, restart, compaction.

The transaction coordinator (which sends the markers) is another piece of the
broker (end-to-end with real transactional clients: test_transactions*.py and the
compat suite); here the test plays it by awaiting ``broker.groups.write_txn_marker`` on
the broker's own event loop, exactly as the coordinator does. OffsetFetch is
checked with raw requests (with and without ``require_stable``) and with real
clients: librdkafka asks with require_stable when ``isolation.level`` is
read_committed (its default), kafka-python likewise.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator

import pytest
import trio
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.producer import TxnOffsetCommitRequest

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.internal_topics import OFFSETS_TOPIC
from kafkette.log.cleaner_checkpoint import CLEANER_CHECKPOINT_FILE, read_cleaner_checkpoint
from kafkette.wire.errors import ErrorCode
from kafkette.wire.records import ControlRecordType, decode_batches, parse_control_record

NONE = ErrorCode.NONE
UNSTABLE = ErrorCode.UNSTABLE_OFFSET_COMMIT
PRODUCER = 4242  # the producer id the tests commit with (no coordinator checks it yet)
# The test plays the transaction coordinator, so the broker's partition verification
# (which asks the real coordinator, tested in test_transactions*.py) is off, as Kafka's
# transaction.partition.verification.enable=false allows.
CONFIGS = {
    "num.partitions": "1",
    "offsets.topic.num.partitions": "3",
    "transaction.partition.verification.enable": "false",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    data_dir = tmp_path_factory.mktemp("txn-offsets")
    with _running(data_dir, CONFIGS) as embedded:
        yield embedded


# --- helpers -----------------------------------------------------------------------------


def txn_commit(
    client,
    group: str,
    offsets: dict[tuple[str, int], int],
    *,
    producer_id: int = PRODUCER,
    epoch: int = 0,
    version: int = 3,
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
    metadata: str = "txn",
) -> dict[tuple[str, int], int]:
    """TxnOffsetCommit; returns the error per partition."""
    by_topic: dict[str, list] = {}
    for (topic, index), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic.TxnOffsetCommitRequestPartition(
                partition_index=index,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata=metadata,
            )
        )
    request = TxnOffsetCommitRequest(
        transactional_id="txn-tests",
        group_id=group,
        producer_id=producer_id,
        producer_epoch=epoch,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        topics=[
            TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=name, partitions=parts)
            for name, parts in by_topic.items()
        ],
    )
    response = client.request(request, version)
    return {
        (t.name, p.partition_index): p.error_code
        for t in response.topics
        for p in t.partitions
    }


def plain_commit(client, group: str, topic: str, offset: int, partition: int = 0) -> int:
    """OffsetCommit v8 as a "simple" consumer (generation -1)."""
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=partition,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata="plain",
                    )
                ],
            )
        ],
    )
    response = client.request(request, 8)
    return response.topics[0].partitions[0].error_code


def fetch(client, group: str, topic: str, *, stable: bool, version: int = 7, partition: int = 0):
    """OffsetFetch of one partition: (committed offset, error code); v8+ in its batched form."""
    if version >= 8:
        group_request = OffsetFetchRequest.OffsetFetchRequestGroup
        request = OffsetFetchRequest(
            groups=[
                group_request(
                    group_id=group,
                    topics=[
                        group_request.OffsetFetchRequestTopics(
                            name=topic, partition_indexes=[partition]
                        )
                    ],
                )
            ],
            require_stable=stable,
        )
        answer = client.request(request, version).groups[0]
    else:
        request = OffsetFetchRequest(
            group_id=group,
            topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(
                    name=topic, partition_indexes=[partition]
                )
            ],
            require_stable=stable,
        )
        answer = client.request(request, version)
    assert answer.error_code == 0
    p = answer.topics[0].partitions[0]
    return p.committed_offset, p.error_code


def marker(
    embedded: EmbeddedBroker,
    group: str,
    committed: bool,
    *,
    producer_id: int = PRODUCER,
    epoch: int = 0,
) -> int:
    """Play the transaction coordinator: write the marker on the broker's loop."""
    coordinator = embedded.broker.groups
    index = embedded.on_loop(lambda: coordinator.state.partition_for(group))

    async def write() -> int:
        return await coordinator.write_txn_marker(index, producer_id, epoch, 0, committed)

    return trio.from_thread.run(write, trio_token=embedded._token)


def offsets_partition_batches(embedded: EmbeddedBroker, group: str) -> list:
    """(header, records) of every batch in the group's ``__consumer_offsets`` partition."""
    coordinator = embedded.broker.groups

    def read() -> list:
        index = coordinator.state.partition_for(group)
        log = embedded.broker.topics.partition(OFFSETS_TOPIC, index).log
        batches, offset = [], log.log_start_offset
        while offset < log.log_end_offset:
            chunk = decode_batches(log.read(offset, 1 << 24).to_bytes())
            assert chunk, f"nothing readable at {offset}"
            batches += chunk
            offset = chunk[-1][0].next_offset
        return batches

    return embedded.on_loop(read)


def librdkafka_committed(bootstrap: str, group: str, topic: str, timeout: float, **conf):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, **conf}
    )
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=timeout)[0].offset
    finally:
        consumer.close()


# --- tests --------------------------------------------------------------------------------


@contextlib.contextmanager
def _running(data_dir, configs: dict[str, str]) -> Iterator[EmbeddedBroker]:
    """An embedded broker on ``data_dir``, stopped at the end so that the next one
    reloads the same dir (the restart tests run two in turn). The clients the test
    made are collected first, so none of them is left talking to a stopped broker."""
    embedded = EmbeddedBroker.start(data_dir=data_dir, configs=configs)
    try:
        yield embedded
    finally:
        gc.collect()
        embedded.stop(timeout=30)


def _compacting_configs(segment_bytes: int) -> dict[str, str]:
    """One small-segment ``__consumer_offsets`` partition that the cleaner compacts
    eagerly, so that a test reaches cleaned segments within seconds."""
    return {
        **CONFIGS,
        "offsets.topic.num.partitions": "1",
        "offsets.topic.segment.bytes": str(segment_bytes),
        "log.cleaner.backoff.ms": "100",
        "log.cleaner.min.cleanable.ratio": "0.01",
    }


def _wait_cleaned(data_dir, offset: int, timeout: float = 30) -> None:
    """Until the cleaner's checkpoint for ``__consumer_offsets``-0 reaches ``offset``."""
    deadline = time.monotonic() + timeout
    checkpoint = data_dir / CLEANER_CHECKPOINT_FILE
    while read_cleaner_checkpoint(checkpoint).get((OFFSETS_TOPIC, 0), 0) < offset:
        assert time.monotonic() < deadline, "__consumer_offsets was not cleaned"
        time.sleep(0.1)


def test_pending_until_commit_marker(broker, raw_client, create_topic, unique_name):
    topic = create_topic(broker.bootstrap, partitions=2)
    client = raw_client(broker.bootstrap)
    group = unique_name
    assert plain_commit(client, group, topic, 5) == NONE
    assert txn_commit(client, group, {(topic, 0): 10, (topic, 1): 20}) == {
        (topic, 0): NONE, (topic, 1): NONE}
    # Invisible: the last committed offset without require_stable, UNSTABLE with it.
    assert fetch(client, group, topic, stable=False) == (5, NONE)
    assert fetch(client, group, topic, stable=False, version=6) == (5, NONE)
    assert fetch(client, group, topic, stable=True) == (-1, UNSTABLE)
    assert fetch(client, group, topic, stable=True, partition=1) == (-1, UNSTABLE)
    assert fetch(client, group, topic, stable=True, version=9) == (-1, UNSTABLE)

    assert marker(broker, group, committed=True) == NONE
    assert fetch(client, group, topic, stable=True) == (10, NONE)
    assert fetch(client, group, topic, stable=False, partition=1) == (20, NONE)
    # A second marker (a coordinator retrying) changes nothing.
    assert marker(broker, group, committed=True) == NONE
    assert fetch(client, group, topic, stable=True) == (10, NONE)

    # On disk: a transactional batch of the producer (base sequence -1), then markers.
    mine = group.encode()
    batches = offsets_partition_batches(broker, group)
    txn = [
        (h, records)
        for h, records in batches
        if not h.is_control and any(mine in (r.key or b"") for r in records)
    ]
    assert len(txn) == 2  # the plain commit, then the transaction's
    plain, (header, records) = txn
    assert not plain[0].is_transactional and plain[0].producer_id == -1
    assert header.is_transactional and len(records) == 2
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (PRODUCER, 0, -1)
    after = batches[batches.index((header, records)) + 1 :]
    markers = [parse_control_record(r[0]) for h, r in after if h.is_control]
    assert markers == [(ControlRecordType.COMMIT, 0)] * 2


def test_abort_marker_drops_pending_offsets(broker, raw_client, create_topic, unique_name):
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    kept, vanished = unique_name, unique_name + "-only-txn"
    assert plain_commit(client, kept, topic, 3) == NONE
    assert txn_commit(client, kept, {(topic, 0): 30}) == {(topic, 0): NONE}
    assert txn_commit(client, vanished, {(topic, 0): 31}) == {(topic, 0): NONE}
    assert marker(broker, kept, committed=False) == NONE
    assert marker(broker, vanished, committed=False) == NONE
    assert fetch(client, kept, topic, stable=True) == (3, NONE)
    assert fetch(client, vanished, topic, stable=True) == (-1, NONE)
    # A group that only ever had aborted offsets does not linger.
    groups = broker.broker.groups
    listed = broker.on_loop(lambda: [g.group_id for g in groups.state.classic.list_groups()])
    assert kept in listed and vanished not in listed


def test_plain_commit_after_txn_commit_wins(broker, raw_client, create_topic, unique_name):
    """Kafka keeps the later record when a transaction's offset meets a plain commit."""
    topic = create_topic(broker.bootstrap, partitions=2)
    client = raw_client(broker.bootstrap)
    group = unique_name
    assert txn_commit(client, group, {(topic, 0): 100, (topic, 1): 100}) == {
        (topic, 0): NONE, (topic, 1): NONE}
    assert plain_commit(client, group, topic, 7, partition=0) == NONE
    assert fetch(client, group, topic, stable=False) == (7, NONE)
    assert marker(broker, group, committed=True) == NONE
    assert fetch(client, group, topic, stable=True) == (7, NONE)  # the later, plain one
    assert fetch(client, group, topic, stable=True, partition=1) == (100, NONE)


def test_real_clients_wait_for_stable_offsets(broker, raw_client, create_topic, unique_name):
    """librdkafka (read_committed, its default) and kafka-python (read_committed) send
    require_stable and retry UNSTABLE_OFFSET_COMMIT; read_uncommitted clients get the
    last committed offset at once."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.errors import KafkaTimeoutError

    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    group = unique_name
    assert plain_commit(client, group, topic, 2) == NONE
    assert txn_commit(client, group, {(topic, 0): 40}) == {(topic, 0): NONE}
    assert librdkafka_committed(
        broker.bootstrap, group, topic, 15, **{"isolation.level": "read_uncommitted"}
    ) == 2
    with pytest.raises(KafkaException, match="Timed out"):  # retries UNSTABLE_OFFSET_COMMIT
        librdkafka_committed(broker.bootstrap, group, topic, 2)

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    try:
        tp = KafkaTopicPartition(topic, 0)
        with pytest.raises(KafkaTimeoutError):  # retries UNSTABLE_OFFSET_COMMIT until then
            consumer.committed(tp, timeout_ms=2000)
        assert marker(broker, group, committed=True) == NONE
        assert consumer.committed(tp, timeout_ms=15_000) == 40
    finally:
        consumer.close()
    assert librdkafka_committed(broker.bootstrap, group, topic, 15) == 40


def test_errors_as_kafka(broker, raw_client, create_topic, unique_name):
    topic = create_topic(broker.bootstrap, partitions=1)
    client = raw_client(broker.bootstrap)
    group = unique_name
    E = ErrorCode
    # Unknown partitions get their error; the known one is still committed.
    assert txn_commit(client, group, {(topic, 0): 1, (topic, 5): 1, ("no-such", 0): 1}) == {
        (topic, 0): E.NONE,
        (topic, 5): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("no-such", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert txn_commit(client, "", {(topic, 0): 1}) == {(topic, 0): E.INVALID_GROUP_ID}
    assert txn_commit(client, group, {(topic, 0): 1}, producer_id=-1) == {
        (topic, 0): E.INVALID_PRODUCER_ID_MAPPING}
    # v3+: a generation for a group that does not exist, or a member it does not have.
    assert txn_commit(client, group + "-new", {(topic, 0): 1}, generation=3, member_id="m") == {
        (topic, 0): E.ILLEGAL_GENERATION}
    assert txn_commit(client, group, {(topic, 0): 1}, generation=0, member_id="m") == {
        (topic, 0): E.UNKNOWN_MEMBER_ID}
    assert txn_commit(client, group, {(topic, 0): 1}, generation=0, instance="i") == {
        (topic, 0): E.UNKNOWN_MEMBER_ID}
    # Generation -1 on an Empty group is a "simple" commit, whatever else is sent (Kafka).
    assert txn_commit(client, group, {(topic, 0): 1}, instance="i", member_id="m") == {
        (topic, 0): E.NONE}
    assert txn_commit(client, group, {(topic, 0): 1}, metadata="x" * 5000) == {
        (topic, 0): E.OFFSET_METADATA_TOO_LARGE}
    # Every version kafka-python defines decodes and answers (v0-v2 carry no group fields).
    for version in range(5):
        assert txn_commit(client, group, {(topic, 0): 9}, version=version) == {(topic, 0): E.NONE}
    # v5 is a transaction.version 2 client's: the offsets partition is added to its
    # transaction first, whatever the verification setting (Kafka), and this test's
    # producer has no transaction at the coordinator.
    assert txn_commit(client, group, {(topic, 0): 10}, version=5) == {
        (topic, 0): E.INVALID_PRODUCER_ID_MAPPING}
    assert marker(broker, group, committed=True) == NONE
    assert fetch(client, group, topic, stable=True) == (9, NONE)


def test_restart_keeps_committed_drops_aborted_and_pending_stays_pending(
    tmp_path, raw_client, create_topic
):
    with _running(tmp_path, CONFIGS) as first:
        topic = create_topic(first.bootstrap, partitions=1)
        client = raw_client(first.bootstrap)
        for group, producer in (("committed", 1), ("aborted", 2), ("pending", 3)):
            assert plain_commit(client, group, topic, 1) == NONE
            assert txn_commit(client, group, {(topic, 0): 50}, producer_id=producer) == {
                (topic, 0): NONE}
        assert marker(first, "committed", True, producer_id=1) == NONE
        assert marker(first, "aborted", False, producer_id=2) == NONE
    with _running(tmp_path, CONFIGS) as second:
        client = raw_client(second.bootstrap)
        assert fetch(client, "committed", topic, stable=True) == (50, NONE)
        assert fetch(client, "aborted", topic, stable=True) == (1, NONE)
        assert fetch(client, "pending", topic, stable=False) == (1, NONE)
        assert fetch(client, "pending", topic, stable=True) == (-1, UNSTABLE)
        # The transaction coordinator finishes it after its own load.
        assert marker(second, "pending", True, producer_id=3) == NONE
        assert fetch(client, "pending", topic, stable=True) == (50, NONE)


def test_compacted_offsets_topic_reloads_transactional_offsets(
    tmp_path, raw_client, create_topic
):
    """The cleaner compacts ``__consumer_offsets`` (small segments) while transactions
    commit into it; after a restart every group has what it had."""
    configs = _compacting_configs(segment_bytes=2048)
    expected: dict[str, int] = {}
    with _running(tmp_path, configs) as first:
        topic = create_topic(first.bootstrap, partitions=1)
        client = raw_client(first.bootstrap)
        for round_ in range(1, 41):
            for group in ("txn-a", "txn-b"):
                producer = 10 if group == "txn-a" else 11
                assert txn_commit(client, group, {(topic, 0): round_}, producer_id=producer) == {
                    (topic, 0): NONE}
                committed = round_ % 4 != 0  # every fourth transaction aborts
                assert marker(first, group, committed, producer_id=producer) == NONE
                if committed:
                    expected[group] = round_
            assert plain_commit(client, "plain", topic, round_) == NONE
            expected["plain"] = round_
        # One transaction left open across the restart.
        assert txn_commit(client, "txn-a", {(topic, 0): 999}, producer_id=10) == {
            (topic, 0): NONE}
        _wait_cleaned(tmp_path, 100)
    with _running(tmp_path, configs) as second:
        client = raw_client(second.bootstrap)
        kept = sum(
            len(records) for h, records in offsets_partition_batches(second, "plain")
            if not h.is_control
        )
        assert kept < 40 * 3 // 2  # compaction did remove old commits of every kind
        assert fetch(client, "plain", topic, stable=True) == (expected["plain"], NONE)
        assert fetch(client, "txn-b", topic, stable=True) == (expected["txn-b"], NONE)
        assert fetch(client, "txn-a", topic, stable=False) == (expected["txn-a"], NONE)
        assert fetch(client, "txn-a", topic, stable=True) == (-1, UNSTABLE)
        assert marker(second, "txn-a", True, producer_id=10) == NONE
        assert fetch(client, "txn-a", topic, stable=True) == (999, NONE)


def test_cleaner_never_lets_an_aborted_offset_hide_a_committed_one(
    tmp_path, raw_client, create_topic
):
    """The latest record of a key is an aborted transaction's: compaction must keep the
    committed one before it (Kafka's cleaner leaves aborted batches out of its offset
    map and removes them), or a reload would lose the group's committed offset."""
    configs = _compacting_configs(segment_bytes=1024)
    with _running(tmp_path, configs) as first:
        topic = create_topic(first.bootstrap, partitions=1)
        client = raw_client(first.bootstrap)
        assert plain_commit(client, "shadowed", topic, 7) == NONE
        assert txn_commit(client, "shadowed", {(topic, 0): 8}, producer_id=20) == {
            (topic, 0): NONE}
        assert marker(first, "shadowed", False, producer_id=20) == NONE
        for round_ in range(60):  # push both into closed, cleanable segments
            assert plain_commit(client, "filler", topic, round_) == NONE
        end = first.on_loop(
            lambda: first.broker.topics.partition(OFFSETS_TOPIC, 0).log.log_end_offset
        )
        _wait_cleaned(tmp_path, end - 10)
    with _running(tmp_path, configs) as second:
        client = raw_client(second.bootstrap)
        assert fetch(client, "shadowed", topic, stable=True) == (7, NONE)


def test_pending_offsets_survive_kill_9(tmp_path, broker_process, raw_client, create_topic):
    """A TxnOffsetCommit acknowledged just before the process dies is pending after
    the restart: not lost, not committed (its transaction has no marker yet)."""
    data_dir = tmp_path / "data"
    args = (
        "--config", "offsets.topic.num.partitions=2",
        "--config", "transaction.partition.verification.enable=false",
    )
    first = broker_process(data_dir, *args)
    topic = create_topic(first.bootstrap, partitions=1)
    client = raw_client(first.bootstrap)
    assert plain_commit(client, "crashed", topic, 4) == NONE
    assert txn_commit(client, "crashed", {(topic, 0): 44}) == {(topic, 0): NONE}
    first.kill()
    second = broker_process(data_dir, *args)
    client = raw_client(second.bootstrap)
    assert fetch(client, "crashed", topic, stable=False) == (4, NONE)
    assert fetch(client, "crashed", topic, stable=True) == (-1, UNSTABLE)
    assert second.terminate() == 0
