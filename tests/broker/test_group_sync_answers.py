"""A leader's SyncGroup that completes a classic rebalance answers every waiting member
in one pass, its own answer first (broker/groups/coordinator.py ``wait_for_reply``):
the answers are rendered together by the completing call, and the completing request
gets its answer back without yielding to the members it woke, so the connection
writes the leader's answer before any follower's task runs."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.testing

from kafkette.broker.config import load_config
from kafkette.broker.embedded import run_in_nursery
from kafkette.broker.server import Broker, Endpoint

PROTOCOLS = [("range", b"")]


def _join(group: str, member: str):
    def call(state, now, ticket):
        return state.join_group(
            ticket, group_id=group, member_id="", group_instance_id=None,
            protocol_type="consumer", protocols=PROTOCOLS, session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000, now_ms=now, client_id=member,
            require_known_member_id=False,
        )

    return call


def _sync(group: str, member_id: str, generation: int, assignments: list[tuple[str, bytes]]):
    def call(state, now, ticket):
        return state.sync_group(
            ticket, group_id=group, generation_id=generation, member_id=member_id,
            group_instance_id=None, protocol_type=None, protocol_name=None,
            assignments=assignments, now_ms=now,
        )

    return call


def _as_dict(response) -> dict:
    return {"error": response.error, "response": response}


async def _rebalance(broker: Broker, group: str, followers: int) -> list[str]:
    """Join a leader and ``followers`` members, park the followers in SyncGroup, then
    send the leader's; the order in which the members' answers come back."""
    coordinator = broker.groups
    joined: dict[str, object] = {}

    async def join(name: str) -> None:
        joined[name] = (await coordinator.wait_for_reply(_join(group, name), _as_dict))["response"]

    names = ["leader"] + [f"follower-{i}" for i in range(followers)]
    async with trio.open_nursery() as nursery:
        for name in names:
            nursery.start_soon(join, name)
            # The first to join leads: each join is in the coordinator before the next
            # starts (no sleep that a loaded machine can stretch past the join window).
            await trio.testing.wait_all_tasks_blocked()
    leader = joined["leader"]
    assert leader.error == 0 and leader.leader == leader.member_id  # type: ignore[attr-defined]
    generation = leader.generation_id  # type: ignore[attr-defined]
    answered: list[str] = []

    async def sync(name: str, assignments: list[tuple[str, bytes]]) -> None:
        member_id = joined[name].member_id  # type: ignore[attr-defined]
        answer = await coordinator.wait_for_reply(
            _sync(group, member_id, generation, assignments), _as_dict
        )
        answered.append(name)
        assert answer["error"] == 0

    async with trio.open_nursery() as nursery:
        for name in names[1:]:
            nursery.start_soon(sync, name, [])
        await trio.testing.wait_all_tasks_blocked()  # every follower waits for the leader
        given = [(joined[n].member_id, n.encode()) for n in names]  # type: ignore[attr-defined]
        nursery.start_soon(sync, "leader", given)
    return answered


def test_the_completing_sync_is_answered_first(tmp_path: Path) -> None:
    config = load_config(
        # The joins all land within a few milliseconds of the loop; the window is wide
        # enough that a process descheduled on a loaded machine still gets them all in
        # (ci19: load 12 on 2 cores, a join after 100 ms began a second rebalance).
        {"group.initial.rebalance.delay.ms": "250", "offsets.topic.num.partitions": "1"},
        data_dir=tmp_path,
    )

    async def main() -> list[list[str]]:
        broker = Broker(config, Endpoint("127.0.0.1", 0))
        async with trio.open_nursery() as nursery:
            await run_in_nursery(nursery, broker)
            orders = []
            for round_ in range(8):  # the scheduler's order of woken tasks is a coin flip
                orders.append(await _rebalance(broker, f"one-pass-{round_}", followers=3))
            broker.request_stop()
        return orders

    for order in trio.run(main):
        assert order[0] == "leader", order
        assert sorted(order[1:]) == ["follower-0", "follower-1", "follower-2"]
