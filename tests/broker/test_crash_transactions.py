"""kill -9 during transactions: commits complete, everything else aborts, markers everywhere.

A ``kafkette serve`` subprocess is killed with SIGKILL at seeded random moments,
each round aimed at one of: anytime, a producer's produce phase, its commit or
abort (EndTxn, PrepareCommit/PrepareAbort), or just after a commit or abort was
answered (the markers being written), while two confluent-kafka transactional
producers run numbered transactions over five partitions of two topics, each
also committing a group offset with ``send_offsets_to_transaction``. The broker restarts on the
same data dir and port; each producer either carries on with its instance or
(seeded) is replaced by a new one with the same ``transactional.id``, whose
InitProducerId makes the coordinator finish or abort what was left.

At the end, once the coordinator is idle and LSO == high watermark everywhere:
every partition read raw has a marker after each transaction's records, each
transaction is committed in every partition it wrote or aborted in all of them,
acknowledged commits are complete, nothing the client aborted is committed,
read_committed readers (confluent-kafka and kafka-python) see exactly the
committed records once, and the group's offset is the last committed one's.

``KAFKETTE_CRASH_ROUNDS`` / ``KAFKETTE_CRASH_SEED`` run a longer or different
series; ``bench/txn_crash_series.py`` runs many rounds outside pytest.
"""

from __future__ import annotations

import os

from bench.harness import txn_crash_load  # the load bench runs for many rounds; a few here

ROUNDS = int(os.environ.get("KAFKETTE_CRASH_ROUNDS", "5"))
SEED = int(os.environ.get("KAFKETTE_CRASH_SEED", "20261123"))
TOPIC_CONFIGS = {"segment.bytes": "16384", "retention.ms": "-1"}
BROKER_CONFIGS = (
    "--config",
    "num.partitions=3",
    "--config",
    "group.initial.rebalance.delay.ms=0",
    "--config",
    "transaction.state.log.segment.bytes=65536",
)


def test_kill_9_during_transactions_commits_or_aborts_each_whole(
    tmp_path, kill_9_broker
) -> None:
    broker = kill_9_broker(tmp_path / "data", *BROKER_CONFIGS)
    result = txn_crash_load.run_series(
        broker.start, broker.kill, TOPIC_CONFIGS, ROUNDS, SEED, log=print
    )
    print(result.summary())
    print(dict(result.client_errors))

    assert result.rounds == ROUNDS, result.summary()
    assert result.ok, (result.summary(), result.failures())
    # The series did something: commits acknowledged and aborts on both sides of the kills.
    assert result.acked_commits >= ROUNDS and result.acked_aborts >= ROUNDS, result.summary()
    assert result.committed_in_log >= result.acked_commits, result.summary()
    assert result.records_visible > 0, result.summary()
    assert broker.serve.terminate() == 0
