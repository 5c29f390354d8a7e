"""A leader frozen (SIGSTOP) past the session timeout, then resumed, as in Kafka.

Three brokers, replication factor 3, ``min.insync.replicas=2``, a confluent-kafka
producer under acks=all idempotent load throughout. The leader is frozen: its
ZooKeeper session expires, the controller elects a follower (leader epoch + 1)
and the load carries on there. A Produce with acks=1 is written to the frozen
old leader on a connection opened before the freeze; it is the first thing the
broker reads when it resumes, before it learns from ZooKeeper that it lost the
leadership, so it appends and acknowledges it, as a Kafka leader stuck in a GC
pause would. Those records were never on any ISR member: once the old leader
learns the new epoch it becomes a follower, truncates them (OffsetForLeaderEpoch)
and converges with the others, byte for byte. Nothing acknowledged with acks=all
is lost or duplicated, and the acks=1 records accepted after the fencing are gone.
"""

from __future__ import annotations

import pytest

from kafkette.wire.apis import ApiKey
from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_frozen_leader_resumes_and_its_acks_1_writes_are_truncated(cluster, wait_until) -> None:
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"})
    leader = fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
    followers = [i for i in (1, 2, 3) if i != leader]
    old = fl.RawConnection(c.brokers[leader].address)
    try:
        old.send(ApiKey.PRODUCE, 8, fl.produce_body(topic, -1, [b"committed"]))
        assert old.receive().body["responses"][0]["partition_responses"][0]["error_code"] == 0

        # socket.timeout.ms (librdkafka's client-side request timeout) well under its 60 s
        # default: the requests stuck on the frozen broker time out and are retried on
        # the new leader within the test's budget (a frozen Kafka broker holds them too).
        load = fl.ConfluentLoad(c.bootstrap, topic, **{"socket.timeout.ms": 10000}).start()
        fl.wait_acked(wait_until, [load], 200, "before the freeze")
        c.freeze(leader)
        try:
            new_leader = c.wait_leader(topic, 0, exclude=(leader,))
            assert new_leader in followers
            fl.wait_acked(wait_until, [load], 200, "on the new leader, the old one frozen")
            # Written now, read first thing on resuming.
            old.send(ApiKey.PRODUCE, 8, fl.produce_body(topic, 1, [b"stale-1", b"stale-2"]))
        finally:
            c.thaw(leader)
        stale = old.receive().body["responses"][0]["partition_responses"][0]
    finally:
        old.close()
    # Accepted by a leader that did not know it had been replaced (Kafka does the same).
    assert stale["error_code"] == 0, stale

    fl.wait_acked(wait_until, [load], 100, "after the old leader resumed")
    acked = load.stop()
    assert load.errors == []
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    values = fl.read_values(c.bootstrap, topic)
    assert values[0] == "committed"
    assert "stale-1" not in values and "stale-2" not in values
    fl.check_exactly_once(values, acked)
    log_text = c.brokers[leader].log_path.read_text()
    assert f"truncating {topic}-0 from" in log_text
