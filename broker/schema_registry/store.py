"""The ``_schemas`` partition: where the registry's state lives, as Confluent keeps it.

One compacted, one-partition topic (``kafkastore.topic``). Every broker's registry folds it
into its ``SubjectsState`` with a tail task that applies only committed records (below the
high watermark), in log order, so a write a new leader truncates away was never visible
anywhere. Writes go through ``internal_topics.append_uncommitted``, as the coordinators' do:
appended under the partition's append lock while this broker leads it, answered once the
high watermark passes them; then the writer waits until its own tail has applied what it
wrote (read-your-writes), so its next read sees it. A write that fails after its batch
reached the log is ``UncertainWrite``: it may still commit, and the writer reads the log
again before it plans another (leader.py).

The log is only read through ``Partition`` (worker threads), never ``log/`` directly. A
partition that changes under the tail (topic re-created, log truncated below what was
applied, log start moved past it) makes it rebuild the state from the log start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import trio

from kafkette.broker.internal_topics import READ_CHUNK_BYTES, append_uncommitted
from kafkette.broker.schema_registry import errors, records
from kafkette.broker.schema_registry.errors import NotLeader, UncertainWrite
from kafkette.broker.schema_registry.subjects import SubjectsState
from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header
from kafkette.wire.records import Record, build_batch, decode_batches

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import ClusterMetadata
    from kafkette.broker.partitions import Partition
    from kafkette.broker.schema_registry.config import SchemaRegistryConfig
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.schema_registry")

# With no local replica of the topic yet (a cluster still creating it), the tail looks again
# this often; a partition it tails wakes it at every append and high watermark move.
IDLE_RECHECK_S = 1.0
# A failure the tail keeps meeting (a failing disk) is logged once, then at most this often.
REPEAT_WARNING_S = 60.0
# Errors of a write that did not commit in time: the client may retry (50002).
_TIMEOUTS = {
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
}

Entry = tuple[records.Key, records.Value | None]


class SchemaStore:
    """The topic, the tail that folds it into ``state`` and the append of writes.

    ``state`` may be replaced by a rebuild: readers take ``store.state`` each time.
    """

    def __init__(self, broker: Broker, config: SchemaRegistryConfig, state: SubjectsState) -> None:
        self.broker = broker
        self.config = config
        self.topic = config.kafkastore_topic
        self.state = state
        self.applied_offset = 0  # next offset to apply
        self.generation = 0  # +1 at every rebuild: ids may name other schemas after one
        # Held by the tail while it applies and by a write planning in a worker thread
        # (which reads the state): the two never overlap.
        self.apply_lock = trio.Lock()
        self._partition: Partition | None = None
        self._applied = trio.Event()  # set (and replaced) whenever applied_offset moves
        self._wake = trio.Event()  # the tail's: set by appends, HW moves and ``poke``
        self._unknown_said = False
        self._ignored_said = 0  # ``state.ignored`` when last logged
        self._failure: tuple[str, float] | None = None  # the tail's last failure, logged when

    @property
    def timeout_s(self) -> float:
        return self.config.kafkastore_timeout_ms / 1000

    # -- the topic --------------------------------------------------------------------

    async def ensure_topic(
        self, *, create: bool = True, metadata: ClusterMetadata | None = None
    ) -> None:
        """Create the topic unless it exists (``create``), then check it: one partition,
        ``cleanup.policy=compact``, else ``StartupError``. Not created, it is left alone (a
        cluster waiting for its brokers, see ``creatable``). ``metadata``: the cluster's
        view to judge by (a listener's snapshot, newer than ``cluster.metadata``)."""
        from kafkette.broker.server import StartupError
        from kafkette.broker.topics import TopicError

        if not self.exists(metadata):
            if not create:
                return
            cluster = self.broker.cluster
            rf = 1
            if cluster is not None:
                live = max(1, len((metadata or cluster.metadata).brokers))
                rf = min(live, self.config.kafkastore_topic_replication_factor)
            try:
                await self.broker.topics.create(
                    self.topic, 1, {"cleanup.policy": "compact"}, replication_factor=rf
                )
                log.info(
                    "created %s (1 partition, replication factor %d, compacted)", self.topic, rf
                )
            except TopicError as exc:
                if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                    raise StartupError(
                        f"cannot create the schema registry's topic {self.topic}: {exc.message}"
                    ) from None
            if cluster is not None:  # made by another broker meanwhile: wait to see it
                await cluster.wait_for(lambda m: self.topic in m.topics, self.timeout_s)
            if not self.exists():
                raise StartupError(f"the schema registry's topic {self.topic} did not appear")
        self._check_topic()

    def creatable(self, metadata: ClusterMetadata | None = None) -> bool:
        """A cluster creates the topic once as many brokers as its replication factor
        are alive (else it would start under-replicated for ever); a write creates it
        anyway. ``metadata``: as for ``ensure_topic``."""
        cluster = self.broker.cluster
        if cluster is None:
            return True
        wanted = self.config.kafkastore_topic_replication_factor
        return len((metadata or cluster.metadata).brokers) >= wanted

    def has_local_copy(self) -> bool:
        """True while the tail folds a replica of the topic hosted here: this broker's
        state is then the topic's (up to the high watermark), not an empty stand-in."""
        return self._partition is not None

    def exists(self, metadata: ClusterMetadata | None = None) -> bool:
        """Whether the topic exists (in ``metadata`` when given, a cluster's newest view)."""
        cluster = self.broker.cluster
        if cluster is not None:
            return self.topic in (metadata or cluster.metadata).topics
        return self.broker.topics.metadata(self.topic) is not None

    def _check_topic(self) -> None:
        from kafkette.broker.server import StartupError

        cluster = self.broker.cluster
        if cluster is not None:
            topic = cluster.metadata.topics[self.topic]
            partitions, configs = len(topic.replicas), dict(topic.configs)
        else:
            meta = self.broker.topics.metadata(self.topic)
            assert meta is not None
            partitions, configs = meta.partitions, dict(meta.configs)
        if partitions != 1:
            raise StartupError(
                f"The schema topic {self.topic} should have only 1 partition but has {partitions}"
            )
        policy = configs.get("cleanup.policy") or self.broker.config.value_of("log.cleanup.policy")
        if policy != "compact":
            raise StartupError(
                f"The retention policy of the schema topic {self.topic} is incorrect."
                f" Expected cleanup.policy to be 'compact' but it is {policy}"
            )

    # -- the tail ---------------------------------------------------------------------

    def poke(self) -> None:
        """Have the tail look again now (the cluster's view changed)."""
        self._wake.set()

    async def run_tail(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Apply committed records for ever; ``started()`` after the first catch-up (up to
        the high watermark at start: a single node's log end)."""
        started = False
        no_replica_said = False
        while True:
            partition = self.broker.topics.partition(self.topic, 0)
            if partition is None or partition.is_closed:
                if self._partition is not None:
                    log.info("%s-0 is no longer hosted here", self.topic)
                    self._reset(None)
                if not no_replica_said and self.exists():
                    log.info(
                        "%s-0 has no replica on this broker: its schema registry forwards"
                        " reads to the leader's",
                        self.topic,
                    )
                    no_replica_said = True
                if not started:
                    task_status.started()
                    started = True
                await self._sleep_until_woken(None)
                continue
            no_replica_said = False
            if partition is not self._partition:
                self._reset(partition)
            try:
                progressed = await self._catch_up(partition)
            except Exception as exc:  # a failed disk, a log closed meanwhile: look again
                self._warn_failure(f"reading {self.topic}-0 failed: {exc!r}")
                progressed = False
                await trio.sleep(IDLE_RECHECK_S)
            if progressed:
                self._failure = None
                continue
            if not started:
                task_status.started()
                started = True
            await self._sleep_until_woken(partition)

    def _warn_failure(self, text: str) -> None:
        """Log a failure of the tail once, and again only every ``REPEAT_WARNING_S`` while
        the same one recurs (it retries every ``IDLE_RECHECK_S``)."""
        now = time.monotonic()
        if self._failure is not None and self._failure[0] == text:
            if now - self._failure[1] < REPEAT_WARNING_S:
                return
            log.warning("%s (still failing; retried every %g s)", text, IDLE_RECHECK_S)
        else:
            log.warning("%s", text)
        self._failure = (text, now)

    async def _sleep_until_woken(self, partition: Partition | None) -> None:
        event = self._wake = trio.Event()
        if partition is not None:
            partition.add_waiter(event)
            if partition.high_watermark > self.applied_offset or partition.is_closed:
                event.set()
        try:
            with trio.move_on_after(IDLE_RECHECK_S):
                await event.wait()
        finally:
            if partition is not None:
                partition.remove_waiter(event)

    def _reset(self, partition: Partition | None) -> None:
        """Start over from the log start of ``partition`` with an empty state."""
        if self._partition is not None or self.applied_offset:
            log.info("rebuilding the schema registry's state from %s-0", self.topic)
        self._partition = partition
        self.state = SubjectsState(self.config.default_level)
        self._ignored_said = 0
        self.generation += 1
        self.applied_offset = partition.log_start_offset if partition is not None else 0
        self._wake_applied()

    async def _catch_up(self, partition: Partition) -> bool:
        """Apply one chunk below the high watermark; False when there was nothing."""
        if (
            partition.log_end_offset < self.applied_offset
            or partition.log_start_offset > self.applied_offset
        ):
            self._reset(partition)  # truncated below what was applied, or records deleted
        start, high_watermark = self.applied_offset, partition.high_watermark
        if high_watermark <= start:
            return False
        entries, next_offset, unknown = await trio.to_thread.run_sync(
            _read_chunk, partition, start, high_watermark
        )
        if partition is not self._partition or self.applied_offset != start:
            return True  # reset meanwhile: read again
        if unknown and not self._unknown_said:
            self._unknown_said = True
            log.warning(
                "%s holds records this registry does not know (first at offset %d): skipped",
                self.topic,
                unknown[0],
            )
        async with self.apply_lock:
            state = self.state
            for offset, key, value in entries:
                state.apply(key, value, offset)
            self.applied_offset = next_offset
        if state.ignored > self._ignored_said:
            self._ignored_said = state.ignored
            log.warning(
                "%s: %d SCHEMA record(s) so far ignored, each giving an id already bound to"
                " another schema (the last below offset %d)",
                self.topic,
                state.ignored,
                next_offset,
            )
        self._wake_applied()
        return True

    def _wake_applied(self) -> None:
        self._applied.set()
        self._applied = trio.Event()

    async def wait_applied(self, offset: int, timeout_s: float) -> bool:
        """Until the tail has applied everything below ``offset``; False on timeout."""
        with trio.move_on_after(timeout_s):
            while self.applied_offset < offset:
                await self._applied.wait()
            return True
        return self.applied_offset >= offset

    # -- writes -----------------------------------------------------------------------

    async def append(
        self,
        entries: Sequence[Entry],
        *,
        failed: str,
        timed_out: str,
        check: Callable[[], ErrorCode] | None = None,
    ) -> int:
        """Append ``entries`` as one batch, committed, then applied here; the offset after
        it. ``check`` runs under the append lock (its error refuses the write).

        Refused before anything reached the log: ``NotLeader(None)`` (this broker does not
        lead the partition), 50002 ``timed_out`` (too few in-sync replicas), 50001
        ``failed``. Failed once the batch may be in the log: ``UncertainWrite`` (50002
        ``timed_out`` when it did not commit or apply in time, 50001 ``failed`` for a
        storage failure), or ``NotLeader(None)`` when leadership was lost meanwhile (a
        new leadership reads the log again anyway)."""
        partition = self.broker.topics.partition(self.topic, 0)
        if partition is None or partition.is_closed:
            raise NotLeader(None)
        batch_records = [
            Record(i, 0, records.encode_key(key), records.encode_value(value))
            for i, (key, value) in enumerate(entries)
        ]
        batch = bytearray(build_batch(batch_records, base_timestamp=int(time.time() * 1000)))
        deadline = trio.current_time() + self.timeout_s
        try:
            error, commit = await append_uncommitted(partition, batch, check)
        except Exception as exc:  # storage failure: part of the batch may be written
            log.warning("writing %s-0 failed: %s", self.topic, exc)
            raise UncertainWrite.of(errors.store_error(failed)) from None
        if error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
            raise NotLeader(None)
        if error in _TIMEOUTS:  # NOT_ENOUGH_REPLICAS: refused up front
            raise errors.operation_timeout(timed_out)
        if error != ErrorCode.NONE:
            log.warning("writing %s-0 failed: %s", self.topic, error.name)
            raise errors.store_error(failed)
        if commit is not None:  # a cluster: wait until the in-sync replicas have it
            try:
                error = await commit(max(0.0, deadline - trio.current_time()))
            except Exception as exc:
                log.warning("writing %s-0 failed: %s", self.topic, exc)
                raise UncertainWrite.of(errors.store_error(failed)) from None
            if error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                raise NotLeader(None)
            if error in _TIMEOUTS:
                raise UncertainWrite.of(errors.operation_timeout(timed_out))
            if error != ErrorCode.NONE:
                log.warning("writing %s-0 failed: %s", self.topic, error.name)
                raise UncertainWrite.of(errors.store_error(failed))
        end = read_header(batch).next_offset  # the log patched the base offset in
        if not await self.wait_applied(end, max(0.0, deadline - trio.current_time())):
            raise UncertainWrite.of(errors.operation_timeout(timed_out))
        return end


def _read_chunk(
    partition: Partition, start: int, high_watermark: int
) -> tuple[list[tuple[int, records.Key, records.Value | None]], int, list[int]]:
    """Decoded records in ``[start, high_watermark)`` from one read (worker thread): the
    entries, the offset to go on from, and the offsets of records skipped as unknown."""
    info = partition.read(start, READ_CHUNK_BYTES, max_offset=high_watermark)
    entries: list[tuple[int, records.Key, records.Value | None]] = []
    unknown: list[int] = []
    next_offset = start
    for header, batch in decode_batches(info.to_bytes()):
        next_offset = min(max(next_offset, header.next_offset), high_watermark)
        if header.is_control:
            continue
        for record in batch:
            offset = record.offset if record.offset is not None else -1
            if offset < start or offset >= high_watermark:
                continue
            decoded = None if record.key is None else records.decode(record.key, record.value)
            if decoded is None:
                unknown.append(offset)
                continue
            entries.append((offset, decoded[0], decoded[1]))
    if next_offset == start:
        next_offset = _past_gap(partition, start, high_watermark)
    return entries, next_offset, unknown


def _past_gap(partition: Partition, start: int, high_watermark: int) -> int:
    """Nothing was read from ``start`` below the high watermark: where to go on from.
    Compaction may have removed every record in ``[start, high_watermark)`` (then the next
    batch in the log starts at or past the high watermark, or there is none): skip the gap.
    Anything else (a batch below the high watermark that the bounded read did not return)
    is not expected: raise, and the tail reads again after a pause."""
    probe = partition.read(start, 1)  # the first batch at or after ``start``, whole
    data = probe.to_bytes()
    if not data or read_header(data).base_offset >= high_watermark:
        return high_watermark
    raise RuntimeError(
        f"{partition.topic}-0: nothing read in [{start}, {high_watermark}) though a batch"
        f" starts at {read_header(data).base_offset}"
    )
