"""A schedule's steps carried out on a ``NemesisCluster``: roles resolved, faults applied.

``roles`` maps a role (``leader``, ``follower``, ``follower2``, ``followers``,
``controller``, ``zk``) to node names, read from ZooKeeper when the schedule starts and again
at each ``roles`` step; ``apply`` does one step. A step naming one node twice (the controller
that is also the leader, in ``block controller leader``) is skipped and says so: a node
cannot be cut from itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.harness.nemesis.cluster import NemesisCluster, wait_for
from bench.harness.nemesis.schedules import Step

RECOVERY_TIMEOUT = 120.0


def resolve_roles(cluster: NemesisCluster, topic: str) -> dict[str, str]:
    """Who leads ``topic``'s partition 0, its followers, the controller; waits (bounded)
    until ZooKeeper names a leader and a controller among the brokers."""

    def read() -> dict[str, str] | None:
        state = cluster.partition_state(topic, 0)
        controller = cluster.controller()
        if state is None or state["leader"] not in cluster.broker_ids:
            return None
        if controller not in cluster.broker_ids:
            return None
        others = [b for b in cluster.broker_ids if b != state["leader"]]
        return {
            "leader": f"b{state['leader']}",
            "follower": f"b{others[0]}",
            "follower2": f"b{others[1]}",
            "followers": f"b{others[0]},b{others[1]}",
            "controller": f"b{controller}",
            "zk": "zk",
        }

    return wait_for(read, RECOVERY_TIMEOUT, f"a leader of {topic}-0 and a controller")


def targets(word: str, roles: dict[str, str]) -> list[str]:
    """Node names of a role, a node name, or a comma-separated list of either."""
    names = []
    for part in word.split(","):
        names += roles.get(part, part).split(",")
    return names


def apply(
    cluster: NemesisCluster,
    step: Step,
    roles: dict[str, str],
    topic: str,
    on_roles: Callable[[dict[str, str]], None],
) -> str:
    """Carry out one step; returns a note for the timeline ("" or why it was skipped).
    ``roles`` are re-read from ``topic`` at a ``roles`` step, then ``on_roles`` is told."""
    network = cluster.network
    args = step.args
    one = targets(args[0], roles)[0] if args else ""
    two = targets(args[1], roles)[0] if step.action in ("block", "refuse", "unblock") else ""
    if two and two == one:
        return f"(skipped: {args[0]} and {args[1]} are both {one})"
    match step.action:
        case "wait":
            time.sleep(float(args[0]))
        case "isolate":
            network.isolate(one)
        case "rejoin":
            network.rejoin(one)
        case "partition":
            side_a, side_b = targets(args[0], roles), targets(args[2], roles)
            if set(side_a) & set(side_b):
                return f"(skipped: {args[0]} and {args[2]} share a node)"
            network.partition(side_a, side_b)
        case "block":
            network.block(one, two)
        case "refuse":
            network.refuse(one, two)
        case "unblock":
            network.unblock(one, two)
        case "kill":
            cluster.kill(one)
        case "restart":
            restart(cluster, one)
        case "freeze":
            cluster.freeze(one)
        case "thaw":
            cluster.thaw(one)
        case "fill-disk":
            cluster.fill_disk(int(one[1:]))
        case "free-disk":
            cluster.free_disk(int(one[1:]))
        case "flap":
            times, off, on = int(args[1]), float(args[2]), float(args[3])
            for _ in range(times):
                network.isolate(one)
                time.sleep(off)
                network.rejoin(one)
                time.sleep(on)
        case "heal":
            heal(cluster)
        case "roles":
            roles.update(resolve_roles(cluster, topic))
            on_roles(roles)
            return f"(leader {roles['leader']}, controller {roles['controller']})"
        case _:
            raise AssertionError(f"unknown step {step}")
    return ""


def restart(cluster: NemesisCluster, name: str) -> None:
    """Start a killed broker or ZooKeeper again; nothing if it runs."""
    if name == "zk":
        if cluster.zookeeper.process is None or cluster.zookeeper.process.poll() is not None:
            cluster.restart("zk")
    elif not cluster.running(int(name[1:])):
        cluster.start_broker(int(name[1:]), wait=False)


def heal(cluster: NemesisCluster) -> None:
    """Links back, processes thawed and restarted (ZooKeeper first), disks freed."""
    cluster.network.heal()
    for name in list(cluster.frozen):
        cluster.thaw(name)
    restart(cluster, "zk")
    for broker in cluster.broker_ids:
        if cluster.small_disk_mb.get(broker):
            cluster.free_disk(broker)
        restart(cluster, f"b{broker}")
    for broker in cluster.broker_ids:
        cluster.serves[broker].wait_ready(RECOVERY_TIMEOUT)
