"""The follower loop and its transport against a real broker, without ZooKeeper.

A single-node kafkette broker plays the leader: it answers Fetch and
OffsetForLeaderEpoch as any broker does (epoch 0, HW = LEO). The follower is a
real ``PartitionLog`` driven by ``ReplicaFetcher``: it must end byte-identical
to the leader, truncating a divergent tail first.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from bench.harness.raw_wire import WireConnection
from kafkette.broker.clock import now_ms
from kafkette.broker.cluster.config import ClusterConfig
from kafkette.broker.cluster.peer_client import PLAINTEXT_PEERS, PeerClient, PeerError
from kafkette.broker.cluster.replica_fetcher import ReplicaFetcher, truncation_step
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.partitions import Partition
from kafkette.broker.partitions.follower import split_batches
from kafkette.log import DataDir
from kafkette.log.config import LogConfig
from kafkette.log.leader_epoch_cache import LeaderEpochCache
from kafkette.wire.apis import ApiKey
from kafkette.wire.client_connection import Response
from kafkette.wire.record_batch import patch_leader_epoch, read_header

# ApiVersions v3+ must name the client software (Kafka refuses an empty name: 42).
SOFTWARE = {"client_software_name": "kafkette-tests", "client_software_version": "1"}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def leader(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    data_dir: Path = tmp_path_factory.mktemp("leader")
    broker = EmbeddedBroker.start(data_dir=data_dir, configs={"num.partitions": "1"})
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def call(address: str, api_key: int, version: int, body: dict) -> Response:
    with WireConnection(address, "fetcher-test", timeout=30) as connection:
        connection.send(api_key, version, body)
        return connection.receive()


def batch(values: list[bytes], epoch: int = 0) -> bytearray:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i, value in enumerate(values):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=None, value=value, headers=[])
    data = bytearray(builder.build())
    patch_leader_epoch(data, epoch)
    return data


def produce(address: str, topic: str, values: list[bytes]) -> int:
    response = call(
        address,
        ApiKey.PRODUCE,
        8,
        {
            "acks": 1,
            "timeout_ms": 10000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": bytes(batch(values))}]}
            ],
        },
    )
    answer = response.body["responses"][0]["partition_responses"][0]
    assert answer["error_code"] == 0
    return answer["base_offset"]


def create(address: str, topic: str) -> None:
    response = call(
        address,
        ApiKey.CREATE_TOPICS,
        5,
        {
            "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 10000,
        },
    )
    assert response.body["topics"][0]["error_code"] == 0


def log_bytes(directory: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def config() -> ClusterConfig:
    return ClusterConfig(
        broker_id=2,
        zookeeper_connect="unused:2181",
        replica_fetch_backoff_ms=100,
        replica_fetch_wait_max_ms=100,
    )


async def follow_until(fetcher: ReplicaFetcher, partition: Partition, leo: int) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetcher.run)
        with trio.fail_after(30):
            while partition.log.log_end_offset < leo:
                await trio.sleep(0.05)
            # One more round trip so the HW of the last answer is applied.
            while partition.log.high_watermark < leo:
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()


def test_follower_truncates_a_divergent_tail_then_copies_the_leader_byte_for_byte(
    leader: EmbeddedBroker, tmp_path: Path
) -> None:
    topic = "follow-" + uuid.uuid4().hex[:8]
    address = leader.bootstrap
    create(address, topic)
    produce(address, topic, [b"a0", b"a1"])

    follower_dir = DataDir.open(tmp_path / "follower", LogConfig(), now_ms)
    try:
        follower_dir.create_topic(topic, 1, {})
        log_ = follower_dir.partition(topic, 0)
        log_.enable_replication(0)
        partition = Partition(topic, 0, log_)
        host, _, port = address.rpartition(":")
        appended: list[Partition] = []

        # Round 1: an empty follower copies the first batch.
        fetcher = ReplicaFetcher(
            1, host, int(port), 2, config(), appended.append, security=PLAINTEXT_PEERS
        )
        fetcher.assign(partition, 0)
        trio.run(follow_until, fetcher, partition, 2)
        assert appended

        # A tail the leader never had, written in a later epoch (as by a deposed leader).
        divergent = batch([b"x2", b"x3", b"x4"], epoch=1)
        patch_base_offset(divergent, 2)
        log_.append(divergent, [read_header(divergent)])
        assert log_.leader_epoch_cache.latest_epoch == 1
        produce(address, topic, [b"b2", b"b3"])
        produce(address, topic, [b"c4", b"c5", b"c6"])

        # Round 2, a new epoch: OffsetForLeaderEpoch(1) -> the leader's (0, 7); the
        # follower's epoch 0 ends at 2, so it truncates to 2 and fetches from there.
        fetcher = ReplicaFetcher(
            1, host, int(port), 2, config(), appended.append, security=PLAINTEXT_PEERS
        )
        fetcher.assign(partition, 0)
        trio.run(follow_until, fetcher, partition, 7)
        assert log_.log_end_offset == 7
        assert log_.high_watermark == 7
        leader_dir = Path(leader.broker.config.data_dir) / f"{topic}-0"
        follower_bytes = log_bytes(tmp_path / "follower" / f"{topic}-0")
        assert follower_bytes == log_bytes(leader_dir)
        assert b"x3" not in follower_bytes
    finally:
        follower_dir.close()


def patch_base_offset(data: bytearray, offset: int) -> None:
    data[0:8] = offset.to_bytes(8, "big")


def test_split_batches_skips_held_batches_and_a_cut_tail() -> None:
    first = batch([b"a", b"b"])
    second = batch([b"c"])
    patch_base_offset(second, 2)
    records = bytes(first + second)
    start, end, headers = split_batches(records, 0)
    assert (start, end, [h.base_offset for h in headers]) == (0, len(records), [0, 2])
    start, end, headers = split_batches(records, 2)
    assert (start, end, [h.base_offset for h in headers]) == (len(first), len(records), [2])
    start, end, headers = split_batches(records[:-3], 0)
    assert (start, end, [h.base_offset for h in headers]) == (0, len(first), [0])
    assert split_batches(records, 3)[2] == []


def test_peer_client_survives_a_cancelled_request_and_reports_refusals(
    leader: EmbeddedBroker,
) -> None:
    host, _, port = leader.bootstrap.rpartition(":")
    topic = "peer-" + uuid.uuid4().hex[:8]
    create(leader.bootstrap, topic)

    async def main() -> None:
        client = PeerClient(host, int(port), "peer-test", 1 << 20)
        versions = await client.request(ApiKey.API_VERSIONS, 3, SOFTWARE)
        assert versions.body["error_code"] == 0
        long_poll = {
            "replica_id": -1,
            "max_wait_ms": 5000,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "topics": [
                {
                    "topic": topic,
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        }
        with trio.move_on_after(0.3) as scope:
            await client.request(ApiKey.FETCH, 12, long_poll)
        assert scope.cancelled_caught
        # The half-done exchange was dropped with its connection: the next one is clean.
        metadata = await client.request(ApiKey.METADATA, 12, {"topics": None})
        assert any(t["name"] == topic for t in metadata.body["topics"])
        await client.aclose()

        with socket.socket() as sock:  # a port nobody listens on
            sock.bind(("127.0.0.1", 0))
            dead_port = sock.getsockname()[1]
        dead = PeerClient("127.0.0.1", dead_port, "peer-test", 1 << 20)
        with pytest.raises(PeerError):
            await dead.request(ApiKey.API_VERSIONS, 3, SOFTWARE)

    trio.run(main)


def converge(leader_cache: LeaderEpochCache, leader_leo: int, log_) -> list[tuple[int, int]]:
    """The follower's OffsetForLeaderEpoch rounds against ``leader_cache``, as
    ReplicaFetcher runs them: (epoch asked, offset truncated to) per round."""
    rounds: list[tuple[int, int]] = []
    for _ in range(10):
        asked = log_.leader_epoch_cache.latest_epoch
        leader_epoch, leader_end = leader_cache.end_offset_for(asked, leader_leo)
        own_epoch, own_end = log_.end_offset_for_epoch(leader_epoch)
        target, done = truncation_step(
            leader_epoch, leader_end, own_epoch, own_end, log_.log_end_offset
        )
        log_.truncate_to(target)
        rounds.append((asked, target))
        if done:
            return rounds
    raise AssertionError(f"no agreement after {rounds}")


@pytest.mark.parametrize("follower_leo", [55, 50])
def test_follower_asks_again_until_its_epoch_agrees_with_the_leaders(
    tmp_path: Path, follower_leo: int
) -> None:
    """KIP-279: leader epochs [(0,0),(1,40),(3,60)], follower [(0,0),(2,50)]. The
    leader answers (1, 60) for epoch 2, which the follower never had: its own answer
    for 1 is (0, 50), so it cuts at 50 and asks again for epoch 0 -> (0, 40) -> 40,
    dropping the epoch-0 records 40-49 where the leader holds epoch-1 records. With
    follower_leo 50 the follower led epoch 2 without appending: the entry at its log
    end must go all the same, or it would ask for epoch 2 forever."""
    leader_cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, start in [(0, 0), (1, 40), (3, 60)]:
        leader_cache.assign(epoch, start)
    follower_dir = DataDir.open(tmp_path / "follower", LogConfig(), now_ms)
    try:
        follower_dir.create_topic("t", 1, {})
        log_ = follower_dir.partition("t", 0)
        first = batch([b"e0-%d" % i for i in range(50)], epoch=0)
        log_.append(first, [read_header(first)])
        if follower_leo > 50:
            tail = batch([b"e2-%d" % i for i in range(follower_leo - 50)], epoch=2)
            patch_base_offset(tail, 50)
            log_.append(tail, [read_header(tail)])
        else:
            log_.leader_epoch_cache.assign(2, 50)
        assert log_.leader_epoch_cache.latest_epoch == 2
        assert log_.log_end_offset == follower_leo

        assert converge(leader_cache, 70, log_) == [(2, 50), (0, 40)]
        # Batches are cut whole: the 50-record epoch-0 batch holding 40 goes entirely.
        assert log_.log_end_offset <= 40
        assert log_.leader_epoch_cache.latest_epoch in (0, -1)
    finally:
        follower_dir.close()


def test_truncation_step_decisions() -> None:
    # Same epoch on both sides: the smaller end, done.
    assert truncation_step(3, 60, 3, 80, 90) == (60, True)
    assert truncation_step(3, 60, 3, 55, 90) == (55, True)
    # The follower's own answer is an older epoch: cut at its end, ask again.
    assert truncation_step(1, 60, 0, 50, 55) == (50, False)
    # Nothing known here: the leader's end (never past the LEO).
    assert truncation_step(1, 60, -1, -1, 30) == (30, True)
