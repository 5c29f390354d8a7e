"""Failover decided through ZooKeeper: the controller, and partition leaders.

A broker killed with SIGKILL keeps its ZooKeeper registration until its session
expires (``zookeeper.session.timeout.ms``, 6 s in these clusters); then the
others see it gone: a new controller is elected if it was the controller, and
its partitions get new leaders from their ISR with leader_epoch + 1. Every
surviving broker must answer the same. (Replication itself is tested in
``test_replication_*``: here the topics carry no records.)
"""

from __future__ import annotations

import json

from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster import zk_wire

# Session expiry (6 s) plus the election and watches, on a loaded machine.
FAILOVER_TIMEOUT_S = 45


def _create(bootstrap: str, topic: NewTopic) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([topic], request_timeout=60).values():
        future.result(timeout=60)


def _same_view(built, broker_ids, topics):
    """Every listed broker's metadata if they all agree, else None."""
    views = [zk_wire.metadata(built.brokers[i].address, topics) for i in broker_ids]
    return views[0] if all(v == views[0] for v in views) else None


def test_controller_failover_after_kill_9(cluster, wait_until) -> None:
    built = cluster(3)
    zk = built.zk()
    first = wait_until(lambda: _same_view(built, [1, 2, 3], []), what="agreement")
    old = first["controller_id"]
    old_epoch = int(zk.get("/controller_epoch")[0])
    survivors = [i for i in (1, 2, 3) if i != old]

    built.kill(old)

    def new_controller():
        view = _same_view(built, survivors, [])
        if view and view["controller_id"] in survivors and len(view["brokers"]) == 2:
            return view
        return None

    view = wait_until(new_controller, timeout=FAILOVER_TIMEOUT_S, what="a new controller")
    assert [b[0] for b in view["brokers"]] == survivors
    assert json.loads(zk.get("/controller")[0])["brokerid"] == view["controller_id"]
    assert int(zk.get("/controller_epoch")[0]) == old_epoch + 1

    # The old controller comes back as an ordinary broker; the controller stays.
    built.start(old)
    back = wait_until(
        lambda: (v := _same_view(built, [1, 2, 3], [])) and len(v["brokers"]) == 3 and v,
        what="the old controller registered again",
    )
    assert back["controller_id"] == view["controller_id"]


def test_leader_killed_new_leader_from_isr_with_next_epoch(cluster, wait_until) -> None:
    built = cluster(3)
    controller = wait_until(lambda: _same_view(built, [1, 2, 3], []))["controller_id"]
    # The leader is not the controller, so only the leader election is tested here.
    leader, *followers = [b for b in (1, 2, 3) if b != controller] + [controller]
    _create(
        built.bootstrap,
        NewTopic("failover", num_partitions=1, replica_assignment=[[leader, *followers]]),
    )
    before = wait_until(lambda: _same_view(built, [1, 2, 3], ["failover"]))
    state = before["topics"]["failover"]["partitions"][0]
    assert (state["leader"], state["leader_epoch"]) == (leader, 0)
    assert state["isr"] == [leader, *followers]

    built.kill(leader)

    def elected():
        view = _same_view(built, followers, ["failover"])
        if view is None:
            return None
        partition = view["topics"]["failover"]["partitions"][0]
        # -1 in between: the brokers saw the leader's registration go before the controller's
        # election reached them (Metadata then answers LEADER_NOT_AVAILABLE).
        return partition if partition["leader"] not in (leader, -1) else None

    after = wait_until(elected, timeout=FAILOVER_TIMEOUT_S, what="a new leader")
    assert after["leader"] == followers[0]  # first in assignment order, alive, in the ISR
    assert after["leader_epoch"] == 1
    assert after["isr"] == followers
    assert after["replicas"] == [leader, *followers]
    assert after["offline"] == [leader]
    assert after["error_code"] == 0


def test_partition_offline_without_isr_then_back_with_its_replica(cluster, wait_until) -> None:
    built = cluster(3)
    controller = wait_until(lambda: _same_view(built, [1, 2, 3], []))["controller_id"]
    alone = next(b for b in (1, 2, 3) if b != controller)
    others = [b for b in (1, 2, 3) if b != alone]
    _create(built.bootstrap, NewTopic("single", num_partitions=1, replica_assignment=[[alone]]))
    wait_until(lambda: _same_view(built, [1, 2, 3], ["single"]))

    built.kill(alone)

    def offline():
        view = _same_view(built, others, ["single"])
        partition = view and view["topics"]["single"]["partitions"][0]
        # Wait for the controller's write (epoch 1), not the moment the brokers merely saw the
        # leader's registration go (leader -1 at epoch 0).
        if partition and partition["leader"] == -1 and partition["leader_epoch"] >= 1:
            return partition
        return None

    down = wait_until(offline, timeout=FAILOVER_TIMEOUT_S, what="the partition offline")
    assert down["error_code"] == 5  # LEADER_NOT_AVAILABLE
    assert down["leader_epoch"] == 1
    assert down["isr"] == [alone]  # kept: no unclean election, the last leader may return
    assert down["offline"] == [alone]

    built.start(alone)

    def back():
        view = _same_view(built, [1, 2, 3], ["single"])
        partition = view and view["topics"]["single"]["partitions"][0]
        return partition if partition and partition["leader"] == alone else None

    again = wait_until(back, timeout=FAILOVER_TIMEOUT_S, what="the replica leading again")
    assert (again["leader_epoch"], again["isr"], again["error_code"]) == (2, [alone], 0)


def test_sigterm_moves_leaderships_away_before_stopping(cluster, wait_until) -> None:
    """Controlled shutdown: the stopping broker (here the controller, leading a partition)
    hands over the controller role and its leaderships while it still serves."""
    built = cluster(3)
    controller = wait_until(lambda: _same_view(built, [1, 2, 3], []))["controller_id"]
    others = [b for b in (1, 2, 3) if b != controller]
    _create(built.bootstrap, NewTopic("handover", num_partitions=1,
                                      replica_assignment=[[controller, *others]]))
    wait_until(lambda: _same_view(built, [1, 2, 3], ["handover"]))

    assert built.stop(controller) == 0

    view = wait_until(lambda: _same_view(built, others, ["handover"]), what="agreement")
    partition = view["topics"]["handover"]["partitions"][0]
    assert (partition["leader"], partition["leader_epoch"]) == (others[0], 1)
    assert partition["isr"] == others
    assert view["controller_id"] in others
    log_text = built.brokers[controller].log_path.read_text()
    moved = log_text.index("controlled shutdown: leaderships moved")
    assert moved < log_text.index("data dir closed cleanly")


def test_preferred_replica_leads_again(cluster, wait_until) -> None:
    """auto.leader.rebalance.enable: a partition led by another broker while its preferred
    replica is alive and in the ISR gets the preferred replica back as leader."""
    built = cluster(3, configs={"leader.imbalance.check.interval.seconds": "1"})
    _create(built.bootstrap, NewTopic("preferred", num_partitions=1,
                                      replica_assignment=[[1, 2, 3]]))
    wait_until(lambda: _same_view(built, [1, 2, 3], ["preferred"]))
    # As after a failover the preferred replica came back from and caught up with:
    # broker 2 leads, 1 is in the ISR again.
    zk = built.zk()
    path = "/brokers/topics/preferred/partitions/0/state"
    data, stat = zk.get(path)
    state = json.loads(data)
    zk.set(path, json.dumps({**state, "leader": 2, "leader_epoch": 1}).encode(),
           version=stat.version)

    def led_by_preferred():
        view = _same_view(built, [1, 2, 3], ["preferred"])
        partition = view and view["topics"]["preferred"]["partitions"][0]
        return partition if partition and partition["leader_epoch"] == 2 else None

    partition = wait_until(led_by_preferred, what="the preferred replica leading again")
    assert partition["leader"] == 1
    assert partition["isr"] == [1, 2, 3]


def test_elect_leaders_preferred_on_demand(cluster, wait_until) -> None:
    """ElectLeaders (kafka-leader-election.sh): answered by the controller with Kafka's
    per-partition results; the preferred replica leads with the next epoch."""
    from confluent_kafka import ElectionType, TopicPartition

    built = cluster(3, configs={"auto.leader.rebalance.enable": "false"})
    _create(built.bootstrap, NewTopic("elect", num_partitions=1,
                                      replica_assignment=[[1, 2, 3]]))
    wait_until(lambda: _same_view(built, [1, 2, 3], ["elect"]))
    zk = built.zk()
    path = "/brokers/topics/elect/partitions/0/state"
    data, stat = zk.get(path)
    zk.set(path, json.dumps({**json.loads(data), "leader": 2, "leader_epoch": 1}).encode(),
           version=stat.version)
    wait_until(lambda: (v := _same_view(built, [1, 2, 3], ["elect"]))
               and v["topics"]["elect"]["partitions"][0]["leader"] == 2)

    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    asked = [TopicPartition("elect", 0), TopicPartition("elect", 7)]
    results = admin.elect_leaders(ElectionType.PREFERRED, asked).result(timeout=60)
    assert results[TopicPartition("elect", 0)] is None
    assert results[TopicPartition("elect", 7)].code() == 3  # UNKNOWN_TOPIC_OR_PARTITION
    view = wait_until(lambda: _same_view(built, [1, 2, 3], ["elect"]))
    partition = view["topics"]["elect"]["partitions"][0]
    assert (partition["leader"], partition["leader_epoch"]) == (1, 2)

    again = admin.elect_leaders(ElectionType.PREFERRED, asked[:1]).result(timeout=60)
    assert again[TopicPartition("elect", 0)].code() == 84  # ELECTION_NOT_NEEDED


def test_leader_restarted_at_once_never_leads_on_at_its_old_epoch(cluster, wait_until) -> None:
    """kill -9 and an immediate restart: the broker waits its old registration out, registers
    again with a new broker epoch, and the controller treats it as failed and back (Kafka's
    broker epoch), however short the gap was: it does not lead on at the old leader epoch,
    and it rejoins the ISR as a follower."""
    built = cluster(3)
    controller = wait_until(lambda: _same_view(built, [1, 2, 3], []))["controller_id"]
    leader, *followers = [b for b in (1, 2, 3) if b != controller] + [controller]
    _create(
        built.bootstrap,
        NewTopic("bounce", num_partitions=1, replica_assignment=[[leader, *followers]]),
    )
    wait_until(lambda: _same_view(built, [1, 2, 3], ["bounce"]))
    epoch = built.partition_state("bounce", 0)["leader_epoch"]

    built.kill(leader)
    built.start(leader)

    def rejoined():
        state = built.partition_state("bounce", 0)
        return state if state and sorted(state["isr"]) == [1, 2, 3] else None

    state = wait_until(rejoined, timeout=FAILOVER_TIMEOUT_S, what="the ISR whole again")
    assert state["leader_epoch"] > epoch
    assert state["leader"] != leader or state["leader_epoch"] >= epoch + 2
