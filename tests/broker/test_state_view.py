"""``BrokerStateView``'s share groups (KIP-932), read on the broker's event loop: nothing is
built by asking, a member's records in flight show by state, and after a restart the share
partitions nobody fetched since show as stored in ``__share_group_state``."""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.state_view import BrokerStateView, SharePartitionState
from tests.share_groups.share_helpers import (
    create_topic,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
)

CONFIGS = {"group.initial.rebalance.delay.ms": "0"}
# Accept 0-2 and 5, reject 3 and 6, hold 4 and 7-9: start offset 4, six in flight.
VERDICTS = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.ACCEPT, 2: AcknowledgeType.ACCEPT,
            3: AcknowledgeType.REJECT, 5: AcknowledgeType.ACCEPT, 6: AcknowledgeType.REJECT}


def test_share_groups_live_then_stored_after_a_restart(tmp_path) -> None:
    data = tmp_path / "data"
    with EmbeddedBroker.start(data_dir=data, configs=CONFIGS) as running:
        view = BrokerStateView(running.broker)
        assert running.on_loop(view.share_groups) == []
        assert running.on_loop(lambda: view.share_group("g")) is None
        # Asking built nothing: no share groups, no share partition manager.
        assert running.broker.groups.state.share_groups_started is None
        assert running.broker.share_partitions_started is None

        boot = running.bootstrap
        create_topic(boot, "jobs")
        set_group_configs(boot, "g", share_auto_offset_reset="earliest")
        produce(boot, "jobs", [f"v{i}" for i in range(10)])
        consumer = share_consumer(boot, "g", "jobs", **{
            "share.acknowledgement.mode": "explicit", "client.id": "viewer"})
        got = poll_until(consumer, lambda got: len(got) >= 10)
        assert len(got) == 10
        for message in got:
            if message.offset() in VERDICTS:
                consumer.acknowledge(message, VERDICTS[message.offset()])
        consumer.commit_sync()

        live = running.on_loop(lambda: view.share_group("g"))
        assert (live.state, live.assignor, len(live.members)) == ("Stable", "simple", 1)
        [member] = live.members
        assert (member.client_id, member.assignment) == ("viewer", (("jobs", 0),))
        assert live.partitions == (SharePartitionState(
            topic="jobs", partition=0, start_offset=4, in_flight=6, acquired=4, available=0,
            acknowledged=1, archived=1, delivery_complete=2, lag=4, loaded=True),)
        assert [g.group_id for g in running.on_loop(view.share_groups)] == ["g"]

        consumer.close()  # the four held records go back: available, to deliver again
        deadline = time.monotonic() + 15
        while running.on_loop(lambda: view.share_group("g")).partitions[0].acquired:
            assert time.monotonic() < deadline, "the closed member's records were not released"
            time.sleep(0.2)

    with EmbeddedBroker.start(data_dir=data, configs=CONFIGS) as running:
        view = BrokerStateView(running.broker)
        stored = running.on_loop(lambda: view.share_group("g"))
        assert (stored.state, stored.members) == ("Empty", ())
        assert stored.partitions == (SharePartitionState(
            topic="jobs", partition=0, start_offset=4, in_flight=6, acquired=0, available=4,
            acknowledged=1, archived=1, delivery_complete=2, lag=4, loaded=False),)
