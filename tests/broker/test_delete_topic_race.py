"""DeleteTopics racing Produce on one node (issue 34): a clean answer, no traceback.

A topic deleted while a Produce to it was being appended used to close the log under
the append, which logged ``ERROR kafkette.storage: append to <topic>-0 failed: <path>``
with a traceback and answered KAFKA_STORAGE_ERROR; a DeleteRecords queued behind the
append died with an internal error and lost its connection. Now deletion waits for the
append in flight (its records are answered, then deleted with the topic), and a request
queued behind it answers UNKNOWN_TOPIC_OR_PARTITION, which clients retry.

Raw producers send large batches to a two-partition topic that is deleted and re-created
over and over, each time while appends are running; a Fetch and a DeleteRecords loop run
alongside, and a producer writes to a live topic the whole time. A few rounds within a
few seconds, no sleeps in the broker: before the fix the first or second round showed it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from bench.harness.raw_wire import WireConnection
from kafkette.log import LogConfig, PartitionLog
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header
from kafkette.wire.records import build_batch_from_values

TOPIC = "doomed"
LIVE = "live"
PARTITIONS = 2
ROUNDS = 6
SECONDS = 6.0
# ~200 KB per partition, past the inline limit (append.py): each append holds the
# partition's append lock across a worker-thread hop, so produces queue behind it, each
# having looked the partition up before the deletion lands.
BIG = build_batch_from_values([(None, bytes(2000))] * 100)
PRODUCERS = 3

FETCH = {  # v11, read_uncommitted, no session: partition 0 from offset 0
    "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 4 << 20,
    "isolation_level": 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [],
    "rack_id": "", "topics": [{"topic": TOPIC, "partitions": [{
        "partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
        "log_start_offset": -1, "partition_max_bytes": 4 << 20,
    }]}],
}  # fmt: skip

OK = int(ErrorCode.NONE)
UNKNOWN = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
OUT_OF_RANGE = int(ErrorCode.OFFSET_OUT_OF_RANGE)


def _produce(conn: WireConnection, topic: str, batches: dict[int, bytes]) -> dict[int, dict]:
    body = {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 10_000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": i, "records": b} for i, b in batches.items()],
            }
        ],
    }
    answer = conn.request(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"]
    return {p["index"]: p for p in answer}


def _create(conn: WireConnection, topic: str) -> int:
    spec = {"name": topic, "num_partitions": PARTITIONS, "replication_factor": 1}
    body = {"topics": [{**spec, "assignments": [], "configs": []}], "timeout_ms": 10_000}
    answer = conn.request(ApiKey.CREATE_TOPICS, 5, {**body, "validate_only": False})
    return answer["topics"][0]["error_code"]


def _delete(conn: WireConnection, topic: str) -> int:
    body = {"topic_names": [topic], "timeout_ms": 10_000}
    return conn.request(ApiKey.DELETE_TOPICS, 4, body)["responses"][0]["error_code"]


class _Loop(threading.Thread):
    """Runs ``step(conn)`` until stopped, on its own connection; keeps what it met."""

    def __init__(self, bootstrap: str, step: Callable[[WireConnection], list[int]]) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.step = bootstrap, step
        self.codes: dict[int, int] = {}
        self.failure: BaseException | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        try:
            with WireConnection(self.bootstrap, timeout=15) as conn:
                while not self.stop.is_set():
                    for code in self.step(conn):
                        self.codes[code] = self.codes.get(code, 0) + 1
        except BaseException as exc:  # reported by the test
            self.failure = exc


def _appended_since(producers: list[_Loop], loops: list[_Loop], deadline: float) -> bool:
    """Wait until a producer has been answered OK once more (appends are going on); False
    if a loop died or the deadline passed first."""
    seen = sum(p.codes.get(OK, 0) for p in producers)
    while sum(p.codes.get(OK, 0) for p in producers) == seen:
        if time.monotonic() > deadline or not all(loop.is_alive() for loop in loops):
            return False
        time.sleep(0.002)
    return True


def test_delete_topic_while_appending_answers_cleanly(broker_process, tmp_path, read_all) -> None:
    data_dir = tmp_path / "data"
    broker = broker_process(data_dir)
    admin = WireConnection(broker.bootstrap, timeout=15)
    assert _create(admin, TOPIC) == OK
    assert _create(admin, LIVE) == OK

    live_acked: dict[int, bytes] = {}

    def produce_live(conn: WireConnection) -> list[int]:
        value = f"live-{len(live_acked)}".encode()
        answer = _produce(conn, LIVE, {0: build_batch_from_values([(None, value)])})[0]
        if answer["error_code"] == OK:
            live_acked[answer["base_offset"]] = value
        return [answer["error_code"]]

    def produce_big(conn: WireConnection) -> list[int]:
        answers = _produce(conn, TOPIC, dict.fromkeys(range(PARTITIONS), BIG))
        return [a["error_code"] for a in answers.values()]

    def fetch(conn: WireConnection) -> list[int]:
        response = conn.request(ApiKey.FETCH, 11, FETCH)
        return [response["responses"][0]["partitions"][0]["error_code"]]

    def delete_records(conn: WireConnection) -> list[int]:
        query = {"name": TOPIC, "partitions": [{"partition_index": 1, "offset": -1}]}
        body = {"topics": [query], "timeout_ms": 10_000}
        answer = conn.request(ApiKey.DELETE_RECORDS, 1, body)
        return [answer["topics"][0]["partitions"][0]["error_code"]]

    producers = [_Loop(broker.bootstrap, produce_big) for _ in range(PRODUCERS)]
    others = [_Loop(broker.bootstrap, step) for step in (produce_live, fetch, delete_records)]
    loops = producers + others
    for loop in loops:
        loop.start()
    rounds = 0
    deadline = time.monotonic() + SECONDS
    try:
        while rounds < ROUNDS and time.monotonic() < deadline:
            # Delete only once this incarnation has taken appends: more are in flight.
            if not _appended_since(producers, loops, deadline + 10):
                break  # the checks below say why
            assert _delete(admin, TOPIC) == OK
            rounds += 1
            left = sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{TOPIC}-"))
            assert left == [], f"round {rounds}: deleted topic's files remain: {left}"
            assert _create(admin, TOPIC) == OK
    finally:
        for loop in loops:
            loop.stop.set()
        for loop in loops:
            loop.join(timeout=20)
    log = broker.stderr_text()
    assert "Traceback" not in log and " ERROR " not in log, log[-4000:]
    assert "append to" not in log, log[-4000:]  # a deletion is no storage failure
    assert [repr(loop.failure) for loop in loops if loop.failure] == []
    assert rounds >= 2, f"only {rounds} rounds in {SECONDS} s"
    for producer in producers:  # records written (then deleted) or a clean retriable refusal
        assert set(producer.codes) <= {OK, UNKNOWN}, producer.codes
    assert set(others[0].codes) == {OK}, others[0].codes
    assert set(others[1].codes) <= {OK, OUT_OF_RANGE, UNKNOWN}, others[1].codes
    assert set(others[2].codes) <= {OK, UNKNOWN}, others[2].codes

    # Still serving; a topic re-created under the name is clean (first record at 0).
    assert (_delete(admin, TOPIC), _create(admin, TOPIC)) == (OK, OK)
    fresh = _produce(admin, TOPIC, {0: build_batch_from_values([(None, b"fresh")])})[0]
    assert (fresh["error_code"], fresh["base_offset"], fresh["log_start_offset"]) == (OK, 0, 0)
    assert [(r.offset, r.value) for r in read_all(broker.bootstrap, TOPIC, 1)] == [(0, b"fresh")]
    # The live topic kept every acknowledged record at its offset.
    read = {r.offset: r.value for r in read_all(broker.bootstrap, LIVE, 1)}
    assert len(live_acked) > 10 and {o: read.get(o) for o in live_acked} == live_acked
    admin.close()


def test_closed_log_writes_no_checkpoint_into_a_recreated_directory(tmp_path) -> None:
    """The housekeeping tick may pass ``maybe_flush``'s closed check just before the topic
    is deleted; the checkpoint it then writes must not land in the directory of a topic
    re-created under the same name (its next start would take the old log's offsets)."""
    directory = tmp_path / "t-0"
    log = PartitionLog.open(directory, LogConfig(), lambda: int(time.time() * 1000), recover=False)
    batch = bytearray(build_batch_from_values([(None, b"old")]))
    log.append(batch, [read_header(batch)])
    log.close(flush=False)  # DataDir.delete_topic: close, then rename and remove
    directory.rename(tmp_path / "t-0.deleted")
    directory.mkdir()  # the re-created topic's
    log.flush()  # the rest of maybe_flush, racing the deletion
    log.write_checkpoint()
    assert list(directory.iterdir()) == []
