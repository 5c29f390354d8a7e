"""The request memory pool's accounting: arrival order, the always-admissible largest frame,
and cancellation that never leaks a reservation. (Its effect on real connections is in
test_connection_limits.py.)"""

from __future__ import annotations

import trio
import trio.testing

from kafkette.broker.network.request_memory import RequestMemoryPool


def test_reservations_are_granted_in_arrival_order() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(100)
        granted: list[str] = []

        async def take(name: str, size: int) -> None:
            await pool.reserve(size)
            granted.append(name)

        await pool.reserve(80)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(take, "big", 90)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(take, "small", 20)  # would fit now, but must not overtake "big"
            await trio.testing.wait_all_tasks_blocked()
            assert granted == [] and pool.waiting == 2
            pool.release(80)  # "big" fits; "small" would not fit beside it and keeps waiting
            await trio.testing.wait_all_tasks_blocked()
            assert granted == ["big"] and pool.waiting == 1
            pool.release(90)
            await trio.testing.wait_all_tasks_blocked()
            assert granted == ["big", "small"]
        assert pool.in_use == 20

    trio.run(main)


def test_a_frame_as_large_as_the_pool_is_admitted_when_nothing_is_held() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(100)
        await pool.reserve(100)
        assert pool.in_use == 100
        pool.release(100)
        assert pool.in_use == 0

    trio.run(main)


def test_a_cancelled_waiter_leaves_nothing_behind_and_unblocks_the_next() -> None:
    async def main() -> None:
        pool = RequestMemoryPool(100)
        await pool.reserve(50)
        got_small = trio.Event()

        async def small() -> None:
            await pool.reserve(40)
            got_small.set()

        async with trio.open_nursery() as nursery:
            big_scope = trio.CancelScope()

            async def big() -> None:
                with big_scope:
                    await pool.reserve(60)

            nursery.start_soon(big)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(small)  # queued behind "big"
            await trio.testing.wait_all_tasks_blocked()
            assert not got_small.is_set()
            big_scope.cancel()  # "big" gives up: "small" now fits and is granted
            await got_small.wait()
        assert (pool.in_use, pool.waiting) == (90, 0)

    trio.run(main)
