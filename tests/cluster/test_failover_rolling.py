"""A rolling restart of all three brokers under acks=all idempotent load.

Each broker in turn gets SIGTERM (controlled shutdown: it hands its leaderships and,
if it has it, the controller role over while still serving, then exits 0), is
started again on its data dir, and the next one is restarted only once it is back
in the ISR, as an operator upgrading a cluster does. confluent-kafka and
kafka-python produce throughout; every acknowledged record is there exactly once
at the end, and the three replicas are byte-identical.
"""

from __future__ import annotations

import pytest

from tests.cluster import failover_load as fl

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_rolling_restart_of_every_broker_loses_and_duplicates_nothing(
    cluster, wait_until
) -> None:
    c = cluster(3)
    topic = fl.create_topic(c.bootstrap, 3, {"min.insync.replicas": "2"})
    fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
    loads = fl.new_loads(c.bootstrap, topic, ["confluent", "kafka-python"])
    fl.wait_acked(wait_until, loads, 100, "before the first restart")
    for broker_id in (1, 2, 3):
        assert c.stop(broker_id) == 0  # a clean, controlled shutdown
        fl.wait_acked(wait_until, loads, 50, f"while broker {broker_id} is down")
        c.start(broker_id)
        fl.wait_full_isr(c, wait_until, topic, [1, 2, 3])
        fl.wait_acked(wait_until, loads, 50, f"after broker {broker_id} rejoined")
    acked = [value for load in loads for value in load.stop()]
    assert [load.errors for load in loads] == [[], []]
    fl.check_exactly_once(fl.read_values(c.bootstrap, topic), acked)
    fl.wait_converged(c, wait_until, topic, [1, 2, 3])
