"""The leader's ISR write (``ZkAdmin.update_isr``) against a real ZooKeeper: a version
conflict and ZooKeeper being unreachable are different answers, since only a conflict
is followed by a newer state the leader can wait for."""

from __future__ import annotations

import pytest
import trio
from kazoo.exceptions import KazooException

from kafkette.broker.cluster import znodes
from kafkette.broker.cluster.metadata import PartitionState
from kafkette.broker.cluster.zk_admin import ZkAdmin
from kafkette.broker.cluster.zk_session import ZkSession


def test_conflict_is_none_and_unreachable_raises(zookeeper_connect: str) -> None:
    async def main() -> None:
        session = ZkSession(zookeeper_connect, 10.0, 10.0)
        await session.start()
        try:
            path = znodes.state_path("t", 0)
            data = znodes.encode_state(1, 3, (1, 2), 1)
            await session.run(lambda c: c.create(path, data, makepath=True))
            admin = ZkAdmin(session, lambda: None)
            base = PartitionState(1, 3, (1, 2), 1, 0)
            written = await admin.update_isr("t", 0, base, [1, 2, 3])
            assert written is not None
            assert written.isr == (1, 2, 3) and written.zk_version == 1
            # The same write again on the old version: a conflict, nothing written.
            assert await admin.update_isr("t", 0, base, [1]) is None
            raw, _ = await session.run(lambda c: c.get(path))
            assert raw == znodes.encode_state(1, 3, (1, 2, 3), 1)
            # ZooKeeper out of reach: not a conflict (no newer state will come).
            await trio.to_thread.run_sync(session.client.stop)
            with pytest.raises(KazooException):
                await admin.update_isr("t", 0, written, [1])
        finally:
            await session.close()

    trio.run(main)
