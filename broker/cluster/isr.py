"""A leader's view of its followers: high watermark and in-sync replica decisions.

Pure arithmetic over numbers the replica manager feeds in (follower fetch
offsets, the leader's log end offset, the clock), so every rule is unit-tested
without a cluster. The rules are Kafka's (ReplicaManager/Partition, KIP-101):

- A follower's log end offset (LEO) is the ``fetch_offset`` of its latest Fetch:
  asking for offset N proves it holds everything below N.
- **Caught up** (Kafka's ``lastCaughtUpTimeMs``): a fetch at or past the
  leader's LEO catches the follower up *now*; a fetch at or past the leader's LEO
  *of the previous fetch* proves it was caught up at that previous fetch's time.
  A follower in the ISR whose last caught-up time is older than
  ``replica.lag.time.max.ms`` leaves the ISR (a slow follower and a dead one
  look the same).
- **High watermark** = the smallest LEO over the ISR (the leader included); it
  never moves back. A member whose LEO is not known yet (no fetch since this
  broker became leader) holds the HW where it is.
- **Expand**: a replica outside the ISR rejoins once its LEO reaches the HW and
  the start of the current leader epoch, i.e. it fetches in this epoch and
  holds everything committed.
- **Maximal ISR** (KIP-497): while an expansion is being written, ZooKeeper may
  already list the joiner, which could then be elected; so the HW counts it from
  the moment the write starts (``pending_joiners``) until the write fails. A
  shrink keeps counting the larger, current ISR until it is written.
"""

from __future__ import annotations

from dataclasses import dataclass

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower since it became leader."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: float = 0.0
    last_fetch_ms: float = 0.0
    last_fetch_leader_leo: int = UNKNOWN_OFFSET


class LeaderReplication:
    """HW and ISR bookkeeping of one partition this broker leads, in one leader epoch."""

    def __init__(
        self,
        leader_id: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        leader_epoch: int,
        epoch_start_offset: int,
        high_watermark: int,
        now_ms: float,
    ) -> None:
        self.leader_id = leader_id
        self.leader_epoch = leader_epoch
        self.epoch_start_offset = epoch_start_offset
        self.high_watermark = high_watermark
        self.replicas = replicas
        self.isr: tuple[int, ...] = isr
        # Joiners of an ISR expansion being written: they count for the HW already.
        self.pending_joiners: tuple[int, ...] = ()
        # Members of the ISR get a full lag period from the moment we lead before
        # they can be judged slow, as Kafka resets lastCaughtUpTime on leadership.
        self.followers: dict[int, FollowerState] = {
            r: FollowerState(last_caught_up_ms=now_ms, last_fetch_ms=now_ms)
            for r in replicas
            if r != leader_id
        }

    def set_assignment(
        self, replicas: tuple[int, ...], isr: tuple[int, ...], now_ms: float
    ) -> None:
        """A newer snapshot of the same epoch (ISR written by us or replicas added)."""
        self.replicas = replicas
        self.isr = isr
        for r in replicas:
            if r != self.leader_id and r not in self.followers:
                self.followers[r] = FollowerState(last_caught_up_ms=now_ms, last_fetch_ms=now_ms)
        for r in list(self.followers):
            if r not in replicas:
                del self.followers[r]

    def record_fetch(
        self, replica_id: int, fetch_offset: int, leader_leo: int, now_ms: float
    ) -> bool:
        """A follower fetched from ``fetch_offset``. True if it is not a replica here."""
        state = self.followers.get(replica_id)
        if state is None:
            return True
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = now_ms
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = min(fetch_offset, leader_leo)
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now_ms
        return False

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR plus the joiners of a pending expansion: the replicas ZooKeeper may
        list as in sync right now, hence those the HW must wait for."""
        return (*self.isr, *(r for r in self.pending_joiners if r not in self.isr))

    def advance_high_watermark(self, leader_leo: int) -> bool:
        """Recompute the HW from the maximal ISR's LEOs; True if it moved (only up)."""
        low = leader_leo
        for r in self.maximal_isr:
            if r == self.leader_id:
                continue
            state = self.followers.get(r)
            if state is None or state.log_end_offset == UNKNOWN_OFFSET:
                return False
            low = min(low, state.log_end_offset)
        if low > self.high_watermark:
            self.high_watermark = low
            return True
        return False

    def expand_candidates(self) -> tuple[int, ...]:
        """Replicas outside the ISR that hold everything committed in this epoch."""
        return tuple(
            r
            for r, state in self.followers.items()
            if r not in self.isr
            and r not in self.pending_joiners
            and state.log_end_offset >= self.high_watermark
            and state.log_end_offset >= self.epoch_start_offset
        )

    def shrink_candidates(self, now_ms: float, lag_time_max_ms: float) -> tuple[int, ...]:
        """ISR members (not the leader) not caught up within ``replica.lag.time.max.ms``."""
        return tuple(
            r
            for r in self.isr
            if r != self.leader_id
            and (state := self.followers.get(r)) is not None
            and now_ms - state.last_caught_up_ms > lag_time_max_ms
        )
