"""Leadership handed back to the preferred replica under acks=all idempotent load.

The preferred leader (first in the assignment) is killed; a follower takes over;
the preferred replica returns, catches up, rejoins the ISR, and the controller's
preferred-leader rebalance (``auto.leader.rebalance.enable``, checked every
``leader.imbalance.check.interval.seconds``, here 1 s) moves leadership back to it
while the producer keeps producing. That second change is the one a live leader goes
through: broker ``interim`` stops leading with requests in flight and becomes a
follower of the returning broker. Both changes lose and duplicate nothing, and the
replicas converge.
"""

from __future__ import annotations

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_preferred_leader_takes_leadership_back_under_load(cluster, wait_until) -> None:
    c = cluster(3, configs={"leader.imbalance.check.interval.seconds": "1"})
    controller = wait_until(c.controller, timeout=fl.TIMEOUT, what="a controller")
    preferred, interim, other = sorted((1, 2, 3), key=lambda i: i == controller)
    # The controller last: killing the preferred leader leaves the controller alone.
    topic = fl.create_topic(c.bootstrap, configs={"min.insync.replicas": "2"},
                            assignment=[preferred, interim, other])
    assert fl.wait_full_isr(c, wait_until, topic, [1, 2, 3]) == preferred
    loads = fl.new_loads(c.bootstrap, topic, ["confluent", "kafka-python"])
    fl.wait_acked(wait_until, loads, 200, "before the kill")
    c.kill(preferred)
    assert c.wait_leader(topic, 0, exclude=(preferred,)) == interim
    fl.wait_acked(wait_until, loads, 200, f"on broker {interim}")
    epoch = c.partition_state(topic, 0)["leader_epoch"]
    c.start(preferred)
    wait_until(
        lambda: (s := c.partition_state(topic, 0))["leader"] == preferred
        and s["leader_epoch"] > epoch,
        timeout=fl.TIMEOUT, what="the preferred replica leading again",
    )
    fl.wait_acked(wait_until, loads, 200, "after the preferred replica took over")
    acked = [value for load in loads for value in load.stop()]
    assert [load.errors for load in loads] == [[], []]
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)
