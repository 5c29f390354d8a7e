"""PartitionLog.append(leader_epoch=...): the log is the one place a leader epoch is stamped.

The broker passes the epoch it leads in; whatever the client wrote there is
replaced. A newer epoch starts an entry in the leader-epoch cache at the batch;
an older one (a stale caller) is stamped with the cache's latest, as Kafka's log
stamps every leader append.
"""

from __future__ import annotations

from kafkette.log import LogConfig, PartitionLog
from kafkette.wire.record_batch import iter_batches, patch_leader_epoch, validate_batch
from tests.log import log_batches


def batch_stamped(seed: int, epoch: int) -> bytearray:
    batch = log_batches.build_sized_batch(2, 40, seed=seed)
    patch_leader_epoch(batch, epoch)
    return batch


def test_the_given_epoch_replaces_the_clients_and_starts_a_cache_entry(tmp_path, clock):
    log = PartitionLog.open(tmp_path, LogConfig(), clock, recover=False)
    first = batch_stamped(1, 7)  # a client's stamp: ignored
    log.append(first, [validate_batch(first)], leader_epoch=2)
    second = batch_stamped(2, -1)
    log.append(second, [validate_batch(second)], leader_epoch=3)
    stale = batch_stamped(3, 9)
    log.append(stale, [validate_batch(stale)], leader_epoch=1)
    data = log.read(0, 1 << 20).to_bytes()
    assert [h.partition_leader_epoch for h in iter_batches(data)] == [2, 3, 3]
    assert log.leader_epoch_cache.latest_epoch == 3
    assert log.end_offset_for_epoch(2) == (2, 2)
    log.close()


def test_without_an_epoch_the_batchs_own_stamp_is_taken(tmp_path, clock):
    log = PartitionLog.open(tmp_path, LogConfig(), clock, recover=False)
    batch = batch_stamped(1, 5)
    log.append(batch, [validate_batch(batch)])
    assert log.leader_epoch_cache.latest_epoch == 5
    log.close()
