"""kill -9 of the broker while a share group is mid-delivery (``kafkette serve`` child,
SIGKILL, restart on the same data dir and port), three times: a record whose acceptance
or rejection the broker confirmed is never delivered again; a record acquired and not
acknowledged is never lost (delivered again after the restart); in the end every record
is accepted or rejected exactly as the acknowledgements said."""

from __future__ import annotations

import random

from confluent_kafka import AcknowledgeType

from bench.harness.raw_wire import free_port
from bench.harness.serve_process import RestartedServe
from tests.share_groups.share_helpers import (
    create_topic,
    nothing_more,
    poll_until,
    produce,
    set_group_configs,
    share_consumer,
)

RECORDS = 300
ROUNDS = 3


def test_kill_9_mid_delivery_keeps_acknowledgements(tmp_path) -> None:
    rng = random.Random(20261129)
    broker = RestartedServe(tmp_path / "data", free_port(), ["--config", "num.partitions=1"],
                            tmp_path / "broker.log")
    boot = broker.start()
    create_topic(boot, "jobs")
    set_group_configs(boot, "g", share_auto_offset_reset="earliest")
    produce(boot, "jobs", [str(i) for i in range(RECORDS)])
    confirmed: dict[int, str] = {}  # offset -> "accept" / "reject", as the broker answered
    reported: list = []
    try:
        for _round in range(ROUNDS):
            consumer = share_consumer(boot, "g", "jobs", **{"share.acknowledgement.mode":
                                                            "explicit"})
            consumer.set_acknowledgement_commit_callback(
                lambda offsets, error: reported.append((offsets, error)))
            got = poll_until(consumer, lambda got: len(got) >= 40)
            assert got, "nothing delivered"
            for m in got:
                assert m.offset() not in confirmed, f"offset {m.offset()} delivered again"
            # Acknowledge a random prefix, confirmed by commit_sync; hold the rest.
            cut = rng.randrange(1, len(got))
            decided = {}
            for m in got[:cut]:
                kind = "reject" if m.offset() % 7 == 0 else "accept"
                consumer.acknowledge(m, AcknowledgeType.REJECT if kind == "reject"
                                     else AcknowledgeType.ACCEPT)
                decided[m.offset()] = kind
            consumer.commit_sync()
            for offsets, error in reported:
                assert error is None, error
                for offs in offsets.values():
                    for offset in offs:
                        confirmed[offset] = decided[offset]
            reported.clear()
            broker.kill()
            boot = broker.start()
            consumer.close()
        # After the last restart: everything not confirmed is delivered, once.
        final = share_consumer(boot, "g", "jobs")
        rest = poll_until(final, lambda got: len(got) >= RECORDS - len(confirmed), timeout=40)
        rest += nothing_more(final, 1.0)
        final.commit_sync()
        final.close()
        offsets = [m.offset() for m in rest]
        assert len(offsets) == len(set(offsets)), "a record delivered twice after the restart"
        assert not set(offsets) & set(confirmed), "an acknowledged record came back"
        assert set(offsets) | set(confirmed) == set(range(RECORDS)), "a record was lost"
        assert any(k == "reject" for k in confirmed.values())
    finally:
        broker.stop()
