"""The transaction coordinator across restarts: kill -9 mid-transaction, a crash between
PrepareCommit and the markers, and transactional id expiration that survives a restart.

After a restart the coordinator reloads ``__transaction_state``: PrepareCommit and
PrepareAbort are completed (markers written to every partition), Ongoing
transactions stay until they time out (then aborted) or their producer re-inits.
"""

from __future__ import annotations

import gc
import time
import uuid
from dataclasses import replace
from pathlib import Path

from confluent_kafka import Producer
from kafka.protocol.admin import DescribeTransactionsRequest
from kafka.protocol.producer import InitProducerIdRequest

from kafkette.broker.clock import now_ms
from kafkette.broker.config import load_config
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.internal_topics import TRANSACTION_STATE_TOPIC
from kafkette.broker.transactions.log_records import encode_key, encode_value
from kafkette.log import DataDir
from kafkette.wire.record_batch import read_header
from kafkette.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    decode_batches,
    parse_control_record,
)

TIMEOUT = 30
COMMIT = int(ControlRecordType.COMMIT)
ABORT = int(ControlRecordType.ABORT)


def _txn_id() -> str:
    return f"txn-{uuid.uuid4().hex[:10]}"


def _append_txn_state(data_dir, index: int, transactional_id: str, metadata) -> None:
    """Append ``metadata`` as ``transactional_id``'s latest record to
    ``__transaction_state`` partition ``index`` of a stopped broker's data dir:
    the state a broker killed at that moment would have left for the next one."""
    config = load_config({}, data_dir=data_dir)
    data = DataDir.open(data_dir, config.log, now_ms)
    try:
        batch = bytearray(
            build_batch([Record(0, 0, encode_key(transactional_id), encode_value(metadata))])
        )
        data.partition(TRANSACTION_STATE_TOPIC, index).append(batch, [read_header(batch)])
    finally:
        data.close()


def _producer(bootstrap: str, transactional_id: str, **extra: object) -> Producer:
    config = {"bootstrap.servers": bootstrap, "transactional.id": transactional_id}
    config.update(extra)
    return Producer(config)


def _wait_for(predicate, what: str, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _fetched_markers(client, topic: str, partition: int) -> list[tuple[int, int]]:
    """(marker type, producer id) of every control batch, fetched over the wire."""
    data = client.fetch(topic, partition, 0)
    assert data.error_code == 0
    found = []
    for header, records in decode_batches(bytes(data.records or b"")):
        if header.is_control:
            found.append((int(parse_control_record(records[0])[0]), header.producer_id))
    return found


def _describe(client, *transactional_ids: str) -> dict[str, tuple[str, int]]:
    response = client.request(
        DescribeTransactionsRequest(transactional_ids=list(transactional_ids)), 0
    )
    return {
        s.transactional_id: (s.transaction_state, s.producer_id)
        for s in response.transaction_states
        if s.error_code == 0
    }


def test_kill_9_commit_completes_and_ongoing_times_out(
    broker_process, tmp_path: Path, create_topic, raw_client
):
    configs = (
        "--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
    )
    data_dir = tmp_path / "data"
    process = broker_process(data_dir, *configs)
    topic = create_topic(process.bootstrap, partitions=2)
    committer_id, slow_id = _txn_id(), _txn_id()

    slow = _producer(process.bootstrap, slow_id, **{"transaction.timeout.ms": 3000})
    slow.init_transactions(TIMEOUT)
    slow.begin_transaction()
    slow.produce(topic, value=b"never committed", partition=0)
    slow.flush(TIMEOUT)

    committer = _producer(process.bootstrap, committer_id)
    committer.init_transactions(TIMEOUT)
    committer.begin_transaction()
    for i in range(4):
        committer.produce(topic, value=b"kept %d" % i, partition=i % 2)
    committer.commit_transaction(TIMEOUT)
    process.kill()  # the markers may or may not be written yet
    del slow, committer
    gc.collect()

    process = broker_process(data_dir, *configs)
    client = raw_client(process.bootstrap)
    states = _wait_for(
        lambda: (
            lambda s: s if s.get(slow_id, ("",))[0] == "CompleteAbort"
            and s.get(committer_id, ("",))[0] == "CompleteCommit" else None
        )(_describe(client, committer_id, slow_id)),
        "the commit completed and the timed-out transaction aborted",
    )
    committer_pid, slow_pid = states[committer_id][1], states[slow_id][1]
    for partition in (0, 1):
        markers = _fetched_markers(client, topic, partition)
        assert markers.count((COMMIT, committer_pid)) >= 1, markers
        assert (ABORT, committer_pid) not in markers
    assert (ABORT, slow_pid) in _fetched_markers(client, topic, 0)
    assert all(pid != slow_pid for _, pid in _fetched_markers(client, topic, 1))


def test_a_crash_between_prepare_commit_and_the_markers_is_completed_on_start(
    tmp_path: Path, create_topic
):
    """The exact record the coordinator writes before its markers is appended while the
    broker is down, as if it had died right after writing it."""
    data_dir = tmp_path / "data"
    transactional_id = _txn_id()
    with EmbeddedBroker.start(data_dir=data_dir) as embedded:
        topic = create_topic(embedded.bootstrap, partitions=2)
        producer = _producer(embedded.bootstrap, transactional_id)
        producer.init_transactions(TIMEOUT)
        producer.begin_transaction()
        producer.produce(topic, value=b"a", partition=0)
        producer.produce(topic, value=b"b", partition=1)
        producer.flush(TIMEOUT)
        ongoing = embedded.broker.transactions.get(transactional_id)
        index = embedded.broker.transactions.partition_for(transactional_id)
        del producer
        gc.collect()
    assert ongoing is not None and ongoing.state.display_name == "Ongoing"

    prepared = ongoing.prepare_end(True, now_ms())
    _append_txn_state(data_dir, index, transactional_id, prepared)

    with EmbeddedBroker.start(data_dir=data_dir) as embedded:
        coordinator = embedded.broker.transactions
        _wait_for(
            lambda: embedded.on_loop(lambda: coordinator.get(transactional_id)).state.display_name
            == "CompleteCommit",
            "CompleteCommit after the restart",
        )
        for partition in (0, 1):
            log = embedded.broker.topics.partition(topic, partition).log
            batches = decode_batches(log.read(0, 1 << 20).to_bytes())
            controls = [
                (int(parse_control_record(records[0])[0]), header.producer_epoch)
                for header, records in batches
                if header.is_control
            ]
            assert controls == [(COMMIT, ongoing.producer_epoch)]
        # The id works on: a new instance gets the next epoch.
        successor = _producer(embedded.bootstrap, transactional_id)
        successor.init_transactions(TIMEOUT)
        after = embedded.on_loop(lambda: coordinator.get(transactional_id))
        assert (after.producer_id, after.producer_epoch) == (
            ongoing.producer_id,
            ongoing.producer_epoch + 1,
        )
        del successor
        gc.collect()


def test_expired_transactional_ids_stay_forgotten_after_restart(tmp_path: Path):
    data_dir = tmp_path / "data"
    configs = {
        "transactional.id.expiration.ms": "500",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "200",
    }
    transactional_id = _txn_id()
    with EmbeddedBroker.start(data_dir=data_dir, configs=configs) as embedded:
        producer = _producer(embedded.bootstrap, transactional_id)
        producer.init_transactions(TIMEOUT)
        coordinator = embedded.broker.transactions
        assert embedded.on_loop(lambda: coordinator.get(transactional_id)) is not None
        _wait_for(
            lambda: embedded.on_loop(lambda: coordinator.get(transactional_id)) is None,
            "the id to expire",
        )
        del producer
        gc.collect()
    with EmbeddedBroker.start(data_dir=data_dir) as embedded:
        coordinator = embedded.broker.transactions
        assert embedded.on_loop(lambda: coordinator.get(transactional_id)) is None


def test_an_exhausted_epoch_gets_a_new_producer_id(tmp_path: Path, raw_client):
    """Epoch 32766 is Kafka's last usable one: the next InitProducerId rotates to a new
    producer id at epoch 0. The id's record is written with that epoch while the broker is
    down (reaching it by 32766 re-inits would take minutes). A retry of the rotating
    request gets the same answer; a zombie of the old id (any other epoch) is fenced,
    never bumped onto the new id (Kafka's isValidProducerId)."""
    data_dir = tmp_path / "data"
    transactional_id = _txn_id()
    with EmbeddedBroker.start(data_dir=data_dir) as embedded:
        producer = _producer(embedded.bootstrap, transactional_id)
        producer.init_transactions(TIMEOUT)
        coordinator = embedded.broker.transactions
        first = embedded.on_loop(lambda: coordinator.get(transactional_id))
        index = coordinator.partition_for(transactional_id)
        del producer
        gc.collect()
    worn = replace(first, producer_epoch=32766)
    _append_txn_state(data_dir, index, transactional_id, worn)
    with EmbeddedBroker.start(data_dir=data_dir) as embedded:
        client = raw_client(embedded.bootstrap)

        def init(producer_id: int, epoch: int) -> tuple[int, int, int]:
            answer = client.request(
                InitProducerIdRequest(
                    transactional_id=transactional_id, transaction_timeout_ms=60000,
                    producer_id=producer_id, producer_epoch=epoch,
                ),
                4,
            )
            return answer.error_code, answer.producer_id, answer.producer_epoch

        error, new_id, new_epoch = init(first.producer_id, 32766)
        assert (error, new_epoch) == (0, 0) and new_id != first.producer_id
        assert init(first.producer_id, 32766) == (0, new_id, 0)  # a retry: same answer
        assert init(first.producer_id, 0)[0] == 90  # PRODUCER_FENCED, not a bump
        producer = _producer(embedded.bootstrap, transactional_id)
        producer.init_transactions(TIMEOUT)
        coordinator = embedded.broker.transactions
        rotated = embedded.on_loop(lambda: coordinator.get(transactional_id))
        assert rotated.producer_id == new_id
        assert rotated.producer_epoch == 1
        del producer
        gc.collect()
