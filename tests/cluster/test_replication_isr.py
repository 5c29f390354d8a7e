"""The leader's HW and ISR rules (broker/cluster/isr.py): pure arithmetic, no cluster."""

from __future__ import annotations

from kafkette.broker.cluster.isr import UNKNOWN_OFFSET, LeaderReplication

LAG_MS = 30000


def leader(isr=(1, 2, 3), hw=0, epoch_start=0, now=0.0) -> LeaderReplication:
    return LeaderReplication(
        leader_id=1,
        replicas=(1, 2, 3),
        isr=isr,
        leader_epoch=4,
        epoch_start_offset=epoch_start,
        high_watermark=hw,
        now_ms=now,
    )


def test_hw_is_the_smallest_leo_over_the_isr_and_waits_for_unknown_members() -> None:
    state = leader()
    assert state.followers[2].log_end_offset == UNKNOWN_OFFSET
    state.record_fetch(2, 10, leader_leo=10, now_ms=1)
    # Replica 3 has not fetched since we became leader: the HW stays.
    assert not state.advance_high_watermark(10)
    assert state.high_watermark == 0
    state.record_fetch(3, 6, leader_leo=10, now_ms=2)
    assert state.advance_high_watermark(10)
    assert state.high_watermark == 6
    state.record_fetch(3, 10, leader_leo=12, now_ms=3)
    assert state.advance_high_watermark(12)
    assert state.high_watermark == 10  # replica 2 is at 10, the leader at 12


def test_hw_never_moves_back() -> None:
    state = leader(hw=8)
    state.record_fetch(2, 5, leader_leo=10, now_ms=1)
    state.record_fetch(3, 5, leader_leo=10, now_ms=1)
    assert not state.advance_high_watermark(10)
    assert state.high_watermark == 8


def test_hw_counts_only_isr_members() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(2, 7, leader_leo=9, now_ms=1)
    state.record_fetch(3, 1, leader_leo=9, now_ms=1)  # out of the ISR: ignored
    assert state.advance_high_watermark(9)
    assert state.high_watermark == 7
    # The leader alone in the ISR: HW = its LEO.
    alone = leader(isr=(1,))
    assert alone.advance_high_watermark(5) and alone.high_watermark == 5


def test_fetch_offset_beyond_the_leader_leo_counts_as_the_leo() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(2, 50, leader_leo=9, now_ms=1)
    assert state.followers[2].log_end_offset == 9


def test_shrink_after_lag_time_unless_caught_up() -> None:
    state = leader(now=0)
    # Replica 2 keeps fetching at the leader's LEO; replica 3 fetches but stays behind.
    for t in range(0, 40001, 1000):
        state.record_fetch(2, 100, leader_leo=100 + t, now_ms=t)
        state.record_fetch(3, 1, leader_leo=100 + t, now_ms=t)
        leo = 100 + t
        state.record_fetch(2, leo, leader_leo=leo, now_ms=t)
    assert state.shrink_candidates(now_ms=LAG_MS - 1, lag_time_max_ms=LAG_MS) == ()
    assert state.shrink_candidates(now_ms=40000, lag_time_max_ms=LAG_MS) == (3,)


def test_a_silent_follower_leaves_after_the_lag_time_from_leadership() -> None:
    state = leader(now=1000)
    assert state.shrink_candidates(now_ms=1000 + LAG_MS, lag_time_max_ms=LAG_MS) == ()
    assert state.shrink_candidates(now_ms=1001 + LAG_MS, lag_time_max_ms=LAG_MS) == (2, 3)


def test_catching_up_to_the_previous_fetch_leo_counts_from_that_fetch() -> None:
    """Kafka's rule: reaching the leader LEO of the previous fetch proves the follower was
    caught up at that fetch's time, even if the leader has moved on since."""
    state = leader(now=0)
    state.record_fetch(2, 0, leader_leo=50, now_ms=20000)  # behind
    state.record_fetch(2, 50, leader_leo=80, now_ms=45000)  # reached 50: caught up at 20000
    assert state.followers[2].last_caught_up_ms == 20000
    assert state.shrink_candidates(now_ms=49000, lag_time_max_ms=LAG_MS) == (3,)
    assert state.shrink_candidates(now_ms=50001, lag_time_max_ms=LAG_MS) == (2, 3)


def test_expand_once_the_follower_reaches_hw_and_the_epoch_start() -> None:
    state = leader(isr=(1, 2), hw=20, epoch_start=25)
    state.record_fetch(2, 30, leader_leo=30, now_ms=1)
    state.advance_high_watermark(30)
    assert state.high_watermark == 30
    state.record_fetch(3, 24, leader_leo=30, now_ms=2)
    assert state.expand_candidates() == ()
    state.record_fetch(3, 29, leader_leo=30, now_ms=3)
    assert state.expand_candidates() == ()  # below HW 30
    state.record_fetch(3, 30, leader_leo=31, now_ms=4)
    assert state.expand_candidates() == (3,)


def test_assignment_update_keeps_known_followers() -> None:
    state = leader(isr=(1, 2, 3))
    state.record_fetch(2, 5, leader_leo=5, now_ms=1)
    state.set_assignment((1, 2), (1, 2), now_ms=2)
    assert set(state.followers) == {2}
    assert state.followers[2].log_end_offset == 5
    assert state.record_fetch(3, 5, leader_leo=5, now_ms=3)  # not a replica any more


def test_pending_joiners_count_for_the_hw_until_the_write_is_answered() -> None:
    # KIP-497's maximal ISR: once the expansion is sent, ZooKeeper may list replica 3
    # and elect it, so nothing it lacks may be committed meanwhile.
    state = leader(isr=(1, 2), hw=5)
    state.record_fetch(2, 20, leader_leo=20, now_ms=1)
    state.record_fetch(3, 5, leader_leo=20, now_ms=1)
    assert state.expand_candidates() == (3,)
    state.pending_joiners = (3,)
    assert state.maximal_isr == (1, 2, 3)
    assert state.expand_candidates() == ()  # already being written
    assert not state.advance_high_watermark(20)
    assert state.high_watermark == 5  # replica 3 holds only up to 5
    state.record_fetch(3, 12, leader_leo=20, now_ms=2)
    assert state.advance_high_watermark(20)
    assert state.high_watermark == 12
    # The write failed: the joiner counts no more, the HW goes on over the ISR.
    state.pending_joiners = ()
    assert state.advance_high_watermark(20)
    assert state.high_watermark == 20
