"""The share-partition delivery state alone (no broker): acquisition, acknowledgement, lock
expiry, releases, the start offset and persistence, each pinned to Kafka 4.3's behaviour
(``SharePartition`` and ``KafkaApis``' acknowledgement checks), driven with explicit ``now_ms``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kafkette.broker.share_groups.delivery_state import (
    AckBatch,
    AckType,
    DeliveryConfig,
    FetchedBatch,
    RecordState,
    SharePartitionDelivery,
    StateBatch,
    aborted_batch_ranges,
    validate_acknowledgement_batches,
)
from kafkette.wire.errors import ErrorCode

CONFIG = DeliveryConfig(
    record_lock_duration_ms=1000, delivery_count_limit=5, partition_max_record_locks=100
)
ACCEPT, RELEASE, REJECT, GAP, RENEW = (
    AckType.ACCEPT,
    AckType.RELEASE,
    AckType.REJECT,
    AckType.GAP,
    AckType.RENEW,
)
AVAILABLE, ACQUIRED = RecordState.AVAILABLE, RecordState.ACQUIRED
ACKNOWLEDGED, ARCHIVED = RecordState.ACKNOWLEDGED, RecordState.ARCHIVED


def _state(start=0, **config):
    return SharePartitionDelivery(start, replace(CONFIG, **config))


def _batches(*ranges):
    return [r if isinstance(r, FetchedBatch) else FetchedBatch(*r) for r in ranges]


def _acquire(state, member, *ranges, max_records=500, now=0, **kw):
    result = state.acquire(member, _batches(*ranges), max_records, now, **kw)
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in result.records]


def _ack(state, member, first, last, *types, now=0):
    return state.acknowledge(member, [AckBatch(first, last, list(types))], now)


def _view(state):
    return [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in state.ranges()]


def _batch(first, last, state, count):
    return StateBatch(first, last, state, count)


# --- configuration --------------------------------------------------------------------------


def test_defaults_are_kafka_4_3s():
    config = DeliveryConfig()
    assert config.record_lock_duration_ms == 30_000
    assert config.delivery_count_limit == 5
    assert config.partition_max_record_locks == 2_000
    assert config.renew_acknowledge_enabled is True


# --- acquisition ----------------------------------------------------------------------------


def test_acquire_takes_new_batches_whole_with_a_lock():
    state = _state()
    assert state.next_fetch_offset() == 0
    assert _acquire(state, "a", (0, 4), (5, 9), now=100) == [(0, 9, 1)]
    assert (state.start_offset, state.end_offset, state.in_flight_count) == (0, 9, 10)
    assert state.next_fetch_offset() == 10
    assert state.next_deadline_ms() == 1100
    [held] = state.ranges()
    assert (held.state, held.member_id, held.deadline_ms) == (ACQUIRED, "a", 1100)


def test_acquire_nothing():
    state = _state(start=10)
    assert _acquire(state, "a", (0, 9)) == []  # wholly below the start offset
    assert _acquire(state, "a", (10, 19), max_records=0) == []
    assert state.acquire("a", [], 500, 0).records == ()
    assert state.in_flight_count == 0


def test_batch_before_the_start_offset_is_acquired_from_the_start_offset():
    state = _state(start=5)
    assert _acquire(state, "a", (0, 9)) == [(5, 9, 1)]


def test_max_records_is_rounded_up_to_the_end_of_a_log_batch():
    state = _state()
    assert _acquire(state, "a", (0, 4), (5, 14), (15, 19), max_records=7) == [(0, 14, 1)]
    assert state.next_fetch_offset() == 15


def test_record_limit_mode_acquires_exactly_and_keeps_the_rest_available():
    state = _state()
    assert _acquire(state, "a", (0, 9), max_records=4, record_limit=True) == [(0, 3, 1)]
    assert _view(state) == [(0, 3, ACQUIRED, 1), (4, 9, AVAILABLE, 0)]
    assert state.next_fetch_offset() == 4
    # The log read from 4 returns the whole batch again; the rest is a first delivery.
    got = _acquire(state, "b", (0, 9), max_records=10, fetch_offset=4, record_limit=True)
    assert got == [(4, 9, 1)]


def test_batch_size_cuts_new_records_at_batch_boundaries():
    state = _state()
    got = _acquire(state, "a", (0, 2), (3, 5), (6, 8), (9, 9), batch_size=3)
    assert got == [(0, 2, 1), (3, 5, 1), (6, 8, 1), (9, 9, 1)]
    state = _state()
    got = _acquire(state, "a", (0, 2), (3, 5), (6, 8), (9, 9), batch_size=4)
    assert got == [(0, 5, 1), (6, 9, 1)]


def test_max_record_locks_bounds_the_window():
    # Kafka's testAcquireWithMaxInFlightRecordsAndTryAcquireNewBatch.
    state = _state(partition_max_record_locks=20)
    assert _acquire(state, "a", (0, 9)) == [(0, 9, 1)]
    got = _acquire(state, "a", (10, 14), (15, 24), (25, 29), (30, 31))
    assert got == [(10, 24, 1)]  # 10 records of room, rounded up to the batch ending at 24
    assert state.next_fetch_offset() == 25
    assert not state.can_acquire()
    assert _acquire(state, "a", (25, 34), fetch_offset=25) == []

    # A release inside the full window is redelivered, but nothing past the window is taken.
    assert _ack(state, "a", 20, 20, RELEASE).error == ErrorCode.NONE
    assert state.can_acquire()
    assert state.next_fetch_offset() == 20
    assert _acquire(state, "b", (15, 24), (25, 34), fetch_offset=20) == [(20, 20, 2)]
    assert state.end_offset == 24


def test_redelivery_respects_max_records():
    state = _state()
    _acquire(state, "a", (0, 9), (10, 19))
    _ack(state, "a", 0, 19, RELEASE)
    assert _acquire(state, "b", (0, 9), (10, 19), max_records=5) == [(0, 9, 2)]
    assert _acquire(state, "c", (10, 19), max_records=5, record_limit=True) == [(10, 14, 2)]


def test_a_whole_batch_acquired_and_accepted_is_one_range():
    state = _state(partition_max_record_locks=10**7)
    assert _acquire(state, "a", (0, 999_999), max_records=10**6) == [(0, 999_999, 1)]
    assert state.range_count == 1
    result = _ack(state, "a", 0, 999_999, ACCEPT)
    assert result.state_changes == (_batch(0, 999_999, ACKNOWLEDGED, 1),)
    assert state.range_count == 0
    assert state.start_offset == 1_000_000
    assert state.next_fetch_offset() == 1_000_000


# --- acknowledgement ------------------------------------------------------------------------


def test_accept_finishes_and_moves_the_start_offset():
    state = _state()
    _acquire(state, "a", (0, 9))
    result = _ack(state, "a", 0, 9, ACCEPT)
    assert result.error == ErrorCode.NONE
    assert result.state_changes == (_batch(0, 9, ACKNOWLEDGED, 1),)
    assert (state.start_offset, state.in_flight_count, state.next_fetch_offset()) == (10, 0, 10)


def test_release_redelivers_with_the_next_delivery_count():
    state = _state()
    _acquire(state, "a", (0, 9))
    assert _ack(state, "a", 0, 9, RELEASE).state_changes == (_batch(0, 9, AVAILABLE, 1),)
    assert state.next_fetch_offset() == 0
    assert _acquire(state, "b", (0, 9)) == [(0, 9, 2)]
    assert state.counters.redelivered == 10


def test_release_at_the_delivery_limit_archives():
    state = _state(delivery_count_limit=2)
    _acquire(state, "a", (0, 9))
    _ack(state, "a", 0, 9, RELEASE)
    assert _acquire(state, "a", (0, 9)) == [(0, 9, 2)]
    assert _ack(state, "a", 0, 9, RELEASE).state_changes == (_batch(0, 9, ARCHIVED, 2),)
    assert state.start_offset == 10
    assert state.counters.archived_at_limit == 10


def test_reject_and_gap_archive():
    state = _state()
    _acquire(state, "a", (0, 4))
    result = _ack(state, "a", 0, 4, ACCEPT, GAP, ACCEPT, REJECT, ACCEPT)
    assert result.state_changes == (
        _batch(0, 0, ACKNOWLEDGED, 1),
        _batch(1, 1, ARCHIVED, 1),
        _batch(2, 2, ACKNOWLEDGED, 1),
        _batch(3, 3, ARCHIVED, 1),
        _batch(4, 4, ACKNOWLEDGED, 1),
    )
    assert state.start_offset == 5


def test_per_offset_types_that_agree_stay_one_range():
    state = _state()
    _acquire(state, "a", (0, 9))
    result = _ack(state, "a", 0, 9, *[ACCEPT] * 10)
    assert result.state_changes == (_batch(0, 9, ACKNOWLEDGED, 1),)


def test_partial_acknowledgements_split_the_batch():
    state = _state()
    _acquire(state, "a", (0, 9))
    assert _ack(state, "a", 0, 2, ACCEPT).error == ErrorCode.NONE
    assert state.start_offset == 3
    assert _view(state) == [(3, 9, ACQUIRED, 1)]
    assert _ack(state, "a", 5, 6, REJECT, RELEASE).error == ErrorCode.NONE
    assert _view(state) == [
        (3, 4, ACQUIRED, 1),
        (5, 5, ARCHIVED, 1),
        (6, 6, AVAILABLE, 1),
        (7, 9, ACQUIRED, 1),
    ]
    assert state.next_fetch_offset() == 6
    assert state.count(ACQUIRED) == 5
    # Finishing 3-4 moves the start past the archived 5, up to the available 6.
    _ack(state, "a", 3, 4, ACCEPT)
    assert state.start_offset == 6
    assert _view(state) == [(6, 6, AVAILABLE, 1), (7, 9, ACQUIRED, 1)]
    # Only 6 is redelivered; 7-9 are still held.
    assert _acquire(state, "b", (0, 9), fetch_offset=6) == [(6, 6, 2)]


def test_another_member_cannot_acknowledge():
    state = _state()
    _acquire(state, "a", (0, 9))
    result = _ack(state, "b", 0, 9, ACCEPT)
    assert result.error == ErrorCode.INVALID_RECORD_STATE
    assert result.state_changes == ()
    assert _view(state) == [(0, 9, ACQUIRED, 1)]
    assert state.ranges()[0].member_id == "a"


def test_an_acknowledgement_is_all_or_nothing():
    state = _state()
    _acquire(state, "a", (0, 4))
    _acquire(state, "b", (5, 9))
    batches = [AckBatch(0, 4, [ACCEPT]), AckBatch(5, 9, [ACCEPT])]
    assert state.acknowledge("a", batches, 0).error == ErrorCode.INVALID_RECORD_STATE
    assert _view(state) == [(0, 4, ACQUIRED, 1), (5, 9, ACQUIRED, 1)]
    assert state.counters.acknowledged[ACCEPT] == 0


def test_acknowledging_records_not_acquired_is_invalid_record_state():
    state = _state()
    assert _ack(state, "a", 0, 4, ACCEPT).error == ErrorCode.INVALID_RECORD_STATE  # empty
    _acquire(state, "a", (0, 9))
    _ack(state, "a", 5, 9, RELEASE)
    assert _ack(state, "a", 5, 9, ACCEPT).error == ErrorCode.INVALID_RECORD_STATE
    assert _ack(state, "a", 4, 5, ACCEPT).error == ErrorCode.INVALID_RECORD_STATE


def test_acknowledging_past_the_acquired_records_is_invalid_request():
    state = _state()
    _acquire(state, "a", (0, 9))
    assert _ack(state, "a", 10, 12, ACCEPT).error == ErrorCode.INVALID_REQUEST
    assert _ack(state, "a", 5, 12, ACCEPT).error == ErrorCode.INVALID_REQUEST
    assert _view(state) == [(0, 9, ACQUIRED, 1)]


def test_acknowledging_below_the_start_offset_is_ignored():
    state = _state()
    _acquire(state, "a", (0, 9))
    _ack(state, "a", 0, 4, ACCEPT)
    result = _ack(state, "a", 0, 4, ACCEPT)
    assert (result.error, result.state_changes) == (ErrorCode.NONE, ())
    # A batch straddling the start offset is applied from the start offset on.
    result = _ack(state, "a", 3, 6, REJECT, REJECT, ACCEPT, ACCEPT)
    assert result.state_changes == (_batch(5, 6, ACKNOWLEDGED, 1),)
    assert state.start_offset == 7


@pytest.mark.parametrize(
    "batches",
    [
        [AckBatch(5, 4, [ACCEPT])],  # backwards
        [AckBatch(0, 4, [])],  # no types
        [AckBatch(0, 4, [ACCEPT, ACCEPT])],  # per-offset list of the wrong length
        [AckBatch(0, 4, [5])],  # no such type
        [AckBatch(0, 4, [-1])],
        [AckBatch(0, 4, [ACCEPT]), AckBatch(3, 6, [ACCEPT])],  # overlapping
    ],
)
def test_malformed_acknowledgements_are_invalid_request(batches):
    state = _state()
    _acquire(state, "a", (0, 9))
    assert validate_acknowledgement_batches(batches) == ErrorCode.INVALID_REQUEST
    assert state.acknowledge("a", batches, 0).error == ErrorCode.INVALID_REQUEST
    assert _view(state) == [(0, 9, ACQUIRED, 1)]


def test_acknowledgement_checks_follow_kafkas_request_rules():
    # Kafka lets a batch start at the previous batch's last offset.
    touching = [AckBatch(0, 4, [ACCEPT]), AckBatch(4, 9, [ACCEPT])]
    assert validate_acknowledgement_batches(touching) == ErrorCode.NONE
    renew = [AckBatch(0, 4, [RENEW])]
    assert validate_acknowledgement_batches(renew) == ErrorCode.NONE
    assert validate_acknowledgement_batches(renew, renew_ack=False) == ErrorCode.INVALID_REQUEST
    assert validate_acknowledgement_batches(renew, max_ack_type=3) == ErrorCode.INVALID_REQUEST


# --- renewal (KIP-1222) ---------------------------------------------------------------------


def test_renew_moves_the_lock_and_nothing_else():
    state = _state()
    _acquire(state, "a", (0, 9), now=0)
    result = _ack(state, "a", 0, 9, RENEW, now=600)
    assert (result.error, result.state_changes) == (ErrorCode.NONE, ())
    assert state.next_deadline_ms() == 1600
    assert state.expire_locks(1000) == ()
    assert state.expire_locks(1600) == (_batch(0, 9, AVAILABLE, 1),)
    assert _acquire(state, "a", (0, 9)) == [(0, 9, 2)]
    assert state.counters.acknowledged[RENEW] == 10


def test_renewing_part_of_a_range_splits_its_lock():
    state = _state()
    _acquire(state, "a", (0, 9), now=0)
    _ack(state, "a", 0, 4, RENEW, now=500)
    assert [(r.first_offset, r.deadline_ms) for r in state.ranges()] == [(0, 1500), (5, 1000)]
    assert state.next_deadline_ms() == 1000
    assert state.expire_locks(1000) == (_batch(5, 9, AVAILABLE, 1),)
    # Renewing the rest to the same deadline makes the two one range again.
    state = _state()
    _acquire(state, "a", (0, 9), now=0)
    _ack(state, "a", 0, 4, RENEW, now=500)
    _ack(state, "a", 5, 9, RENEW, now=500)
    assert state.range_count == 1


def test_renew_disabled_for_the_group_is_invalid_record_state():
    state = _state(renew_acknowledge_enabled=False)
    _acquire(state, "a", (0, 9))
    assert _ack(state, "a", 0, 9, RENEW).error == ErrorCode.INVALID_RECORD_STATE
    assert state.next_deadline_ms() == 1000


# --- lock expiry and releases ---------------------------------------------------------------


def test_locks_expire_at_their_deadline():
    state = _state()
    _acquire(state, "a", (0, 9), now=0)
    _acquire(state, "b", (10, 19), now=500)
    assert state.next_deadline_ms() == 1000
    assert state.expire_locks(999) == ()
    assert state.expire_locks(1000) == (_batch(0, 9, AVAILABLE, 1),)
    assert state.next_fetch_offset() == 0
    assert state.next_deadline_ms() == 1500
    assert state.counters.locks_expired == 10
    assert _ack(state, "a", 0, 9, ACCEPT).error == ErrorCode.INVALID_RECORD_STATE


def test_a_lock_expiring_at_the_delivery_limit_archives():
    state = _state(delivery_count_limit=2)
    _acquire(state, "a", (0, 9), now=0)
    state.expire_locks(1000)
    assert _acquire(state, "a", (0, 9), now=1000) == [(0, 9, 2)]
    assert state.expire_locks(2000) == (_batch(0, 9, ARCHIVED, 2),)
    assert state.start_offset == 10
    assert state.next_deadline_ms() is None


def test_release_member_keeps_the_delivery_count():
    # Kafka 4.2+ (KAFKA-19972): a closed share session does not give the attempt back.
    state = _state(delivery_count_limit=2)
    _acquire(state, "a", (0, 4))
    _acquire(state, "b", (5, 9))
    assert state.release_member("a") == (_batch(0, 4, AVAILABLE, 1),)
    assert _view(state) == [(0, 4, AVAILABLE, 1), (5, 9, ACQUIRED, 1)]
    assert _acquire(state, "c", (0, 4)) == [(0, 4, 2)]
    assert state.release_member("c") == (_batch(0, 4, ARCHIVED, 2),)
    assert state.release_member("nobody") == ()
    assert state.start_offset == 5
    assert state.counters.released_on_close == 10


def test_a_config_change_applies_from_the_next_call():
    state = _state()
    _acquire(state, "a", (0, 9))
    state.config = replace(state.config, delivery_count_limit=1)
    assert _ack(state, "a", 0, 9, RELEASE).state_changes == (_batch(0, 9, ARCHIVED, 1),)


# --- throttled redelivery (KAFKA-17541) -----------------------------------------------------


def test_records_failing_again_are_delivered_in_halves_then_alone():
    state = _state()  # delivery limit 5: throttled from delivery count 3
    for delivery in (1, 2, 3):
        assert _acquire(state, "a", (0, 99)) == [(0, 99, delivery)]
        _ack(state, "a", 0, 99, RELEASE)
    assert _acquire(state, "a", (0, 99)) == [(0, 49, 4)]  # half the batch, and nothing else
    _ack(state, "a", 0, 49, RELEASE)
    assert _acquire(state, "a", (0, 99)) == [(0, 0, 5)]  # the last attempt goes alone
    assert _acquire(state, "a", (0, 99), fetch_offset=1) == [(1, 1, 5)]


def test_a_throttled_range_is_not_delivered_with_others():
    state = SharePartitionDelivery.restore(
        0, [_batch(0, 9, AVAILABLE, 0), _batch(10, 19, AVAILABLE, 3)], CONFIG
    )
    assert _acquire(state, "a", (0, 9), (10, 19), (20, 29)) == [(0, 9, 1)]
    assert _acquire(state, "a", (10, 19), (20, 29), fetch_offset=10) == [(10, 14, 4)]


# --- transactions and control records -------------------------------------------------------


def _txn(base, last, pid, *, abort_marker=False, commit_marker=False):
    control = abort_marker or commit_marker
    return FetchedBatch(base, last, pid, True, control, abort_marker)


READ = [
    _txn(0, 1, 7),
    _txn(2, 3, 8),
    _txn(4, 4, 8, abort_marker=True),
    _txn(5, 5, 7, commit_marker=True),
    _txn(6, 7, 8),  # a later transaction of producer 8: not aborted
]


def test_aborted_batch_ranges_follow_the_abort_markers():
    assert aborted_batch_ranges(READ, [(8, 2)]) == [(2, 3)]
    assert aborted_batch_ranges(READ, [(7, 0)]) == [(0, 1), (5, 5)]  # marker is transactional
    assert aborted_batch_ranges(READ, []) == []
    plain = [FetchedBatch(0, 9)]
    assert aborted_batch_ranges(plain, [(-1, 0)]) == []


def test_read_committed_never_delivers_aborted_records():
    state = _state()
    assert _acquire(state, "a", *READ, aborted_transactions=[(8, 2)]) == [(0, 1, 1), (4, 7, 1)]
    assert _view(state) == [(0, 1, ACQUIRED, 1), (2, 3, ARCHIVED, 1), (4, 7, ACQUIRED, 1)]
    assert state.counters.acquired == 6
    _ack(state, "a", 0, 1, ACCEPT)
    assert state.start_offset == 4


def test_read_uncommitted_delivers_everything():
    state = _state()
    assert _acquire(state, "a", *READ) == [(0, 7, 1)]


def test_control_records_are_delivered_and_acknowledged_as_gaps():
    state = _state()
    got = _acquire(state, "a", (0, 4), FetchedBatch(5, 5, 3, True, True))
    assert got == [(0, 5, 1)]
    assert _ack(state, "a", 0, 5, *[ACCEPT] * 5, GAP).error == ErrorCode.NONE
    assert state.start_offset == 6


# --- the log moved under the window ---------------------------------------------------------


def test_records_compacted_away_are_archived():
    state = _state()
    _acquire(state, "a", (0, 4), (5, 9))
    _ack(state, "a", 0, 9, RELEASE)
    # Read from 0, the log now starts its batches at 5: 0-4 are gone.
    assert _acquire(state, "b", (5, 9), fetch_offset=0) == [(5, 9, 2)]
    assert state.start_offset == 5


def test_offsets_skipped_past_the_window_are_archived():
    state = _state()
    _acquire(state, "a", (0, 4))
    assert _acquire(state, "a", (8, 9), fetch_offset=5) == [(8, 9, 1)]
    assert _view(state) == [(0, 4, ACQUIRED, 1), (5, 7, ARCHIVED, 0), (8, 9, ACQUIRED, 1)]
    _ack(state, "a", 0, 4, ACCEPT)
    assert state.start_offset == 8
    # With nothing in flight, the window starts at the first record read.
    state = _state()
    assert _acquire(state, "a", (5, 9)) == [(5, 9, 1)]
    assert state.start_offset == 5


def test_log_start_moving_drops_what_is_below_it():
    state = _state()
    _acquire(state, "a", (0, 9))
    _ack(state, "a", 3, 4, RELEASE)
    state.log_start_moved(5)
    assert (state.start_offset, _view(state)) == (5, [(5, 9, ACQUIRED, 1)])
    assert state.next_fetch_offset() == 10
    assert _ack(state, "a", 0, 6, ACCEPT).state_changes == (_batch(5, 6, ACKNOWLEDGED, 1),)
    state.log_start_moved(3)  # behind the start offset: nothing to do
    assert state.start_offset == 7
    state.log_start_moved(50)
    assert (state.start_offset, state.in_flight_count, state.next_fetch_offset()) == (50, 0, 50)
    assert state.next_deadline_ms() is None


def test_alter_start_offset_starts_over_under_a_new_state_epoch():
    state = _state()
    _acquire(state, "a", (0, 9))
    state.alter_start_offset(100)
    assert (state.state_epoch, state.start_offset, state.in_flight_count) == (1, 100, 0)
    assert state.next_fetch_offset() == 100
    assert state.state_batches() == ()
    state.alter_start_offset(0)  # backwards too: it is the administrator's call
    assert (state.state_epoch, state.start_offset) == (2, 0)


# --- durability -----------------------------------------------------------------------------


def test_state_batches_write_acquired_records_as_they_were_before_acquisition():
    state = _state()
    _acquire(state, "a", (0, 9))
    assert state.state_batches() == (_batch(0, 9, AVAILABLE, 0),)
    _ack(state, "a", 0, 9, RELEASE)
    _acquire(state, "a", (0, 9))
    _ack(state, "a", 0, 3, ACCEPT, REJECT, RELEASE, ACCEPT)
    assert state.state_batches() == (
        _batch(2, 2, AVAILABLE, 2),
        _batch(3, 3, ACKNOWLEDGED, 2),
        _batch(4, 9, AVAILABLE, 1),
    )


def test_restore_fills_gaps_as_available_and_acquires_nothing():
    persisted = [
        _batch(10, 14, ACKNOWLEDGED, 1),
        _batch(15, 19, AVAILABLE, 2),
        _batch(25, 29, ARCHIVED, 5),
        _batch(30, 34, AVAILABLE, 1),
    ]
    state = SharePartitionDelivery.restore(10, persisted, CONFIG, state_epoch=3)
    assert state.state_epoch == 3
    assert state.start_offset == 15  # past the acknowledged 10-14
    assert state.end_offset == 34
    assert _view(state) == [
        (15, 19, AVAILABLE, 2),
        (20, 24, AVAILABLE, 0),  # no persisted state: in flight when the broker stopped
        (25, 29, ARCHIVED, 5),
        (30, 34, AVAILABLE, 1),
    ]
    assert state.count(ACQUIRED) == 0
    assert state.next_deadline_ms() is None
    assert state.next_fetch_offset() == 15
    assert _acquire(state, "a", (15, 19), (20, 24), fetch_offset=15) == [
        (15, 19, 3),
        (20, 24, 1),
    ]
    again = SharePartitionDelivery.restore(state.start_offset, state.state_batches(), CONFIG)
    assert _view(again) == [
        (15, 19, AVAILABLE, 2),
        (20, 24, AVAILABLE, 0),
        (25, 29, ARCHIVED, 5),
        (30, 34, AVAILABLE, 1),
    ]


def test_restore_from_nothing():
    state = SharePartitionDelivery.restore(42, [], CONFIG)
    assert (state.start_offset, state.in_flight_count, state.next_fetch_offset()) == (42, 0, 42)


def test_restore_of_a_persisted_acquired_state_makes_it_available():
    state = SharePartitionDelivery.restore(0, [_batch(0, 4, ACQUIRED, 2)], CONFIG)
    assert _view(state) == [(0, 4, AVAILABLE, 2)]


@pytest.mark.parametrize(
    "batches",
    [
        [_batch(5, 9, AVAILABLE, 1)],  # below the start offset
        [_batch(10, 14, AVAILABLE, 1), _batch(12, 16, AVAILABLE, 1)],  # overlapping
        [_batch(20, 24, AVAILABLE, 1), _batch(10, 14, AVAILABLE, 1)],  # unsorted
        [_batch(14, 10, AVAILABLE, 1)],  # backwards
        [_batch(10, 14, 3, 1)],  # no such state here
    ],
)
def test_restore_refuses_bad_state(batches):
    with pytest.raises(ValueError):
        SharePartitionDelivery.restore(10, batches, CONFIG)


# --- numbers for metrics and describe tools -------------------------------------------------


def test_counters_and_summaries():
    state = _state()
    _acquire(state, "a", (0, 9), now=0)
    _ack(state, "a", 0, 3, ACCEPT, GAP, REJECT, RELEASE)
    _ack(state, "a", 4, 5, RENEW)
    assert state.count(ACQUIRED) == 6
    assert state.count(AVAILABLE) == 1
    assert state.count(ARCHIVED) == 0  # 1-2 were at the head and are gone
    assert state.delivery_complete_count == 0
    assert state.in_flight_count == 7
    _acquire(state, "b", (0, 9), fetch_offset=3)
    _ack(state, "b", 3, 3, REJECT)
    assert state.count(ARCHIVED) == 0
    _ack(state, "a", 6, 6, REJECT)
    assert (state.count(ARCHIVED), state.delivery_complete_count) == (1, 1)
    state.expire_locks(1000)
    counters = state.counters
    assert counters.acquired == 11
    assert counters.redelivered == 1
    assert counters.acknowledged == {
        GAP: 1,
        ACCEPT: 1,
        RELEASE: 1,
        REJECT: 3,
        RENEW: 2,
    }
    assert counters.locks_expired == 5  # 4-5 renewed to 1000, 7-9 acquired at 0
