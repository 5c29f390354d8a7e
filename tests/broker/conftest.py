"""Fixtures for the broker's end-to-end tests: real brokers, real clients, real sockets.

Test modules cannot import this file (pytest runs with ``--import-mode=importlib``),
so helpers reach them as fixtures:

- ``broker``: one in-process broker per test module (``num.partitions=3``).
- ``broker_process``: a factory that starts ``kafkette serve`` as a subprocess and
  kills whatever is still running at teardown.
- ``raw_client``: a factory of ``RawClient`` connections, which speak the protocol
  with kafka-python's own message classes (an encoder independent of ours), on
  ``bench.harness.raw_wire.RawConnection``.
- ``create_topic`` / ``read_all`` / ``unique_name``: topic creation and whole-topic
  reads with confluent-kafka, bounded by timeouts so that nothing can hang.

Every wait here has a deadline; a test that hits one fails, it never hangs.
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest

from bench.harness import raw_wire
from bench.harness.raw_wire import RawConnection, fetch_request
from bench.harness.serve_process import RestartedServe, ServeProcess
from bench.harness.topic_reader import ReadRecord, read_topic
from kafkette.broker.embedded import EmbeddedBroker

# --- in-process broker -------------------------------------------------------


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    """One broker per test module; tests use their own topics on it."""
    data_dir = tmp_path_factory.mktemp("broker-data")
    embedded = EmbeddedBroker.start(data_dir=data_dir, configs={"num.partitions": "3"})
    try:
        yield embedded
    finally:
        gc.collect()  # drop librdkafka handles the tests left behind: they close their sockets
        embedded.stop(timeout=30)


# --- subprocess broker ------------------------------------------------------


class BrokerProcess(ServeProcess):
    """``kafkette serve`` in a child process, listening on 127.0.0.1 with a free port.

    ``start`` waits (bounded) for the ready line; ``stdout_lines`` holds every
    line the process printed on stdout, ``stderr_text()`` what it logged.
    """

    def __init__(self, data_dir: Path | None, args: list[str], log_path: Path) -> None:
        self.data_dir = data_dir
        data_args = ["--data-dir", str(data_dir)] if data_dir is not None else []
        super().__init__(["--listen", "127.0.0.1:0", *data_args, *args], log_path)


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """Factory: ``broker_process(data_dir, "--config", "k=v", ready=True)``.

    ``data_dir=None`` leaves ``--data-dir`` out (the config then names it).
    """
    started: list[BrokerProcess] = []

    def start(data_dir: Path | None, *args: str, ready: bool = True) -> BrokerProcess:
        log_path = tmp_path / f"broker-{len(started)}.log"
        process = BrokerProcess(data_dir, list(args), log_path)
        started.append(process)
        if ready:
            process.wait_ready()
        return process

    yield start
    for process in started:
        process.kill()


# Every other start of a kill -9 series fsyncs each append: its answers leave later, so
# more batches are written but unanswered when the kill lands (and PrepareCommit and its
# markers lie further apart); the others run with Kafka's defaults.
FLUSH_EACH_APPEND = ("--config", "log.flush.interval.messages=1")


@pytest.fixture
def kill_9_broker(tmp_path: Path, free_port: int) -> Iterator[Callable[..., RestartedServe]]:
    """Factory: ``kill_9_broker(data_dir, "--config", "k=v")`` -> a ``RestartedServe`` on a
    fixed free port, for the kill -9 series (``crash_load.run_series`` and
    ``txn_crash_load.run_series`` take its ``start`` and ``kill``); every other start with
    ``FLUSH_EACH_APPEND``. Whatever still runs is killed at teardown."""
    made: list[RestartedServe] = []

    def make(data_dir: Path, *args: str) -> RestartedServe:
        log_path = tmp_path / f"kill-9-broker-{len(made)}.log"
        broker = RestartedServe(data_dir, free_port, args, log_path, alternate=FLUSH_EACH_APPEND)
        made.append(broker)
        return broker

    yield make
    for broker in made:
        if broker.serve is not None:
            broker.serve.kill()


# --- raw protocol client --------------------------------------------------------


class RawClient(RawConnection):
    """One blocking socket speaking Kafka's framing; for requests clients never send.

    Messages are kafka-python protocol objects (``kafka.protocol.*``); every read
    has the socket timeout, so a broker that never answers fails the test.
    """

    # The few requests tests build by hand ---------------------------------------

    def produce(
        self, topic: str, partition: int, records: bytes, acks: int = -1, version: int = 9
    ) -> object:
        """Produce one record set; returns that partition's response (kafka-python object)."""
        data = ProduceRequest.TopicProduceData
        request = ProduceRequest(
            transactional_id=None,
            acks=acks,
            timeout_ms=10_000,
            topic_data=[
                data(
                    name=topic,
                    partition_data=[data.PartitionProduceData(index=partition, records=records)],
                )
            ],
        )
        response = self.request(request, version)
        return response.responses[0].partition_responses[0]  # type: ignore[attr-defined]

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_wait_ms: int = 0,
        min_bytes: int = 0,
        max_bytes: int = 1 << 20,
    ) -> object:
        """Fetch v11 from one partition; returns its partition data (``records`` is bytes)."""
        request = fetch_request(topic, partition, offset, max_wait_ms, min_bytes, max_bytes)
        response = self.request(request, 11)
        return response.responses[0].partitions[0]  # type: ignore[attr-defined]

    def init_producer_id(self) -> tuple[int, int]:
        """InitProducerId v4 for an idempotent (non-transactional) producer: (id, epoch)."""
        request = InitProducerIdRequest(
            transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
        )
        response = self.request(request, 4)
        assert response.error_code == 0, response  # type: ignore[attr-defined]
        return response.producer_id, response.producer_epoch  # type: ignore[attr-defined]


@pytest.fixture
def raw_client() -> Iterator[Callable[[str], RawClient]]:
    """Factory of raw connections, all closed at teardown."""
    clients: list[RawClient] = []

    def connect(bootstrap: str, timeout: float = 10.0) -> RawClient:
        client = RawClient(bootstrap, timeout)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


# --- topics and whole-topic reads -------------------------------------------------


def unique_topic_name(prefix: str = "e2e") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def create_topic_with_admin(
    bootstrap: str,
    partitions: int = 3,
    configs: dict[str, str] | None = None,
    name: str | None = None,
) -> str:
    """Create a topic with confluent's AdminClient; returns its name."""
    name = name or unique_topic_name()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1, config=dict(configs or {}))], operation_timeout=10
    )
    futures[name].result(timeout=15)
    return name


@pytest.fixture
def unique_name() -> str:
    """A topic name no other test uses."""
    return unique_topic_name()


@pytest.fixture
def create_topic() -> Callable[..., str]:
    """``create_topic(bootstrap, partitions=3, configs=None, name=None) -> name``."""
    return create_topic_with_admin


@pytest.fixture
def free_port() -> int:
    """A TCP port free now on 127.0.0.1, for a broker restarted on the same port."""
    return raw_wire.free_port()


@pytest.fixture
def read_all() -> Callable[..., list[ReadRecord]]:
    """``read_all(bootstrap, topic, partitions, timeout=30) -> [ReadRecord]``."""
    return read_topic
