"""Transactional load for kill -9 series, and the checks made after it.

Run for many rounds by ``bench.txn_crash_series`` and for a few in CI by
``tests/broker/test_crash_transactions.py`` (tests may import bench; bench never imports
tests/).

- :class:`TxnLoad`: one confluent-kafka transactional producer in a thread,
  running numbered transactions over a few partitions of two topics. Each
  transaction's records carry its load, its number, the client's plan
  (commit or abort, seeded random) and a sequence number; each also commits a
  consumer-group offset through ``send_offsets_to_transaction`` (offset =
  number + 1), the consume-transform-produce shape. The thread remembers what
  it produced per transaction and what the client was told: commit
  acknowledged, aborted (the commit was never asked for), or unknown (the
  commit was asked for and no answer came). On an error, or when the driver
  asks (as if the client process had died with the broker), the instance is
  dropped and a new one with the same ``transactional.id`` re-inits.
- :func:`run_series`: kill -9 / restart the broker at seeded random moments,
  some aimed at the commit or the abort (EndTxn, then the markers); then waits
  until the coordinator is idle and LSO == high watermark everywhere.
- :func:`check`: reads every partition raw (read_uncommitted, control batches
  included) and read_committed with confluent-kafka and kafka-python, and
  compares with what the clients were told.
"""

from __future__ import annotations

import faulthandler
import random
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from bench.harness.raw_wire import fetch_request, raw_request
from kafkette.wire.records import ControlRecordType, decode_batches, parse_control_record

QUIET = 2  # librdkafka log level: no line per refused reconnect
GROUP = "txn-crash-series"
TIMEOUT = 20.0  # per client call; a restart takes about a second
COMMIT = int(ControlRecordType.COMMIT)
ABORT = int(ControlRecordType.ABORT)

Target = tuple[str, int]  # (topic, partition)
TxnKey = tuple[int, int]  # (load index, transaction number)
RecordKey = tuple[str, int, int]  # (topic, partition, sequence in the transaction)


def topics_for(prefix: str) -> dict[str, int]:
    """Data topics (two, 3 + 2 partitions) and the input topic whose offsets are committed."""
    return {f"{prefix}-a": 3, f"{prefix}-b": 2, f"{prefix}-in": 2}


def encode_value(load: int, number: int, plan: str, target: Target, seq: int) -> bytes:
    return b"%d|%d|%s|%s|%d|%d" % (load, number, plan.encode(), target[0].encode(), target[1], seq)


def decode_value(value: bytes) -> tuple[TxnKey, str, RecordKey]:
    load, number, plan, topic, partition, seq = value.decode().split("|")
    return (int(load), int(number)), plan, (topic, int(partition), int(seq))


@dataclass
class Outcome:
    """One transaction as its client saw it."""

    plan: str  # "commit" or "abort": what the client meant to do
    records: set[RecordKey] = field(default_factory=set)
    commit_called: bool = False
    status: str = "open"  # committed | aborted | unknown (commit asked, no answer)


class TxnLoad(threading.Thread):
    """Numbered transactions from one ``transactional.id``, new instances as needed."""

    def __init__(
        self,
        bootstrap: str,
        index: int,
        data_targets: list[Target],
        input_topic: str,
        seed: int,
        commit_ratio: float = 0.6,
    ) -> None:
        super().__init__(daemon=True, name=f"txn-load-{index}")
        self.bootstrap = bootstrap
        self.index = index
        self.transactional_id = f"{GROUP}-{index}"
        self.data_targets = data_targets
        self.input = TopicPartition(input_topic, index)
        self.rng = random.Random(seed)
        self.commit_ratio = commit_ratio
        self.outcomes: dict[int, Outcome] = {}
        self.phase = "init"  # init | producing | committing | aborting | between
        self.instances = 0
        self.errors: Counter[str] = Counter()
        self.fatal: str = ""  # an instance could not even be created
        self._reinit = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._settled = 0
        self._dropped: list[Producer] = []

    def settled(self) -> int:
        """Transactions the client finished (acknowledged commit or abort)."""
        with self._lock:
            return self._settled

    def request_reinit(self) -> None:
        """Drop the instance at the next step, as if the client had died too."""
        self._reinit.set()

    def _new_instance(self) -> tuple[Producer, object]:
        self.phase = "init"
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.transactional_id,
                "linger.ms": 2,
                "message.timeout.ms": 60_000,
                "transaction.timeout.ms": 60_000,
                "retry.backoff.ms": 50,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "log_level": QUIET,
                # librdkafka 2.16 re-bootstraps when every broker is down (as on
                # one node during a restart) and then never sends the
                # TxnOffsetCommit of a pending send_offsets_to_transaction, which
                # hangs past its timeout (against Apache Kafka 4.0 too: the same
                # kill -9 there hung > 150 s; with "none" it timed out at 20 s).
                # "none" keeps the known broker instead.
                "metadata.recovery.strategy": "none",
            }
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                producer.init_transactions(TIMEOUT)
                break
            except KafkaException as exc:
                self.errors[f"init: {exc.args[0].name()}"] += 1
                if time.monotonic() > deadline or self._stopping.is_set():
                    raise
                time.sleep(0.2)
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "log_level": QUIET}
        )
        metadata = consumer.consumer_group_metadata()
        consumer.close()
        self.instances += 1
        return producer, metadata

    def _drop(self, producer: Producer) -> None:
        """Forget an instance without ending its transaction (the next one's init does)."""
        try:
            producer.purge(in_queue=True, in_flight=True, blocking=False)
        except KafkaException:
            pass
        self._dropped.append(producer)  # destroyed at the end: destroy can block

    def _end(self, producer: Producer, *, commit: bool) -> None:
        """EndTxn in short steps, so a reinit request can drop the instance mid-commit.

        librdkafka lets the application call commit/abort again after a timeout;
        when the driver asks for a new instance meanwhile, the instance is
        dropped with its EndTxn unanswered (the client died during the commit).
        """
        end = producer.commit_transaction if commit else producer.abort_transaction
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                end(0.5)
                return
            except KafkaException as exc:
                again = exc.args[0].retriable() and not self._reinit.is_set()
                if not again or time.monotonic() > deadline:
                    raise

    def run(self) -> None:
        producer = None
        metadata = None
        number = 0
        while not self._stopping.is_set():
            if producer is None:
                try:
                    producer, metadata = self._new_instance()
                except KafkaException as exc:
                    self.fatal = f"could not init an instance: {exc}"
                    return
                self._reinit.clear()
            outcome = Outcome("commit" if self.rng.random() < self.commit_ratio else "abort")
            self.outcomes[number] = outcome
            targets = self.rng.sample(self.data_targets, self.rng.randint(2, 4))
            counts = [self.rng.randint(1, 12) for _ in targets]
            try:
                producer.begin_transaction()
                self.phase = "producing"
                for target, count in zip(targets, counts, strict=True):
                    for seq in range(count):
                        value = encode_value(self.index, number, outcome.plan, target, seq)
                        producer.produce(target[0], value=value, partition=target[1])
                        outcome.records.add((target[0], target[1], seq))
                    producer.poll(0)
                offset = TopicPartition(self.input.topic, self.input.partition, number + 1)
                producer.send_offsets_to_transaction([offset], metadata, TIMEOUT)
                if self._reinit.is_set():
                    raise _Dropped()
                if outcome.plan == "commit":
                    self.phase = "committing"
                    outcome.commit_called = True
                    self._end(producer, commit=True)
                    outcome.status = "committed"
                else:
                    self.phase = "aborting"
                    self._end(producer, commit=False)
                    outcome.status = "aborted"
                self.phase = "between"
                with self._lock:
                    self._settled += 1
            except (KafkaException, _Dropped) as exc:
                outcome.status = "unknown" if outcome.commit_called else "aborted"
                if isinstance(exc, _Dropped):
                    self.errors["dropped on request"] += 1
                else:
                    error = exc.args[0]
                    self.errors[f"{self.phase}: {error.name()}"] += 1
                    if (
                        error.txn_requires_abort()
                        and not error.fatal()
                        and not self._reinit.is_set()
                    ):
                        try:
                            producer.abort_transaction(TIMEOUT)
                            number += 1
                            continue
                        except KafkaException as again:
                            self.errors[f"abort after error: {again.args[0].name()}"] += 1
                self._drop(producer)
                producer = None
            number += 1
        if producer is not None:
            self._dropped.append(producer)

    def stop(self) -> None:
        """Finish the current transaction, stop, and destroy every instance."""
        self._stopping.set()
        self.join(3 * TIMEOUT + 10)
        self._dropped.clear()


class _Dropped(Exception):
    """The driver asked for a new instance."""


# --- raw protocol (kafka-python's message classes over a socket) --------------


def _raw_request(bootstrap: str, request, version: int):
    return raw_request(bootstrap, request, version, "txn-crash-series")


def describe_transactions(bootstrap: str, ids: list[str]) -> dict[str, str]:
    """transactional id -> state name, as DescribeTransactions answers."""
    from kafka.protocol.admin import DescribeTransactionsRequest

    response = _raw_request(bootstrap, DescribeTransactionsRequest(transactional_ids=ids), 0)
    return {
        s.transactional_id: (s.transaction_state if s.error_code == 0 else f"error {s.error_code}")
        for s in response.transaction_states
    }


def raw_fetch(bootstrap: str, topic: str, partition: int, offset: int) -> tuple[int, bytes]:
    """(high watermark, record bytes) of one read_uncommitted Fetch v11."""
    request = fetch_request(topic, partition, offset, max_bytes=4 << 20)
    data = _raw_request(bootstrap, request, 11).responses[0].partitions[0]
    assert data.error_code == 0, (topic, partition, offset, data.error_code)
    return data.high_watermark, bytes(data.records or b"")


def raw_batches(bootstrap: str, topic: str, partition: int):
    """Every batch of a partition, control batches included, in log order."""
    offset, high_watermark = 0, None
    batches = []
    while high_watermark is None or offset < high_watermark:
        high_watermark, data = raw_fetch(bootstrap, topic, partition, offset)
        decoded = decode_batches(data)
        if not decoded:
            if offset < high_watermark:
                raise AssertionError(
                    f"{topic}/{partition}: no batch at {offset} < {high_watermark}"
                )
            break
        batches.extend(decoded)
        offset = decoded[-1][0].next_offset
    return batches


# --- end state ----------------------------------------------------------------


def end_offsets(
    bootstrap: str, targets: list[Target]
) -> tuple[dict[Target, int], dict[Target, int]]:
    """(high watermarks, last stable offsets): ListOffsets latest, uncommitted and committed."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    result = []
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
        try:
            tps = [KafkaTopicPartition(t, p) for t, p in targets]
            result.append(
                {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(tps).items()}
            )
        finally:
            consumer.close()
    return result[0], result[1]


def wait_until_settled(
    bootstrap: str, ids: list[str], targets: list[Target], timeout: float = 60.0
) -> str:
    """Wait until no id has an open transaction and LSO == HW everywhere; '' or what is not."""
    deadline = time.monotonic() + timeout
    idle = {"Empty", "CompleteCommit", "CompleteAbort"}
    while True:
        states = describe_transactions(bootstrap, ids)
        busy = {i: s for i, s in states.items() if s not in idle}
        high, stable = ({}, {}) if busy else end_offsets(bootstrap, targets)
        behind = {t: (stable.get(t), high[t]) for t in high if stable.get(t) != high[t]}
        if not busy and not behind:
            return ""
        if time.monotonic() > deadline:
            return f"after {timeout}s: transactions {busy}, LSO/HW {behind}"
        time.sleep(0.2)


def read_committed_confluent(
    bootstrap: str, targets: list[Target], ends: dict[Target, int], timeout: float = 60.0
) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{GROUP}-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 100,
            "log_level": QUIET,
        }
    )
    try:
        pending = {t for t in targets if ends[t] > 0}
        consumer.assign([TopicPartition(t, p, 0) for t, p in sorted(pending)])
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while pending:
            if time.monotonic() > deadline:
                raise AssertionError(f"read_committed (confluent) timed out; left {pending}")
            for message in consumer.consume(1000, 0.5):
                target = (message.topic(), message.partition())
                error = message.error()
                if error is not None:
                    if error.code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(f"consume error: {error}")
                    if message.offset() >= ends[target]:
                        pending.discard(target)
                    continue
                if message.offset() < ends[target]:
                    values.append(message.value())
                if message.offset() + 1 >= ends[target]:
                    pending.discard(target)
        return values
    finally:
        consumer.close()


def read_committed_kafka_python(
    bootstrap: str, targets: list[Target], ends: dict[Target, int], timeout: float = 60.0
) -> list[bytes]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
    )
    try:
        tps = [KafkaTopicPartition(t, p) for t, p in targets]
        consumer.assign(tps)
        for tp in tps:
            consumer.seek(tp, 0)
        values: list[bytes] = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[(tp.topic, tp.partition)] for tp in tps):
            if time.monotonic() > deadline:
                raise AssertionError("read_committed (kafka-python) timed out")
            for records in consumer.poll(timeout_ms=500).values():
                values.extend(r.value for r in records if r.offset < ends[(r.topic, r.partition)])
        return values
    finally:
        consumer.close()


class LiveReader(threading.Thread):
    """A read_committed consumer running through the whole series, kills included.

    Whatever it sees must belong to a transaction the log finally commits: the
    LSO may never expose records of an open or aborted transaction, before or
    after a restart.
    """

    def __init__(self, bootstrap: str, targets: list[Target]) -> None:
        super().__init__(daemon=True, name="live-reader")
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{GROUP}-live",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "metadata.recovery.strategy": "none",
                "log_level": QUIET,
            }
        )
        self.consumer.assign([TopicPartition(t, p, 0) for t, p in targets])
        self.seen: list[bytes] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            while not self._stopping.is_set():
                for message in self.consumer.consume(500, 0.2):
                    if message.error() is None:
                        self.seen.append(message.value())
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def group_offsets(bootstrap: str, input_topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": QUIET})
    try:
        found = consumer.committed(
            [TopicPartition(input_topic, p) for p in range(partitions)], timeout=15
        )
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


# --- the series -----------------------------------------------------------------


@dataclass
class SeriesResult:
    """What a kill -9 series saw; every list names what went wrong (empty: fine)."""

    rounds: int = 0
    kills: Counter[str] = field(default_factory=Counter)  # aimed phase -> kills
    transactions: int = 0
    acked_commits: int = 0
    acked_aborts: int = 0
    unknown: int = 0  # commit asked for, no answer
    committed_in_log: int = 0
    aborted_in_log: int = 0
    instances: int = 0
    client_errors: Counter[str] = field(default_factory=Counter)
    records_visible: int = 0
    live_seen: int = 0  # records the read_committed consumer saw during the series
    stalled: str = ""
    unsettled: str = ""  # open transactions or LSO < HW at the end
    unmarked: list[str] = field(default_factory=list)  # data with no marker after it
    split: list[str] = field(default_factory=list)  # committed in one partition, aborted in another
    incomplete: list[str] = field(default_factory=list)  # committed but records missing
    wrongly_committed: list[str] = field(default_factory=list)  # client aborted, log committed
    lost_commits: list[str] = field(default_factory=list)  # acknowledged commit, log aborted
    duplicated: list[str] = field(default_factory=list)
    bad_batches: list[str] = field(default_factory=list)
    read_mismatch: list[str] = field(default_factory=list)  # a read_committed reader disagrees
    live_saw_uncommitted: list[str] = field(default_factory=list)  # seen during the series
    offset_mismatch: list[str] = field(default_factory=list)

    def failures(self) -> dict[str, object]:
        named = {
            "stalled": self.stalled,
            "unsettled": self.unsettled,
            "unmarked": self.unmarked,
            "split": self.split,
            "incomplete": self.incomplete,
            "wrongly_committed": self.wrongly_committed,
            "lost_commits": self.lost_commits,
            "duplicated": self.duplicated,
            "bad_batches": self.bad_batches,
            "read_mismatch": self.read_mismatch,
            "live_saw_uncommitted": self.live_saw_uncommitted,
            "offset_mismatch": self.offset_mismatch,
        }
        return {name: value for name, value in named.items() if value}

    @property
    def ok(self) -> bool:
        return not self.failures()

    def summary(self) -> str:
        return (
            f"rounds={self.rounds} kills={dict(self.kills)} transactions={self.transactions} "
            f"acked_commits={self.acked_commits} acked_aborts={self.acked_aborts} "
            f"unknown={self.unknown} log_commit={self.committed_in_log} "
            f"log_abort={self.aborted_in_log} visible_records={self.records_visible} "
            f"live_seen={self.live_seen} "
            f"instances={self.instances} failures={sorted(self.failures())}"
        )


def _wait_settled_count(loads: list[TxnLoad], count: int, timeout: float) -> bool:
    targets = [load.settled() + count for load in loads]
    deadline = time.monotonic() + timeout
    while any(load.settled() < target for load, target in zip(loads, targets, strict=True)):
        if time.monotonic() > deadline or any(load.fatal for load in loads):
            return False
        time.sleep(0.02)
    return True


def _wait_phase(loads: list[TxnLoad], phase: str, timeout: float) -> bool:
    """Wait until a load is in ``phase`` ("between": until one has just settled one)."""
    deadline = time.monotonic() + timeout
    settled = [load.settled() for load in loads]
    while time.monotonic() < deadline:
        if phase == "between":
            if any(load.settled() != n for load, n in zip(loads, settled, strict=True)):
                return True
        elif any(load.phase == phase for load in loads):
            return True
        time.sleep(0.001)
    return False


# "between": just after a commit or abort was answered, while the coordinator
# writes the markers and then CompleteCommit/CompleteAbort.
KILL_AIMS = ("anytime", "producing", "committing", "aborting", "between")


def run_series(
    start: Callable[[], str],
    kill: Callable[[], None],
    topic_configs: dict[str, str],
    rounds: int,
    seed: int,
    *,
    loads_count: int = 2,
    progress_per_round: int = 3,
    round_timeout: float = 60.0,
    log: Callable[[str], None] = lambda _line: None,
) -> SeriesResult:
    """Start a broker, run transactions, kill -9 and restart it ``rounds`` times, then check.

    ``start()`` (re)starts the broker on the same data dir and port and returns
    its bootstrap address; ``kill()`` SIGKILLs it.
    """
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = random.Random(seed)
    result = SeriesResult()
    bootstrap = start()
    prefix = f"txcrash-{seed}-{rng.randrange(1 << 30):x}"
    topics = topics_for(prefix)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": QUIET})
    futures = admin.create_topics(
        [NewTopic(t, n, 1, config=topic_configs) for t, n in topics.items()], operation_timeout=10
    )
    for future in futures.values():
        future.result(timeout=15)
    del admin
    input_topic = f"{prefix}-in"
    data_targets = [(t, p) for t, n in topics.items() if t != input_topic for p in range(n)]
    loads = [
        TxnLoad(bootstrap, i, data_targets, input_topic, seed * 100 + i) for i in range(loads_count)
    ]
    live = LiveReader(bootstrap, data_targets)
    live.start()
    for load in loads:
        load.start()
    # Every aim equally often (each once in five rounds), in a seeded order.
    aims = [KILL_AIMS[i % len(KILL_AIMS)] for i in range(rounds)]
    rng.shuffle(aims)
    try:
        for round_number in range(rounds):
            if not _wait_settled_count(loads, progress_per_round, round_timeout):
                result.stalled = (
                    f"round {round_number}: fewer than {progress_per_round} transactions settled "
                    f"per load in {round_timeout}s; phases={[x.phase for x in loads]} "
                    f"fatal={[x.fatal for x in loads]} errors={[dict(x.errors) for x in loads]}"
                )
                faulthandler.dump_traceback(all_threads=True)
                break
            aim = aims[round_number]
            if aim == "anytime" or not _wait_phase(loads, aim, 5.0):
                aim = "anytime" if aim == "anytime" else f"anytime (no {aim} seen)"
                time.sleep(rng.uniform(0.0, 0.4))
            else:
                time.sleep(0.02 * rng.random() ** 3)  # mostly within the EndTxn round trip
            kill()
            result.kills[aim] += 1
            result.rounds += 1
            for load in loads:
                if rng.random() < 0.5:
                    load.request_reinit()
            time.sleep(rng.uniform(0.0, 0.3))
            bootstrap = start()
            log(
                f"round {round_number}: killed {aim}; settled "
                f"{[x.settled() for x in loads]}, instances {[x.instances for x in loads]}"
            )
        if not result.stalled and not _wait_settled_count(loads, progress_per_round, round_timeout):
            result.stalled = f"after the last restart: fewer than {progress_per_round} settled"
    finally:
        for load in loads:
            load.stop()
    result.unsettled = wait_until_settled(
        bootstrap, [x.transactional_id for x in loads], data_targets
    )
    live.stop()
    check(bootstrap, loads, data_targets, input_topic, result, live.seen)
    return result


def check(
    bootstrap: str,
    loads: list[TxnLoad],
    targets: list[Target],
    input_topic: str,
    result: SeriesResult,
    live_seen: Sequence[bytes] = (),
) -> None:
    """Compare the partitions (raw and read_committed) with what the clients were told."""
    outcomes: dict[TxnKey, Outcome] = {
        (load.index, number): outcome for load in loads for number, outcome in load.outcomes.items()
    }
    for load in loads:
        result.instances += load.instances
        result.client_errors.update(load.errors)
    result.transactions = len(outcomes)
    statuses = Counter(o.status for o in outcomes.values())
    result.acked_commits, result.acked_aborts = statuses["committed"], statuses["aborted"]
    result.unknown = statuses["unknown"]

    # The raw log: every transactional record must be closed by a marker of its producer.
    decided: dict[TxnKey, dict[Target, int]] = defaultdict(dict)  # marker type per partition
    in_log: dict[TxnKey, Counter[RecordKey]] = defaultdict(Counter)
    for target in targets:
        open_by_producer: dict[int, set[TxnKey]] = defaultdict(set)
        for header, records in raw_batches(bootstrap, *target):
            if header.is_control:
                kind = int(parse_control_record(records[0])[0])
                for key in open_by_producer.pop(header.producer_id, ()):
                    decided[key][target] = kind
                continue
            if not header.is_transactional:
                result.bad_batches.append(f"{target} @{header.base_offset}: not transactional")
                continue
            for record in records:
                key, _plan, record_key = decode_value(record.value)
                if record_key[:2] != target:
                    result.bad_batches.append(f"{target} @{record.offset}: record of {record_key}")
                open_by_producer[header.producer_id].add(key)
                in_log[key][record_key] += 1
        for producer_id, keys in open_by_producer.items():
            result.unmarked.append(
                f"{target}: producer {producer_id} txns {sorted(keys)} no marker"
            )

    committed: set[TxnKey] = set()
    for key, by_target in decided.items():
        kinds = set(by_target.values())
        if len(kinds) > 1:
            result.split.append(f"txn {key}: {by_target}")
            continue
        if kinds == {COMMIT}:
            committed.add(key)
    result.committed_in_log = len(committed)
    result.aborted_in_log = len(decided) - len(committed)
    for key, counts in in_log.items():
        duplicates = [r for r, n in counts.items() if n > 1]
        if duplicates:
            result.duplicated.append(f"txn {key}: {duplicates[:3]} stored more than once")
    for key, outcome in outcomes.items():
        stored = set(in_log.get(key, ()))
        if key in committed:
            if outcome.plan == "abort" or not outcome.commit_called:
                result.wrongly_committed.append(
                    f"txn {key}: {outcome.status}, committed in the log"
                )
            if stored != outcome.records:
                missing = sorted(outcome.records - stored)[:3]
                result.incomplete.append(f"txn {key}: committed, missing {missing}")
        elif outcome.status == "committed":
            result.lost_commits.append(
                f"txn {key}: commit acknowledged, log has {decided.get(key)}"
            )
    unknown_keys = set(decided) - set(outcomes)
    if unknown_keys:
        result.bad_batches.append(f"transactions no client ran: {sorted(unknown_keys)[:5]}")

    # read_committed readers: exactly the committed transactions' records, once each.
    expected = Counter((key, record) for key in committed for record in in_log[key])
    high, _stable = end_offsets(bootstrap, targets)
    for name, reader in (
        ("confluent-kafka", read_committed_confluent),
        ("kafka-python", read_committed_kafka_python),
    ):
        seen = Counter()
        for value in reader(bootstrap, targets, high):
            key, _plan, record = decode_value(value)
            seen[(key, record)] += 1
        if seen != expected:
            extra = sorted((seen - expected).elements())[:3]
            missing = sorted((expected - seen).elements())[:3]
            result.read_mismatch.append(f"{name}: extra {extra} missing {missing}")
        result.records_visible = sum(seen.values())

    result.live_seen = len(live_seen)
    for value in live_seen:
        key, _plan, record = decode_value(value)
        if key not in committed:
            result.live_saw_uncommitted.append(f"txn {key} {record}: seen, not committed")

    # Offsets committed inside the transactions: the last committed one's (number + 1).
    offsets = group_offsets(bootstrap, input_topic, len(loads))
    for load in loads:
        numbers = [n for (index, n) in committed if index == load.index]
        want = max(numbers) + 1 if numbers else None
        if offsets.get(load.index) != want:
            result.offset_mismatch.append(
                f"load {load.index}: group offset {offsets.get(load.index)}, last committed "
                f"transaction {want}"
            )
