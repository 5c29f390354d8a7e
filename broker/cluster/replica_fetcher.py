"""The follower side of replication: one task per leader broker, fetching its partitions.

A follower is a Fetch client of its leader, as in Kafka: ``replica_id`` = this
broker's id (Fetch v12 still carries the field), ``fetch_offset`` = the local
log end offset (LEO). Each answer goes to the partition (``Partition.follow``,
``broker/partitions/follower.py``): the leader's batches are appended as they
are, same offsets and leader epochs, and the local high watermark becomes
min(leader HW, own LEO). Truncations go through the partition too
(``Partition.truncate_to`` / ``restart_at``), in order with its appends.

Before fetching in a new leader epoch the follower truncates (KIP-101,
KIP-279): it asks the leader OffsetForLeaderEpoch (v3, ``replica_id`` = own
id) for its latest epoch and cuts its log at min(leader's end offset, its own
end of the epoch the leader answered), so a tail the old leader never
replicated cannot survive beside the new leader's records. When its own
answer is an older epoch than the leader's (it never had the leader's epoch),
it cuts at its own end of that older epoch and asks again, until both answer
the same epoch. A follower with no epoch recorded falls back to its high
watermark, as Kafka does.

Errors: FENCED_LEADER_EPOCH means the metadata here is stale: the partition
waits for the replica manager to hand it over again with the next snapshot.
Anything else (connection, UNKNOWN_LEADER_EPOCH or NOT_LEADER_OR_FOLLOWER: the
leader has not applied the snapshot that makes it leader yet) is retried after
``replica.fetch.backoff.ms``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.cluster.peer_client import PeerClient, PeerError, PeerSecurity
from kafkette.broker.partitions import Partition
from kafkette.broker.throttled_log import ThrottledLog
from kafkette.log.errors import OffsetMismatch
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import InvalidBatchError

if TYPE_CHECKING:
    from kafkette.broker.cluster.config import ClusterConfig

log = logging.getLogger("kafkette.replica_fetcher")

FETCH_VERSION = 12
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
# Our epoch is older than the leader's: only newer metadata can help.
_STALE_METADATA = (ErrorCode.FENCED_LEADER_EPOCH,)


@dataclass(slots=True)
class FollowerPartition:
    """One partition this broker follows, in one leader epoch."""

    partition: Partition
    leader_epoch: int
    truncated: bool = False  # OffsetForLeaderEpoch done for this epoch
    paused: bool = False  # the leader said our metadata is stale: wait for the next

    @property
    def key(self) -> tuple[str, int]:
        return (self.partition.topic, self.partition.index)


def truncation_step(
    leader_epoch: int, leader_end: int, own_epoch: int, own_end: int, log_end_offset: int
) -> tuple[int, bool]:
    """(offset to truncate to, done) for one OffsetForLeaderEpoch answer (KIP-279).

    ``leader_epoch``/``leader_end``: the leader's answer (defined); ``own_epoch``/
    ``own_end``: this log's ``end_offset_for_epoch(leader_epoch)``. When this log
    does not know the leader's epoch (its answer is an older one), its records from
    ``own_end`` on may differ from the leader's even below ``leader_end``: cut there
    and ask again (not done) with the now latest, older epoch, until both sides
    answer the same epoch, as Kafka's getOffsetTruncationState does.
    """
    if own_end < 0:  # no epoch known here at all: the leader's end is all there is
        return min(leader_end, log_end_offset), True
    if own_epoch != leader_epoch:
        return min(own_end, log_end_offset), False
    return min(leader_end, own_end, log_end_offset), True


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader broker."""

    def __init__(
        self,
        leader_id: int,
        host: str,
        port: int,
        own_id: int,
        config: ClusterConfig,
        on_append: Callable[[Partition], None],
        *,
        security: PeerSecurity,
    ) -> None:
        """``security``: how to reach the leader's inter-broker listener
        (``Broker.peer_security``)."""
        self.leader_id = leader_id
        self.address = (host, port)
        self._own_id = own_id
        self._config = config
        self._on_append = on_append
        self._partitions: dict[tuple[str, int], FollowerPartition] = {}
        self._changed = trio.Event()
        self._client = PeerClient(
            host,
            port,
            f"replica-fetcher-{own_id}",
            config.replica_fetch_response_max_bytes * 2,
            security,
        )
        self._errors = ThrottledLog(log, interval_s=10.0)

    # --- what the replica manager calls -------------------------------------------

    def assign(self, partition: Partition, leader_epoch: int) -> None:
        """Follow ``partition`` in ``leader_epoch`` (a new epoch truncates again)."""
        key = (partition.topic, partition.index)
        current = self._partitions.get(key)
        if current is not None and current.partition is partition:
            if current.leader_epoch == leader_epoch:
                return
        self._partitions[key] = FollowerPartition(partition, leader_epoch)
        self._wake()

    def remove(self, key: tuple[str, int]) -> None:
        if self._partitions.pop(key, None) is not None:
            self._wake()

    def keys(self) -> list[tuple[str, int]]:
        return list(self._partitions)

    def _warn(self, kind: str, message: str, *args: object) -> None:
        """One line per kind of trouble per 10 s: a dead leader is retried every backoff."""
        self._errors.log((self.leader_id, kind), logging.WARNING, message % args)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    # --- the loop ------------------------------------------------------------------

    async def run(self) -> None:
        backoff = self._config.replica_fetch_backoff_ms / 1000
        try:
            while True:
                active = [s for s in self._partitions.values() if not s.paused]
                if not active:
                    await self._changed.wait()
                    continue
                try:
                    need = [s for s in active if not s.truncated]
                    if need:
                        await self._truncate(need)
                    ready = [s for s in active if s.truncated and not s.paused]
                    if ready:
                        await self._fetch(ready)
                    elif need:
                        await self._sleep_unless_changed(backoff)
                except (PeerError, trio.TooSlowError) as exc:
                    self._warn(
                        "fetch", "replica fetch from broker %d failed: %s", self.leader_id, exc
                    )
                    await trio.sleep(backoff)
        finally:
            await self._client.aclose()

    async def _sleep_unless_changed(self, seconds: float) -> None:
        with trio.move_on_after(seconds):
            await self._changed.wait()

    def _timeout(self) -> float:
        return (
            self._config.replica_socket_timeout_ms + self._config.replica_fetch_wait_max_ms
        ) / 1000

    async def _truncate(self, states: list[FollowerPartition]) -> None:
        """OffsetForLeaderEpoch for the partitions entering a new epoch, then truncate,
        asking again at once while a round left a partition on an older epoch."""
        while states:
            states = await self._truncate_round(states)

    async def _truncate_round(self, states: list[FollowerPartition]) -> list[FollowerPartition]:
        """One OffsetForLeaderEpoch round; returns the partitions to ask again."""
        again: list[FollowerPartition] = []
        asks: dict[tuple[str, int], tuple[FollowerPartition, int]] = {}
        for state in states:
            partition = state.partition
            latest = partition.latest_epoch
            if latest < 0:
                # No epoch recorded (an empty log): Kafka's fallback is the high watermark.
                await self._truncate_to(state, state.leader_epoch, partition.high_watermark)
                state.truncated = True
            else:
                asks[state.key] = (state, latest)
        if not asks:
            return again
        topics: dict[str, list[dict]] = {}
        for (topic, index), (state, latest) in asks.items():
            topics.setdefault(topic, []).append(
                {
                    "partition": index,
                    "current_leader_epoch": state.leader_epoch,
                    "leader_epoch": latest,
                }
            )
        body = {
            "replica_id": self._own_id,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        }
        epochs = {key: state.leader_epoch for key, (state, _) in asks.items()}
        with trio.fail_after(self._timeout()):
            response = await self._client.request(
                ApiKey.OFFSET_FOR_LEADER_EPOCH, OFFSET_FOR_LEADER_EPOCH_VERSION, body
            )
        for topic in response.body["topics"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition"])
                state = self._current(key, epochs)
                if state is None:
                    continue
                error = ErrorCode(answer["error_code"])
                if error in _STALE_METADATA:
                    state.paused = True
                    continue
                if error != ErrorCode.NONE:
                    self._warn(
                        "epoch",
                        "OffsetForLeaderEpoch of %s-%d from broker %d: %s",
                        key[0],
                        key[1],
                        self.leader_id,
                        error.name,
                    )
                    continue
                partition = state.partition
                done = True
                if answer["end_offset"] < 0:
                    target = partition.high_watermark
                else:
                    own_epoch, own_end = partition.own_end_offset_for_epoch(answer["leader_epoch"])
                    target, done = truncation_step(
                        answer["leader_epoch"],
                        answer["end_offset"],
                        own_epoch,
                        own_end,
                        partition.log_end_offset,
                    )
                await self._truncate_to(state, state.leader_epoch, target)
                if self._current(key, epochs) is not state:
                    continue
                if done:
                    state.truncated = True
                elif partition.latest_epoch < asks[key][1]:
                    again.append(state)  # an older epoch to ask about now
                # else no progress (cannot happen with a sound leader): the loop retries
                # after its backoff.
        return again

    def _current(
        self, key: tuple[str, int], epochs: dict[tuple[str, int], int]
    ) -> FollowerPartition | None:
        """The state of ``key`` if still followed in the epoch the request was sent in."""
        state = self._partitions.get(key)
        if state is None or state.leader_epoch != epochs.get(key):
            return None
        return state

    async def _truncate_to(self, state: FollowerPartition, epoch: int, offset: int) -> None:
        partition = state.partition

        def still_wanted() -> bool:
            return self._partitions.get(state.key) is state and state.leader_epoch == epoch

        leo = await partition.truncate_to(offset, still_wanted)
        if leo is not None and offset < leo:
            log.info(
                "truncating %s-%d from %d to %d (leader epoch %d, leader %d)",
                partition.topic,
                partition.index,
                leo,
                offset,
                epoch,
                self.leader_id,
            )

    async def _restart_at(self, state: FollowerPartition, fetched_at: int, offset: int) -> bool:
        """Kafka's ``truncateFullyAndStartAt`` on a follower that fetched below the
        leader's log start (if the log moved meanwhile, the next fetch asks again)."""
        partition = state.partition
        if await partition.restart_at(
            offset, fetched_at, lambda: self._partitions.get(state.key) is state
        ):
            log.info(
                "%s-%d: fetch offset %d is below the log start %d of leader %d:"
                " restarting the local log empty at %d",
                partition.topic, partition.index, fetched_at, offset, self.leader_id, offset,
            )
        return True

    async def _fetch(self, states: list[FollowerPartition]) -> None:
        config = self._config
        topics: dict[str, list[dict]] = {}
        offsets: dict[tuple[str, int], int] = {}
        epochs: dict[tuple[str, int], int] = {}
        for state in states:
            partition = state.partition
            leo = partition.log_end_offset
            offsets[state.key] = leo
            epochs[state.key] = state.leader_epoch
            topics.setdefault(partition.topic, []).append(
                {
                    "partition": partition.index,
                    "current_leader_epoch": state.leader_epoch,
                    "fetch_offset": leo,
                    "last_fetched_epoch": partition.latest_epoch,
                    "log_start_offset": partition.log_start_offset,
                    "partition_max_bytes": config.replica_fetch_max_bytes,
                }
            )
        body = {
            "replica_id": self._own_id,
            "max_wait_ms": config.replica_fetch_wait_max_ms,
            "min_bytes": config.replica_fetch_min_bytes,
            "max_bytes": config.replica_fetch_response_max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        }
        with trio.fail_after(self._timeout()):
            response = await self._client.request(ApiKey.FETCH, FETCH_VERSION, body)
        top_error = response.body["error_code"]
        if top_error:
            self._warn(
                "fetch-top", "replica fetch from broker %d: error %d", self.leader_id, top_error
            )
            await trio.sleep(config.replica_fetch_backoff_ms / 1000)
            return
        backoff = False
        for topic in response.body["responses"]:
            for answer in topic["partitions"]:
                key = (topic["topic"], answer["partition_index"])
                state = self._current(key, epochs)
                if state is None:
                    continue
                if not await self._handle_answer(state, answer, offsets[key]):
                    backoff = True
        if backoff:
            await self._sleep_unless_changed(config.replica_fetch_backoff_ms / 1000)

    async def _handle_answer(self, state: FollowerPartition, answer: dict, fetched_at: int) -> bool:
        """Apply one partition's answer; False if the fetcher should back off."""
        partition = state.partition
        error = ErrorCode(answer["error_code"])
        if error in _STALE_METADATA:
            state.paused = True
            return True
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            leader_start = answer["log_start_offset"]
            if 0 <= fetched_at < leader_start:
                # Below the leader's log start (a new replica, or one away while retention
                # or DeleteRecords moved it): everything it holds is gone on the leader.
                # Kafka's follower restarts its log empty at the leader's log start.
                return await self._restart_at(state, fetched_at, leader_start)
            self._warn(
                "range",
                "replica fetch of %s-%d at %d out of range on broker %d (its log starts at %d)",
                partition.topic,
                partition.index,
                fetched_at,
                self.leader_id,
                answer["log_start_offset"],
            )
            state.truncated = False  # ask the leader again where our logs agree
            return False
        if error != ErrorCode.NONE:
            self._warn(
                "partition",
                "replica fetch of %s-%d from broker %d: %s",
                partition.topic,
                partition.index,
                self.leader_id,
                error.name,
            )
            return False
        copied = await partition.follow(
            fetched_at,
            lambda: self._partitions.get(state.key) is state,
            answer["records"],
            answer["high_watermark"],
            answer["log_start_offset"],
        )
        if copied is None:
            return True  # no longer followed, or truncated meanwhile: the next fetch asks
        where = f"{partition.topic}-{partition.index}"
        if isinstance(copied.failure, InvalidBatchError):
            self._warn(
                "bytes",
                "replica fetch of %s: bad batch from broker %d: %s",
                where,
                self.leader_id,
                copied.failure,
            )
        elif isinstance(copied.failure, OffsetMismatch):  # our log moved under us: ask again
            log.warning("follower append to %s refused: %s", where, copied.failure)
            state.truncated = False
        elif copied.failure is not None:  # corrupt bytes, full disk: retry later
            self._warn("append", "follower append to %s failed: %r", where, copied.failure)
        if copied.failure is not None:
            return False
        if copied.start_failure is not None:
            self._warn(
                "start",
                "moving the log start of %s to %d failed: %r",
                where,
                copied.start,
                copied.start_failure,
            )
        if copied.appended:
            self._on_append(partition)
        return True
