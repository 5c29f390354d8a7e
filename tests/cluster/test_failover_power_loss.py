"""Several brokers lost under acks=all idempotent load: all at once, or one after another.

All at once, as a power cut of the whole cluster would be, but the machine stays up (so what a
broker wrote reached the page cache; fsync is not in question here): the controller,
the leader and both followers die together. On restart the brokers recover their
logs and leader-epoch files, a controller is elected, the partition gets a leader
from its last ISR, the others truncate to it and catch up. The producer, never told,
carries on: every record acknowledged before or after the outage is there exactly
once, and the three replicas converge byte for byte. One after another: see the
second test's docstring.
"""

from __future__ import annotations

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_every_broker_killed_at_once_then_restarted(cluster, wait_until) -> None:
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"})
    fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
    (load,) = fl.new_loads(c.bootstrap, topic, ["confluent"])
    fl.wait_acked(wait_until, [load], 300, "before the outage")
    for broker_id in (1, 2, 3):
        c.kill(broker_id)
    acked_before = load.acked_count
    for broker_id in (1, 2, 3):
        c.start(broker_id, wait=False)
    c.wait_ready()
    fl.wait_acked(wait_until, [load], 300, "after the restart")
    acked = load.stop()
    assert load.errors == []
    assert len(acked) >= acked_before + 300
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)


def test_brokers_die_one_after_another_and_return_in_reverse(cluster, wait_until) -> None:
    """A follower dies, then the leader: the last replica leads alone and refuses acks=all
    (NOT_ENOUGH_REPLICAS, the producer retries). The first broker back is the one that left
    the ISR first: it must not lead (no unclean election), it truncates to the survivor,
    catches up and rejoins, and acks=all flows again; then the old leader returns."""
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"})
    leader = fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
    first, last = [i for i in (1, 2, 3) if i != leader]
    (load,) = fl.new_loads(c.bootstrap, topic, ["kafka-python"])
    fl.wait_acked(wait_until, [load], 200, "before the first death")
    c.kill(first)
    fl.wait_full_isr(c, wait_until, topic, [leader, last])
    fl.wait_acked(wait_until, [load], 200, "with two brokers")
    c.kill(leader)
    assert c.wait_leader(topic, 0, exclude=(leader, first)) == last
    wait_until(lambda: c.partition_state(topic, 0)["isr"] == [last], timeout=fl.TIMEOUT,
               what=f"the ISR down to broker {last}")
    stalled = load.acked_count
    c.start(first)
    fl.wait_full_isr(c, wait_until, topic, [first, last])
    assert c.partition_state(topic, 0)["leader"] == last
    fl.wait_acked(wait_until, [load], 200, "once two replicas are in sync again")
    c.start(leader)
    fl.wait_acked(wait_until, [load], 100, "with all three back")
    acked = load.stop()
    assert load.errors == [] and len(acked) > stalled
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)
