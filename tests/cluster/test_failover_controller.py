"""The controller killed or frozen under acks=all idempotent load: nothing acknowledged lost.

Two kill -9 cases, each on three brokers with a replication factor 3 topic whose preferred
leader the test picks through an explicit assignment:

- the controller is also the partition's leader: its session expires, another
  broker wins ``/controller`` (controller epoch + 1) and must itself elect the
  partition's new leader;
- the controller is only a follower: the leader stays, but acks=all waits on
  the dead follower until the *new* controller removes it from the ISR (the
  leader would only drop it after ``replica.lag.time.max.ms``, 30 s).

In both the producer (confluent-kafka in one, kafka-python in the other) keeps
producing, every acknowledged record is there exactly once, and the killed
broker comes back, truncates, catches up, rejoins the ISR, byte-identical. A third
test freezes the controller (SIGSTOP) while the cluster moves on without it.
"""

from __future__ import annotations

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _kill_controller_under_load(c, wait_until, family: str, controller_leads: bool) -> None:
    controller = wait_until(c.controller, timeout=fl.TIMEOUT, what="a controller")
    others = [i for i in (1, 2, 3) if i != controller]
    # The first replica is the preferred leader: the controller itself, or another broker.
    assignment = [controller, *others] if controller_leads else [others[0], controller, others[1]]
    topic = fl.create_topic(c.bootstrap, configs={"min.insync.replicas": "2"},
                            assignment=assignment)
    leader = fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
    assert (leader == controller) is controller_leads

    (load,) = fl.new_loads(c.bootstrap, topic, [family])
    fl.wait_acked(wait_until, [load], 300, "before the kill")
    c.kill(controller)
    new_controller = wait_until(
        lambda: (n := c.controller()) is not None and n != controller and n,
        timeout=fl.TIMEOUT, what="a new controller",
    )
    assert new_controller in others
    new_leader = c.wait_leader(topic, 0, exclude=(controller,))
    assert new_leader == (others[0] if controller_leads else leader)
    # The dead broker leaves the ISR (the new controller's doing) and acks=all flows again.
    wait_until(
        lambda: fl.full_isr(c, topic, others), timeout=fl.TIMEOUT,
        what=f"ISR {others} without the killed controller",
    )
    fl.wait_acked(wait_until, [load], 300, "after the controller change")
    acked = load.stop()
    assert load.errors == []
    fl.check_exactly_once(fl.read_values(c.bootstrap_of(*others), topic), acked)

    c.start(controller)
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)
    assert c.controller() == new_controller  # the returning broker does not take it back


def test_kill_9_of_the_controller_that_leads_the_partition(cluster, wait_until) -> None:
    _kill_controller_under_load(cluster(3), wait_until, "confluent", controller_leads=True)


def test_kill_9_of_the_controller_that_only_follows(cluster, wait_until) -> None:
    _kill_controller_under_load(cluster(3), wait_until, "kafka-python", controller_leads=False)


def test_frozen_controller_resumes_fenced_while_the_cluster_moved_on(cluster, wait_until) -> None:
    """SIGSTOP of the controller past the session timeout: another broker takes over and,
    while the old one sleeps, the partition's leader is killed, so the leadership moves
    under the *new* controller. The old controller resumes with a stale view (it still
    believes in the dead leader and in its own role) and an expired session: it must not
    act on it. It registers again, follows the current leader, catches up and rejoins the
    ISR, and acks=all (stalled with one replica in sync) flows again."""
    c = cluster(3)
    controller = wait_until(c.controller, timeout=fl.TIMEOUT, what="a controller")
    leader, follower = [i for i in (1, 2, 3) if i != controller]
    topic = fl.create_topic(c.bootstrap, configs={"min.insync.replicas": "2"},
                            assignment=[leader, follower, controller])
    assert fl.wait_full_isr(c, wait_until, topic, [1, 2, 3]) == leader
    old_epoch = int(c.zk().get("/controller_epoch")[0])
    (load,) = fl.new_loads(c.bootstrap, topic, ["confluent"])
    fl.wait_acked(wait_until, [load], 200, "before the freeze")
    c.freeze(controller)
    try:
        wait_until(lambda: c.controller() not in (None, controller), timeout=fl.TIMEOUT,
                   what="a new controller while the old one is frozen")
        fl.wait_full_isr(c, wait_until, topic, [leader, follower])
        fl.wait_acked(wait_until, [load], 200, "without the frozen controller")
        c.kill(leader)
        assert c.wait_leader(topic, 0, exclude=(leader,)) == follower
    finally:
        c.thaw(controller)
    stalled = load.acked_count
    fl.wait_full_isr(c, wait_until, topic, [follower, controller])
    assert c.partition_state(topic, 0)["leader"] == follower
    assert int(c.zk().get("/controller_epoch")[0]) > old_epoch
    fl.wait_acked(wait_until, [load], 200, "once the old controller is back in sync")
    acked = load.stop()
    assert load.errors == [] and len(acked) > stalled
    fl.check_exactly_once(fl.read_values(c.bootstrap_of(follower, controller), topic), acked)
    c.start(leader)
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
