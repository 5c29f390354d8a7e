"""kill -9 under idempotent acks=all load: nothing lost, nothing stored twice, group offsets kept.

A ``kafkette serve`` subprocess is killed with SIGKILL at seeded random points
while a confluent-kafka idempotent producer (acks=all, 5 in flight, retries)
sends uniquely numbered values and a consumer group commits its position.
Each time the broker restarts on the same data dir and port and both clients
carry on. Batches in flight at the kill were often written without their
answer reaching the client; the client retries them with the same producer
id, epoch and sequence, and the restarted broker must recognise them (the
producer state is rebuilt from its snapshot plus the log), not append them
again. Small segments make rolls, hence snapshot writes, frequent, so kills
also land during those. Brokers alternate between Kafka's flush defaults and
``log.flush.interval.messages=1`` (which widens the written-but-unanswered
window: the old in-memory producer state failed this test in 4 of 4 runs).

More rounds, with and without ``log.flush.interval.messages=1``:
``bench/crash_series.py``.
"""

from __future__ import annotations

from bench.harness import crash_load  # the load bench runs for many rounds; a few here

ROUNDS = 4
SEED = 20261123
TOPIC_CONFIGS = {"segment.bytes": "65536", "retention.ms": "-1"}


def test_kill_9_under_idempotent_load_stores_each_value_once(
    tmp_path, kill_9_broker
) -> None:
    broker = kill_9_broker(
        tmp_path / "data",
        "--config", "num.partitions=3",
        "--config", "group.initial.rebalance.delay.ms=0",
    )
    result = crash_load.run_series(
        broker.start, broker.kill, TOPIC_CONFIGS, ROUNDS, SEED, log=print
    )
    print(result.summary())

    assert not result.stalled, result.stalled
    assert result.rounds == ROUNDS
    assert result.acked > 1000, result.summary()
    assert not result.failed, (result.summary(), result.failed[:3])
    assert result.unsettled == 0, result.summary()
    assert not result.lost, (result.summary(), result.lost[:5])
    assert not result.duplicated, (result.summary(), result.duplicated[:5])
    assert not result.gaps, (result.summary(), result.gaps)
    # Every value sent was acknowledged (nothing failed or was left), so all are stored.
    assert result.stored == result.produced == result.acked, result.summary()
    assert not result.commit_regressions, result.commit_regressions
    assert not result.producer_id_reuse, result.producer_id_reuse
    assert broker.serve.terminate() == 0
