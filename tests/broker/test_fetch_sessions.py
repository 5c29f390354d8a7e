"""KIP-227 incremental fetch sessions, checked the way Kafka 4.0 answers them.

Raw requests on our own wire codec cover each path of the session protocol (the
answers were compared with the reference Kafka 4.0, see docs/fetch-sessions.md);
the Java 4.0 consumer (which keeps a session and sends incremental fetches) reads a
topic through them; the cache's eviction rules are checked on the cache itself with
an explicit clock.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.fetch_sessions import FetchSessionCache
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode
from tests.broker import fetch_wire as fw
from tests.reference_kafka import reference_script_or_skip


def _produce(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=partition)
    assert producer.flush(15) == 0


@pytest.fixture
def client(broker):
    c = fw.WireClient(broker.bootstrap)
    yield fw, c
    c.close()


def _session_on_a_new_topic(broker, client, create_topic) -> tuple[str, object, int]:
    """A one-partition topic and a session opened on it by a full Fetch 17 by id:
    (topic, topic id, session id)."""
    fw, c = client
    topic = create_topic(broker.bootstrap, partitions=1)
    tid = c.topic_id(topic)
    full = c.fetch(17, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0)])])
    session = full["session_id"]
    assert session != 0
    return topic, tid, session


@pytest.mark.parametrize("version", [12, 17])
def test_full_then_incremental_answers_only_what_changed(broker, client, create_topic, version):
    fw, c = client
    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(broker.bootstrap, topic, 0, 1)
    tid = c.topic_id(topic)
    full = c.fetch(version, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0), fw.partition(1)])])
    assert full["error_code"] == 0
    session = full["session_id"]
    assert session != 0
    parts = fw.answered(full)
    assert sorted(parts) == [0, 1]
    assert parts[0]["high_watermark"] == 1 and len(parts[0]["records"]) > 0
    assert parts[1]["high_watermark"] == 0 and not parts[1]["records"]
    if version >= 13:
        assert full["responses"][0]["topic_id"] == tid
    else:
        assert full["responses"][0]["topic"] == topic

    # The client moves partition 0 past its record: nothing new anywhere, nothing answered.
    moved = c.fetch(version, session, 1, [fw.topic_entry(topic, tid, [fw.partition(0, 1)])])
    assert moved["error_code"] == 0 and moved["session_id"] == session
    assert moved["responses"] == []

    # New data on partition 1 (whose offset the broker remembers): only it is answered.
    _produce(broker.bootstrap, topic, 1, 2)
    fresh = c.fetch(version, session, 2, [], max_wait_ms=5000)
    parts = fw.answered(fresh)
    assert list(parts) == [1]
    assert parts[1]["high_watermark"] == 2 and len(parts[1]["records"]) > 0

    # Forgetting partition 1 leaves partition 0, still with nothing new.
    forget_1 = [{"topic": topic, "topic_id": tid, "partitions": [1]}]
    forgot = c.fetch(version, session, 3, [], forget_1)
    assert forgot["session_id"] == session and forgot["responses"] == []
    # Forgetting the last partition closes the session: answered sessionless.
    last = c.fetch(version, session, 4, [], [{"topic": topic, "topic_id": tid, "partitions": [0]}])
    assert last["error_code"] == 0 and last["session_id"] == 0 and last["responses"] == []
    gone = c.fetch(version, session, 5, [])
    assert gone["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_session_errors_as_kafka(broker, client, create_topic):
    fw, c = client
    topic, tid, session = _session_on_a_new_topic(broker, client, create_topic)

    wrong_epoch = c.fetch(17, session, 7, [])
    assert wrong_epoch["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert wrong_epoch["session_id"] == 0 and wrong_epoch["responses"] == []
    unknown = c.fetch(17, session ^ 0x5A5A5A5A or 1, 1, [])
    assert unknown["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert unknown["session_id"] == 0 and unknown["responses"] == []
    # A session started by topic id cannot continue by name (and the reverse).
    by_name = c.fetch(12, session, 1, [])
    assert by_name["error_code"] == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # The failed attempts left the session as it was: epoch 1 still continues it.
    ok = c.fetch(17, session, 1, [])
    assert ok["error_code"] == 0 and ok["session_id"] == session
    # Session id 0 with an epoch > 0 names no session.
    assert c.fetch(17, 0, 3, [])["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    # epoch -1 on a session closes it and answers sessionless (session id 0, every partition).
    closing = c.fetch(17, session, -1, [fw.topic_entry(topic, tid, [fw.partition(0)])])
    assert closing["error_code"] == 0 and closing["session_id"] == 0
    assert list(fw.answered(closing)) == [0]
    assert c.fetch(17, session, 2, [])["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    # A sessionless full fetch (id 0, epoch -1) never starts a session.
    before = len(broker.broker.fetch_sessions)
    plain = c.fetch(17, 0, -1, [fw.topic_entry(topic, tid, [fw.partition(0)])])
    assert plain["session_id"] == 0 and list(fw.answered(plain)) == [0]
    assert len(broker.broker.fetch_sessions) == before


def test_new_full_fetch_replaces_its_session(broker, client, create_topic):
    fw, c = client
    topic = create_topic(broker.bootstrap, partitions=1)
    tid = c.topic_id(topic)
    entry = [fw.topic_entry(topic, tid, [fw.partition(0)])]
    first = c.fetch(13, 0, 0, entry)["session_id"]
    second = c.fetch(13, first, 0, entry)["session_id"]
    assert first != 0 and second != 0 and second != first
    assert c.fetch(13, first, 1, [])["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert c.fetch(13, second, 1, [])["error_code"] == 0


def test_error_partitions_stay_in_incremental_answers(broker, client, create_topic):
    """A partition answered with an error is sent in every incremental answer (Kafka
    resets its cached high watermark so it is sent again once the error clears)."""
    fw, c = client
    topic = create_topic(broker.bootstrap, partitions=1)
    tid = c.topic_id(topic)
    full = c.fetch(17, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0, offset=50)])])
    assert fw.answered(full)[0]["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    session = full["session_id"]
    again = c.fetch(17, session, 1, [])
    assert fw.answered(again)[0]["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE
    fixed = c.fetch(17, session, 2, [fw.topic_entry(topic, tid, [fw.partition(0, offset=0)])])
    assert fw.answered(fixed)[0]["error_code"] == 0  # sent again: its HW is news
    assert c.fetch(17, session, 3, [])["responses"] == []


def _start(configs: dict[str, str]) -> EmbeddedBroker:
    return EmbeddedBroker.start(data_dir=Path(tempfile.mkdtemp(prefix="fetch-sessions-")),
                                configs=configs)


def test_cache_slots_bound_sessions_and_zero_disables_them():
    for slots, expected in (("0", [False, False]), ("2", [True, True, False])):
        embedded = _start({"max.incremental.fetch.session.cache.slots": slots})
        try:
            topic = "slots-topic"
            admin = AdminClient({"bootstrap.servers": embedded.bootstrap})
            admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
            c = fw.WireClient(embedded.bootstrap)
            try:
                tid = c.topic_id(topic)
                got = []
                for _ in expected:
                    body = c.fetch(17, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0)])])
                    assert body["error_code"] == 0 and list(fw.answered(body)) == [0]
                    got.append(body["session_id"] != 0)
                # Young consumer sessions are not evictable by consumers: the third waits.
                assert got == expected
                assert len(embedded.broker.fetch_sessions) == int(slots)
            finally:
                c.close()
        finally:
            embedded.stop(timeout=30)


def test_eviction_rules_as_kafka() -> None:
    """Kafka's tryEvict: stale first, then the least valuable evictable session when
    the newcomer is worth more (privileged, then size); young sessions are safe."""
    cache = FetchSessionCache(max_slots=2, eviction_ms=1000)

    def parts(n: int):
        return lambda: {("t", i): object() for i in range(n)}

    small = cache.maybe_create(0, False, 2, False, parts(2))
    big = cache.maybe_create(0, False, 5, False, parts(5))
    assert small and big
    # Full, both young: a consumer cannot evict; a follower evicts the smallest consumer's.
    assert cache.maybe_create(10, False, 9, False, parts(9)) == 0
    follower = cache.maybe_create(10, True, 1, False, parts(1))
    assert follower and cache.get(small) is None and cache.get(big) is not None
    # Once old (touched after eviction_ms), a bigger consumer session evicts a smaller one,
    # never a follower's in favour of a consumer.
    cache.touch(cache.get(big), 1500)
    cache.touch(cache.get(follower), 1500)
    assert cache.maybe_create(1600, False, 3, False, parts(3)) == 0  # 3 < 5: kept
    bigger = cache.maybe_create(1600, False, 6, False, parts(6))
    assert bigger and cache.get(big) is None and cache.get(follower) is not None
    # A session unused for longer than eviction_ms is stale: anyone may take its place.
    stale_taker = cache.maybe_create(1600 + 1001 + 1000, False, 1, False, parts(1))
    assert stale_taker and cache.get(follower) is None
    assert cache.evictions == 3


@pytest.mark.skipif(shutil.which("java") is None, reason="the Java 4.0 consumer needs java")
def test_java_consumer_reads_through_incremental_fetches(broker, create_topic, tmp_path):
    script = reference_script_or_skip()
    topic = create_topic(broker.bootstrap, partitions=3)
    for p in range(3):
        _produce(broker.bootstrap, topic, p, 200)
    cache = broker.broker.fetch_sessions
    before = cache.incremental_fetches
    # Tiny fetch sizes: many fetches, each an incremental one in the consumer's session.
    result = subprocess.run(
        [str(script), "bin", "kafka-console-consumer.sh", "--bootstrap-server", broker.bootstrap,
         "--topic", topic, "--from-beginning", "--max-messages", "600", "--timeout-ms", "60000",
         "--consumer-property", "fetch.max.bytes=2048",
         "--consumer-property", "max.partition.fetch.bytes=1024"],
        capture_output=True, text=True, timeout=180,
    )
    values = [line for line in result.stdout.splitlines() if line.startswith("v")]
    assert len(values) == 600, result.stderr[-2000:]
    assert sorted(set(values)) == sorted({f"v{i}" for i in range(200)})
    assert cache.incremental_fetches - before >= 3


def test_throttled_fetches_leave_sessions_as_kafka():
    """Under a consumer quota a throttled Fetch is answered empty and, as Kafka decides
    the throttle before touching the session, a throttled full fetch starts no session
    (session id 0) and a throttled incremental one leaves the session's cached high
    watermark alone: the next fetch of the session still tells the client about it."""
    embedded = _start({"quota.window.num": "2"})
    clients = []
    try:
        topic = "throttled-sessions"
        admin = AdminClient({"bootstrap.servers": embedded.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=15)
        free, slow_full, slow_incremental = (
            fw.WireClient(embedded.bootstrap, name) for name in ("free", "slow-1", "slow-2")
        )
        clients += [free, slow_full, slow_incremental]
        for slow in ("slow-1", "slow-2"):  # 10 KB/s: one second's worth passes at first
            altered = free.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {
                "entries": [{"entity": [{"entity_type": "client-id", "entity_name": slow}],
                             "ops": [{"key": "consumer_byte_rate", "value": 10240.0,
                                      "remove": False}]}],
                "validate_only": False,
            })  # fmt: skip
            assert [e["error_code"] for e in altered["entries"]] == [0]
        tid = free.topic_id(topic)

        def fill() -> None:  # 30 KB: three times the quota's first burst
            producer = Producer({"bootstrap.servers": embedded.bootstrap})
            for _ in range(30):
                producer.produce(topic, b"x" * 1000, partition=0)
            assert producer.flush(15) == 0

        fill()
        throttled = slow_full.fetch(17, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0)])])
        assert throttled["throttle_time_ms"] > 0
        assert throttled["session_id"] == 0 and throttled["responses"] == []
        assert len(embedded.broker.fetch_sessions) == 0

        # A session of an unthrottled client, at the log end (high watermark 30).
        full = free.fetch(17, 0, 0, [fw.topic_entry(topic, tid, [fw.partition(0, 30)])])
        session = full["session_id"]
        assert session != 0 and fw.answered(full)[0]["high_watermark"] == 30
        fill()
        # The throttled client continues the session from offset 30: 30 KB, throttled.
        throttled = slow_incremental.fetch(
            17, session, 1, [fw.topic_entry(topic, tid, [fw.partition(0, 30)])]
        )
        assert throttled["throttle_time_ms"] > 0 and throttled["error_code"] == 0
        assert throttled["session_id"] == session and throttled["responses"] == []
        # Nothing of the new high watermark reached a client yet: the next fetch carries it.
        caught_up = free.fetch(17, session, 2, [fw.topic_entry(topic, tid, [fw.partition(0, 60)])])
        assert caught_up["session_id"] == session
        assert fw.answered(caught_up)[0]["high_watermark"] == 60
    finally:
        for c in clients:
            c.close()
        embedded.stop(timeout=30)


def test_fetch_overtaken_in_its_long_poll_answers_invalid_epoch(broker, client, create_topic):
    """Kafka's updateAndGenerateResponseData: a fetch whose session moved on (the next
    epoch came in on another connection) while it waited answers INVALID_FETCH_SESSION_EPOCH."""
    import threading

    fw, c = client
    topic, _, session = _session_on_a_new_topic(broker, client, create_topic)
    parked: dict = {}
    waiter = threading.Thread(
        target=lambda: parked.update(c.fetch(17, session, 1, [], max_wait_ms=20_000))
    )
    waiter.start()
    other = fw.WireClient(broker.bootstrap)
    try:
        # Epoch 2 is the session's next only once epoch 1 has arrived: retry until then.
        for _ in range(200):
            time.sleep(0.02)
            moved = other.fetch(17, session, 2, [])
            if moved["error_code"] != ErrorCode.INVALID_FETCH_SESSION_EPOCH:
                break
        assert moved["error_code"] == 0 and moved["session_id"] == session
        # Data wakes the parked fetch (no need to wait out its max_wait_ms).
        _produce(broker.bootstrap, topic, 0, 1)
        waiter.join(30)
        assert not waiter.is_alive()
    finally:
        other.close()
    assert parked["error_code"] == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert parked["session_id"] == session and parked["responses"] == []
