"""LeaderEpochCache: Kafka's leader-epoch-checkpoint file and LeaderEpochFileCache rules."""

from __future__ import annotations

import logging

import pytest

from kafkette.log.leader_epoch_cache import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    LeaderEpochCache,
    epoch_starts,
)

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache_with(tmp_path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE)
    for epoch, start in entries:
        assert cache.assign(epoch, start)
    return cache


def file_text(tmp_path) -> str:
    return (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).read_text("ascii")


def test_file_is_kafkas_format_and_written_on_every_change(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (3, 120))
    assert file_text(tmp_path) == "0\n2\n0 0\n3 120\n"
    assert cache.latest_epoch == 3
    cache.truncate_from_end(120)
    assert file_text(tmp_path) == "0\n1\n0 0\n"
    cache.clear()
    assert file_text(tmp_path) == "0\n0\n"
    assert cache.latest_epoch == UNDEFINED_EPOCH
    assert [p.name for p in tmp_path.iterdir()] == [LEADER_EPOCH_CHECKPOINT_FILE]  # no .tmp


def test_reload_gives_the_same_entries(tmp_path):
    cache_with(tmp_path, (1, 0), (4, 17), (9, 300))
    again = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE)
    assert again.entries() == [(1, 0), (4, 17), (9, 300)]
    assert again.latest_epoch == 9
    assert again.file_exists and not again.needs_rebuild


def test_missing_file_reads_as_empty(tmp_path):
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE)
    assert cache.entries() == [] and cache.latest_epoch == -1
    assert not cache.file_exists and not cache.needs_rebuild


def test_assign_same_epoch_later_offset_is_a_no_op(tmp_path):
    cache = cache_with(tmp_path, (2, 10))
    assert not cache.assign(2, 15)
    assert cache.entries() == [(2, 10)]


def test_assign_same_epoch_earlier_offset_moves_its_start(tmp_path):
    cache = cache_with(tmp_path, (1, 0), (2, 10))
    assert cache.assign(2, 8)
    assert cache.entries() == [(1, 0), (2, 8)]


def test_assign_older_epoch_removes_newer_conflicting_entries(tmp_path, caplog):
    # A replica that began epoch 5 at 100 (no data) then follows a leader whose
    # log has epoch 4 there: epoch 5's entry must go (Kafka's non-monotonic rule).
    cache = cache_with(tmp_path, (1, 0), (5, 100))
    assert cache.assign(4, 100)
    assert cache.entries() == [(1, 0), (4, 100)]
    # Same start offset as the removed entry: expected, not worth a warning.
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    # A smaller start offset removes every entry at or after it (and warns).
    assert cache.assign(6, 50)
    assert cache.entries() == [(1, 0), (6, 50)]
    assert [r for r in caplog.records if r.levelno == logging.WARNING]
    assert file_text(tmp_path) == "0\n2\n1 0\n6 50\n"


def test_assign_rejects_negative_values(tmp_path):
    cache = cache_with(tmp_path)
    with pytest.raises(ValueError):
        cache.assign(-1, 0)
    with pytest.raises(ValueError):
        cache.assign(0, -5)
    assert cache.entries() == []


# ------------------------------------------------------------- endOffsetFor


def test_end_offset_for_undefined_epoch(tmp_path):
    cache = cache_with(tmp_path, (0, 0))
    assert cache.end_offset_for(UNDEFINED_EPOCH, 50) == UNDEFINED


def test_end_offset_for_on_an_empty_cache_is_undefined(tmp_path):
    cache = cache_with(tmp_path)
    assert cache.end_offset_for(0, 0) == UNDEFINED
    assert cache.end_offset_for(3, 10) == UNDEFINED


def test_end_offset_for_the_latest_epoch_is_the_log_end(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (5, 10), (7, 20))
    assert cache.end_offset_for(7, 33) == (7, 33)


def test_end_offset_for_an_epoch_newer_than_all_is_undefined(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (5, 10), (7, 20))
    assert cache.end_offset_for(8, 33) == UNDEFINED


def test_end_offset_for_a_known_older_epoch_is_the_next_epochs_start(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (5, 10), (7, 20))
    assert cache.end_offset_for(2, 33) == (2, 10)
    assert cache.end_offset_for(5, 33) == (5, 20)


def test_end_offset_for_an_unknown_epoch_between_known_ones(tmp_path):
    # The largest epoch below it, and where the first epoch above it starts.
    cache = cache_with(tmp_path, (2, 6), (5, 10), (7, 20))
    assert cache.end_offset_for(3, 33) == (2, 10)
    assert cache.end_offset_for(6, 33) == (5, 20)


def test_end_offset_for_an_epoch_older_than_all_known(tmp_path):
    # Its records were deleted: the requested epoch, ending where the first known starts.
    cache = cache_with(tmp_path, (2, 6), (5, 10))
    assert cache.end_offset_for(1, 33) == (1, 6)
    assert cache.end_offset_for(0, 33) == (0, 6)


# ------------------------------------------------------------- truncation


def test_truncate_from_end_drops_entries_at_or_after_the_offset(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (3, 8), (4, 11))
    assert cache.truncate_from_end(9)
    assert cache.entries() == [(2, 6), (3, 8)]
    assert cache.latest_epoch == 3
    assert cache.truncate_from_end(8)
    assert cache.entries() == [(2, 6)]
    assert LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).entries() == [(2, 6)]


def test_truncate_from_end_past_every_entry_writes_nothing(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (4, 11))
    path = tmp_path / LEADER_EPOCH_CHECKPOINT_FILE
    path.write_text("0\n2\n2 6\n4 11\n")  # same content, new inode if rewritten
    inode = path.stat().st_ino
    assert not cache.truncate_from_end(12)
    assert not cache.truncate_from_end(-1)
    assert path.stat().st_ino == inode


def test_truncate_from_start_keeps_the_epoch_holding_the_new_start(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (3, 8), (4, 11))
    assert cache.truncate_from_start(9)
    assert cache.entries() == [(3, 9), (4, 11)]
    assert file_text(tmp_path) == "0\n2\n3 9\n4 11\n"


def test_truncate_from_start_before_or_at_the_first_entry_changes_nothing(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (3, 8))
    inode = (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).stat().st_ino
    assert not cache.truncate_from_start(5)
    assert not cache.truncate_from_start(6)
    assert cache.entries() == [(2, 6), (3, 8)]
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).stat().st_ino == inode


def test_truncate_from_start_past_every_entry_keeps_the_latest(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (3, 8))
    assert cache.truncate_from_start(100)
    assert cache.entries() == [(3, 100)]


def test_epoch_for_offset(tmp_path):
    cache = cache_with(tmp_path, (2, 6), (3, 8))
    assert [cache.epoch_for_offset(o) for o in (0, 5, 6, 7, 8, 99)] == [-1, -1, 2, 2, 3, 3]


# ------------------------------------------------------------- bad files


@pytest.mark.parametrize(
    "content",
    [
        "",  # torn before anything was written
        "0\n",  # torn after the version
        "0\n3\n0 0\n4 5\n",  # fewer entries than announced
        "1\n1\n0 0\n",  # unknown version
        "0\n1\nzero 0\n",  # not numbers
        "0\n2\n4 10\n2 20\n",  # epochs out of order
        "0\n2\n2 10\n4 5\n",  # offsets out of order
        "0\n1\n2 10\n3 30\n",  # more lines than announced
    ],
)
def test_a_malformed_file_reads_as_empty_and_asks_for_a_rebuild(tmp_path, content):
    (tmp_path / LEADER_EPOCH_CHECKPOINT_FILE).write_text(content)
    cache = LeaderEpochCache(tmp_path / LEADER_EPOCH_CHECKPOINT_FILE)
    assert cache.entries() == [] and cache.latest_epoch == -1
    assert cache.needs_rebuild
    assert cache.load_error.startswith("malformed")
    cache.replace([(1, 0)])
    assert not cache.needs_rebuild
    assert file_text(tmp_path) == "0\n1\n1 0\n"


def test_epoch_starts_from_batches_follows_assign():
    batches = [(-1, 0), (0, 1), (0, 5), (2, 9), (2, 12), (1, 12), (3, 20)]
    # (1, 12) after epoch 2 started at 9: epoch 2's entry goes, as assign would do.
    assert epoch_starts(batches) == [(0, 1), (1, 12), (3, 20)]
    assert epoch_starts([]) == []
