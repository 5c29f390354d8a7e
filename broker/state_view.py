"""A narrow, read-only view of one broker's state, for metrics and the web console.

Neither the Prometheus collectors nor the console may reach into the broker's
objects: they take a ``BrokerStateView`` and get frozen snapshots back (plain
dataclasses of ints and strings), so nothing they do can change a log, a group or a
partition, and the broker's internals can move without breaking them.

Every method is called on the event loop (the broker's objects are not
thread-safe). Summaries read in-memory state only and are cheap enough to call at
every scrape; ``read_records`` and ``offset_for_timestamp`` touch disk and so run the
read in a worker thread (under the caller's ``trio.CapacityLimiter``, so a console never
queues in front of the broker's own disk work), and bound what they decode.
Writing (the console's "produce a record") does not go through this view: the
console produces as any client does, over the broker's own listener.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette import __version__
from kafkette.broker.groups.subscription import CONSUMER_PROTOCOL_TYPE
from kafkette.broker.internal_topics import INTERNAL_TOPICS
from kafkette.log.errors import LogClosed, OffsetOutOfRange
from kafkette.wire.record_batch import batch_size_at
from kafkette.wire.records import decode_batch

if TYPE_CHECKING:
    from kafkette.broker.partitions import Partition
    from kafkette.broker.schema_registry.subjects import SubjectsState
    from kafkette.broker.server import Broker

# How many bytes one look at a partition reads at most (the browser shows a page).
READ_CHUNK_BYTES = 1024 * 1024
MAX_RECORDS = 500
# Decoded bytes (keys, values, headers) one look returns at most: a compressed batch can
# decompress to tens of MiB, and the console shows a page, not a dump. At least one
# record is always returned, however large, so a page never gets stuck on it.
MAX_DECODED_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BrokerSummary:
    node_id: int
    cluster_id: str
    version: str
    advertised: str
    data_dir: str
    started_at_ms: int
    uptime_s: float
    topics: int
    partitions: int
    connections: int
    requests_in_flight: int
    clustered: bool  # zookeeper.connect is set


@dataclass(frozen=True, slots=True)
class PartitionSummary:
    topic: str
    partition: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    size_bytes: int
    segments: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    producers: int  # producer ids in the partition's producer table
    bytes_in: int
    records_in: int
    bytes_out: int
    records_out: int


@dataclass(frozen=True, slots=True)
class TopicSummary:
    name: str
    topic_id: str
    internal: bool
    partition_count: int
    partitions: tuple[PartitionSummary, ...]  # the ones with a log on this broker
    configs: Mapping[str, str]  # the topic's own settings (defaults are not listed)

    @property
    def size_bytes(self) -> int:
        return sum(p.size_bytes for p in self.partitions)

    @property
    def records(self) -> int:
        """Offsets between log start and log end, summed (records, markers included)."""
        return sum(p.log_end_offset - p.log_start_offset for p in self.partitions)


@dataclass(frozen=True, slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[tuple[str, int], ...]  # (topic, partition), consumer groups only


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One row of ``kafka-consumer-groups.sh --describe``: LOG-END-OFFSET is the high
    watermark (what ListOffsets latest answers), LAG is it minus CURRENT-OFFSET."""

    topic: str
    partition: int
    committed_offset: int | None  # None: nothing committed
    log_end_offset: int | None  # None: the partition is not on this broker
    lag: int | None
    member_id: str | None
    client_id: str | None
    client_host: str | None


@dataclass(frozen=True, slots=True)
class GroupSummary:
    group_id: str
    state: str  # Kafka's names: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str
    members: tuple[MemberSummary, ...]
    lag: tuple[PartitionLag, ...]  # committed or assigned partitions, sorted

    @property
    def total_lag(self) -> int:
        return sum(row.lag for row in self.lag if row.lag is not None)


@dataclass(frozen=True, slots=True)
class SharePartitionState:
    """One share partition (KIP-932) of a share group on this broker: where delivery
    starts and what is in flight. ``in_flight`` counts the offsets from the start offset to
    the last one acquired, whatever their state; the four states split them. ``lag`` is
    Kafka's (DescribeShareGroupOffsets v1): high watermark - start offset - delivery
    complete. ``loaded`` is False for a share partition no fetch has opened since the
    broker started: its figures are as stored in ``__share_group_state``, and what was
    acquired then counts as available (it is delivered again)."""

    topic: str
    partition: int
    start_offset: int
    in_flight: int
    acquired: int
    available: int
    acknowledged: int
    archived: int
    delivery_complete: int  # acknowledged or archived, at or above the start offset
    lag: int | None  # None: the partition is not on this broker
    loaded: bool


@dataclass(frozen=True, slots=True)
class ShareGroupSummary:
    """A share group (KIP-932): membership from the group coordinator, delivery state from
    the share partitions this broker leads (``broker.share_partitions_started``)."""

    group_id: str
    state: str  # Kafka's names: Empty, Stable
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[MemberSummary, ...]  # assignment: (topic, partition), sorted
    partitions: tuple[SharePartitionState, ...]  # sorted by topic and partition

    @property
    def in_flight(self) -> int:
        return sum(p.in_flight for p in self.partitions)

    @property
    def total_lag(self) -> int:
        return sum(p.lag for p in self.partitions if p.lag is not None)


@dataclass(frozen=True, slots=True)
class RecordView:
    partition: int
    offset: int
    timestamp: int
    timestamp_type: str  # "CreateTime" or "LogAppendTime"
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    transactional: bool


@dataclass(frozen=True, slots=True)
class SchemaRegistrySummary:
    """The broker's schema registry at a glance (``Broker.schema_registry``)."""

    url: str  # this broker's registry, as advertised
    is_leader: bool  # this broker takes the writes (it leads ``_schemas``-0)
    leader_url: str | None  # the registry that takes the writes; None: no leader known
    subjects: int  # subjects with a live version
    schemas: int  # distinct ids stored, soft-deleted versions' too
    max_id: int
    mode: str  # global: READWRITE, READONLY, READONLY_OVERRIDE or IMPORT
    compatibility: str  # the global level


@dataclass(frozen=True, slots=True)
class SchemaSubjectSummary:
    """A subject with a live version: its live versions, and the latest one's type and id."""

    subject: str
    schema_type: str  # AVRO, JSON or PROTOBUF (the latest version's)
    versions: tuple[int, ...]  # live versions, ascending
    latest_id: int
    compatibility: str  # the level that applies: the subject's own, else the global one
    compatibility_own: bool  # the subject has a level of its own


@dataclass(frozen=True, slots=True)
class SchemaReferenceView:
    name: str  # an Avro full name, a JSON Schema $ref, a Protobuf import path
    subject: str
    version: int


@dataclass(frozen=True, slots=True)
class SchemaVersionView:
    """One live version of a subject: its schema text as stored (canonical), its references
    and which live subject-versions reference it."""

    subject: str
    version: int
    id: int
    schema_type: str
    text: str
    references: tuple[SchemaReferenceView, ...]
    referenced_by: tuple[tuple[str, int], ...]  # (subject, version), sorted


@dataclass(frozen=True, slots=True)
class SchemaRegistryCounters:
    """The registry's HTTP requests since the broker started (``RegistryStats``)."""

    requests: tuple[tuple[str, str, int, int], ...]  # (method, endpoint, status, count)
    errors: tuple[tuple[int, int], ...]  # (Confluent error code, count)
    seconds: tuple[tuple[str, float], ...]  # (endpoint, seconds summed)


class UnknownPartition(LookupError):
    """The topic or partition is not on this broker."""


class BrokerStateView:
    """Read-only snapshots of a running ``Broker`` (create once it has started)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self._started_monotonic = time.monotonic()
        self._started_at_ms = int(time.time() * 1000)

    # Broker ----------------------------------------------------------------------

    def broker(self) -> BrokerSummary:
        b = self._broker
        return BrokerSummary(
            node_id=b.node_id,
            cluster_id=b.cluster_id,
            version=__version__,
            advertised=str(b.advertised),
            data_dir=str(b.config.data_dir),
            started_at_ms=self._started_at_ms,
            uptime_s=time.monotonic() - self._started_monotonic,
            topics=len(b.topics.names),
            partitions=len(b.topics.all_partitions()),
            connections=b.connection_limits.open,
            requests_in_flight=b.requests_in_flight,
            clustered=b.cluster is not None,
        )

    # Topics ------------------------------------------------------------------------

    def topic_names(self) -> list[str]:
        return sorted(self._broker.topics.names)

    def topics(self) -> list[TopicSummary]:
        return [t for name in self.topic_names() if (t := self.topic(name)) is not None]

    def topic(self, name: str) -> TopicSummary | None:
        registry = self._broker.topics
        meta = registry.metadata(name)
        if meta is None:
            return None
        return TopicSummary(
            name=name,
            topic_id=str(meta.topic_id),
            internal=name in INTERNAL_TOPICS,
            partition_count=meta.partitions,
            partitions=tuple(self._partition(p) for p in registry.partitions(name)),
            configs=dict(meta.configs),
        )

    def partitions(self) -> list[PartitionSummary]:
        """Every partition with a log on this broker (what a metrics scrape walks)."""
        return [self._partition(p) for p in self._broker.topics.all_partitions()]

    def _partition(self, partition: Partition) -> PartitionSummary:
        node = self._broker.node_id
        leader, replicas, isr = node, (node,), (node,)
        cluster = self._broker.cluster
        if cluster is not None:
            metadata = cluster.metadata
            leader = metadata.leader_of(partition.topic, partition.index)
            topic = metadata.topics.get(partition.topic)
            replicas = tuple(topic.replicas.get(partition.index, ())) if topic else ()
            state = metadata.state(partition.topic, partition.index)
            isr = tuple(state.isr) if state is not None else ()
        return PartitionSummary(
            topic=partition.topic,
            partition=partition.index,
            log_start_offset=partition.log_start_offset,
            log_end_offset=partition.log_end_offset,
            high_watermark=partition.high_watermark,
            last_stable_offset=partition.last_stable_offset,
            size_bytes=partition.size_bytes,
            segments=partition.segment_count,
            leader=leader,
            replicas=replicas,
            isr=isr,
            producers=partition.producer_count,
            bytes_in=partition.bytes_in,
            records_in=partition.records_in,
            bytes_out=partition.bytes_out,
            records_out=partition.records_out,
        )

    # Records -----------------------------------------------------------------------

    async def offset_for_timestamp(
        self,
        topic: str,
        partition: int,
        timestamp_ms: int,
        *,
        limiter: trio.CapacityLimiter | None = None,
    ) -> int:
        """The first offset whose record has a timestamp at or after ``timestamp_ms``
        (the log end offset when none has), as ListOffsets by timestamp finds it
        (``Partition.first_offset_since``, in a worker thread). Raises UnknownPartition."""
        hosted = self._hosted(topic, partition)
        try:
            return await trio.to_thread.run_sync(
                hosted.first_offset_since, timestamp_ms, limiter=limiter
            )
        except LogClosed:
            raise UnknownPartition(f"{topic}-{partition} is not on this broker") from None

    async def read_records(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_records: int = 50,
        *,
        limiter: trio.CapacityLimiter | None = None,
        max_bytes: int = MAX_DECODED_BYTES,
    ) -> list[RecordView]:
        """Up to ``max_records`` records from ``offset`` on (clamped into the log's
        range), below the high watermark, as a read_uncommitted consumer sees them, and
        no more than about ``max_bytes`` of keys, values and headers (at least one
        record). Control records (transaction markers) are left out. Raises
        UnknownPartition (also when the log is closed under the read)."""
        hosted = self._hosted(topic, partition)
        limit = max(1, min(max_records, MAX_RECORDS))

        def read() -> list[RecordView]:
            start = min(max(offset, hosted.log_start_offset), hosted.high_watermark)
            found: list[RecordView] = []
            budget = max_bytes
            position = start
            while len(found) < limit and budget > 0 and position < hosted.high_watermark:
                try:
                    data = hosted.read(position, READ_CHUNK_BYTES, hosted.high_watermark).to_bytes()
                except OffsetOutOfRange:
                    break  # retention moved the start under us: show what we have
                if not data:
                    break
                cursor = 0
                while len(found) < limit and budget > 0:
                    size = batch_size_at(data, cursor)
                    if size is None or cursor + size > len(data):
                        break
                    header, records = decode_batch(data, cursor, check_crc=False)
                    cursor += size
                    position = header.base_offset + header.last_offset_delta + 1
                    if header.is_control:
                        continue
                    append_time = "LogAppendTime" if header.is_log_append_time else "CreateTime"
                    for record in records:
                        if record.offset is None or record.offset < start:
                            continue
                        headers = tuple(record.headers)
                        found.append(
                            RecordView(
                                partition=partition,
                                offset=record.offset,
                                timestamp=-1 if record.timestamp is None else record.timestamp,
                                timestamp_type=append_time,
                                key=record.key,
                                value=record.value,
                                headers=headers,
                                transactional=header.is_transactional,
                            )
                        )
                        budget -= _decoded_size(record.key, record.value, headers)
                        if len(found) == limit or budget <= 0:
                            break
                if cursor == 0:
                    break  # nothing whole was read: never loop on the same offset
            return found

        try:
            return await trio.to_thread.run_sync(read, limiter=limiter)
        except LogClosed:
            raise UnknownPartition(f"{topic}-{partition} is not on this broker") from None

    def _hosted(self, topic: str, partition: int) -> Partition:
        found = self._broker.topics.partition(topic, partition)
        if found is None:
            raise UnknownPartition(f"{topic}-{partition} is not on this broker")
        return found

    # Groups ------------------------------------------------------------------------

    def group_ids(self) -> list[str]:
        state = self._broker.groups.state
        return sorted(g.group_id for g in state.classic.list_groups())

    def groups(self) -> list[GroupSummary]:
        known = self._known_group_ids()  # once, not once per group
        return [self._group(gid) for gid in sorted(known)]

    def group(self, group_id: str) -> GroupSummary | None:
        """A group's state, members with their assignments, and lag per partition
        (committed and assigned partitions, as ``kafka-consumer-groups.sh`` lists them)."""
        if group_id not in self._known_group_ids():
            return None
        return self._group(group_id)

    def _known_group_ids(self) -> set[str]:
        return {g.group_id for g in self._broker.groups.state.classic.list_groups()}

    def _group(self, group_id: str) -> GroupSummary:
        state = self._broker.groups.state
        (description,) = state.classic.describe_groups([group_id])
        members = tuple(
            MemberSummary(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                assignment=_assigned_partitions(m.assignment)
                if description.protocol_type == CONSUMER_PROTOCOL_TYPE
                else (),
            )
            for m in description.members
        )
        committed = {
            (tp[0], tp[1]): fetched.offset
            for tp, fetched in state.offsets.fetch_offsets(group_id, None).partitions.items()
            if fetched.offset >= 0
        }
        owner = {tp: m for m in members for tp in m.assignment}
        rows = []
        for topic, index in sorted(set(committed) | set(owner)):
            found = self._broker.topics.partition(topic, index)
            end = found.high_watermark if found is not None else None
            offset = committed.get((topic, index))
            member = owner.get((topic, index))
            rows.append(
                PartitionLag(
                    topic=topic,
                    partition=index,
                    committed_offset=offset,
                    log_end_offset=end,
                    lag=end - offset if end is not None and offset is not None else None,
                    member_id=member.member_id if member else None,
                    client_id=member.client_id if member else None,
                    client_host=member.client_host if member else None,
                )
            )
        return GroupSummary(
            group_id=group_id,
            state=description.state,
            protocol_type=description.protocol_type,
            protocol=description.protocol,
            members=members,
            lag=tuple(rows),
        )

    def share_delivery_totals(self) -> dict[str, int] | None:
        """The share partitions' delivery counters summed (``SharePartitionManager.
        counter_totals``), or None while no share group was served (nothing to report)."""
        manager = self._broker.share_partitions_started
        return None if manager is None else manager.counter_totals()

    # Share groups (KIP-932) ---------------------------------------------------------------

    def share_group_ids(self) -> list[str]:
        groups = self._broker.groups.state.share_groups_started
        return sorted(groups.groups) if groups is not None else []

    def share_groups(self) -> list[ShareGroupSummary]:
        return [s for gid in self.share_group_ids() if (s := self.share_group(gid)) is not None]

    def share_group(self, group_id: str) -> ShareGroupSummary | None:
        """A share group's members and assignments, and per share partition its start
        offset, in-flight records by state and delivery-complete count; None if there is no
        share group ``group_id``. Reads the group coordinator's share groups and the share
        partition manager only if share-group requests made them, and changes neither."""
        groups = self._broker.groups.state.share_groups_started
        group = groups.groups.get(group_id) if groups is not None else None
        if group is None:
            return None
        members = tuple(
            MemberSummary(
                member_id=m.member_id,
                group_instance_id=None,
                client_id=m.client_id,
                client_host=m.client_host,
                assignment=self._named(
                    (tid, p) for tid, parts in m.assigned.items() for p in parts
                ),
            )
            for m in group.members.values()
        )
        return ShareGroupSummary(
            group_id=group_id,
            state=group.state,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor=groups.assignor_name,
            members=members,
            partitions=self._share_partitions(group_id),
        )

    def _named(self, partitions: Iterable[tuple[uuid.UUID, int]]) -> tuple[tuple[str, int], ...]:
        """(topic name, partition) of (topic id, partition); unknown ids are left out."""
        out = []
        for tid, index in partitions:
            meta = self._broker.topics.by_id(tid)
            if meta is not None:
                out.append((meta.name, index))
        return tuple(sorted(out))

    def _share_partitions(self, group_id: str) -> tuple[SharePartitionState, ...]:
        manager = self._broker.share_partitions_started
        if manager is None:
            return ()
        from kafkette.broker.share_groups.delivery_state import RecordState

        rows: dict[tuple[uuid.UUID, int], SharePartitionState] = {}
        for (tid, index), stored in manager.stored_states_of(group_id).items():
            counts = dict.fromkeys(RecordState, 0)
            for first, last, state, _count in stored.batches:
                if state in counts and last >= stored.start_offset:
                    counts[state] += last - max(first, stored.start_offset) + 1
            complete = stored.delivery_complete_count
            if complete < 0:  # written before KIP-1226: count the finished batches
                complete = counts[RecordState.ACKNOWLEDGED] + counts[RecordState.ARCHIVED]
            rows[(tid, index)] = self._share_row(
                tid, index, stored.start_offset, sum(counts.values()), counts, complete, False
            )
        for (tid, index), delivery in manager.deliveries_of(group_id).items():
            counts = {state: delivery.count(state) for state in RecordState}
            rows[(tid, index)] = self._share_row(
                tid,
                index,
                delivery.start_offset,
                delivery.in_flight_count,
                counts,
                delivery.delivery_complete_count,
                True,
            )
        return tuple(sorted((r for r in rows.values() if r.topic), key=_topic_partition))

    def _share_row(
        self,
        tid: uuid.UUID,
        index: int,
        start: int,
        in_flight: int,
        counts: Mapping[int, int],
        complete: int,
        loaded: bool,
    ) -> SharePartitionState:
        from kafkette.broker.share_groups.delivery_state import RecordState

        meta = self._broker.topics.by_id(tid)
        name = meta.name if meta is not None else ""
        hosted = self._broker.topics.partition(name, index) if name else None
        lag = max(0, hosted.high_watermark - start - complete) if hosted is not None else None
        return SharePartitionState(
            topic=name,
            partition=index,
            start_offset=start,
            in_flight=in_flight,
            acquired=counts[RecordState.ACQUIRED],
            available=counts[RecordState.AVAILABLE],
            acknowledged=counts[RecordState.ACKNOWLEDGED],
            archived=counts[RecordState.ARCHIVED],
            delivery_complete=complete,
            lag=lag,
            loaded=loaded,
        )

    # Schema registry (broker/schema_registry/) ------------------------------------------
    # Read from the registry's state (``SubjectsState``, folded from ``_schemas`` on the
    # event loop), not through its HTTP API: nothing here parses or renders a schema.

    def schema_registry_enabled(self) -> bool:
        """Whether this broker serves a schema registry: its config, fixed for its life, so
        (alone of these methods) safe from a worker thread (the console renders pages there)."""
        return self._broker.config.schema_registry.enabled

    def schema_registry(self) -> SchemaRegistrySummary | None:
        """The registry's summary; None when the broker serves none."""
        registry = self._broker.schema_registry
        if registry is None:
            return None
        s = registry.summary()
        return SchemaRegistrySummary(
            url=s.url,
            is_leader=s.is_leader,
            leader_url=s.leader_url,
            subjects=s.subjects,
            schemas=s.schemas,
            max_id=s.max_id,
            mode=s.mode,
            compatibility=s.compatibility,
        )

    def schema_subjects(self) -> list[SchemaSubjectSummary]:
        """Every subject with a live version, as the registry sorts them ([] when off)."""
        registry = self._broker.schema_registry
        if registry is None:
            return []
        state = registry.state
        return [s for name in state.subjects() if (s := self.schema_subject(name)) is not None]

    def schema_subject(self, subject: str) -> SchemaSubjectSummary | None:
        """One subject; None when it has no live version (or the registry is off)."""
        registry = self._broker.schema_registry
        if registry is None:
            return None
        state = registry.state
        live = state.live_versions(subject)
        if not live:
            return None
        latest = live[-1]
        return SchemaSubjectSummary(
            subject=subject,
            schema_type=latest.schema_type,
            versions=tuple(v.version for v in live),
            latest_id=latest.id,
            compatibility=state.compatibility(subject),
            compatibility_own=_has_own_level(state, subject),
        )

    def schema_version(self, subject: str, version: int | None = None) -> SchemaVersionView | None:
        """A live version of ``subject`` (None: the latest); None when there is no such
        live version (or the registry is off)."""
        registry = self._broker.schema_registry
        if registry is None:
            return None
        state = registry.state
        live = state.live_versions(subject)
        found = live[-1] if live and version is None else None
        found = next((v for v in live if v.version == version), found)
        if found is None:
            return None
        referrers: set[tuple[str, int]] = set()
        for schema_id in state.referenced_by(subject, str(found.version)):
            referrers.update(state.versions_of(schema_id))
        return SchemaVersionView(
            subject=found.subject,
            version=found.version,
            id=found.id,
            schema_type=found.schema_type,
            text=found.text,
            references=tuple(
                SchemaReferenceView(r.name, r.subject, r.version) for r in found.references
            ),
            referenced_by=tuple(sorted(referrers)),
        )

    def schema_registry_counters(self) -> SchemaRegistryCounters | None:
        """The registry's request counters; None when the broker serves no registry."""
        registry = self._broker.schema_registry
        if registry is None:
            return None
        stats = registry.stats
        return SchemaRegistryCounters(
            requests=tuple(
                (method, endpoint, status, count)
                for (method, endpoint, status), count in sorted(stats.requests.items())
            ),
            errors=tuple(sorted(stats.errors.items())),
            seconds=tuple(sorted(stats.seconds.items())),
        )


def _has_own_level(state: SubjectsState, subject: str) -> bool:
    """Whether ``subject`` has a compatibility level of its own (GET /config/{subject}
    without defaultToGlobal answers 40408 when it has none)."""
    from kafkette.broker.schema_registry.errors import RegistryError

    try:
        state.compatibility(subject, default_to_global=False)
    except RegistryError:
        return False
    return True


def _topic_partition(row: SharePartitionState) -> tuple[str, int]:
    return row.topic, row.partition


def _decoded_size(
    key: bytes | None, value: bytes | None, headers: tuple[tuple[str, bytes | None], ...]
) -> int:
    size = len(key or b"") + len(value or b"")
    return size + sum(len(name) + len(v or b"") for name, v in headers)


def _assigned_partitions(assignment: bytes) -> tuple[tuple[str, int], ...]:
    """The (topic, partition) pairs of a ConsumerProtocol assignment (version, then an
    array of topic name + int32 partitions, then user data); () if it does not parse."""
    out: list[tuple[str, int]] = []
    try:
        pos = 2  # int16 version
        (count,), pos = _ints(assignment, pos, 1, 4)
        for _ in range(count):
            (length,), pos = _ints(assignment, pos, 1, 2)
            topic = bytes(assignment[pos : pos + length]).decode("utf-8")
            pos += length
            (partitions,), pos = _ints(assignment, pos, 1, 4)
            indexes, pos = _ints(assignment, pos, partitions, 4)
            out.extend((topic, i) for i in indexes)
    except (ValueError, UnicodeDecodeError):
        return ()
    return tuple(sorted(out))


def _ints(buf: bytes, pos: int, count: int, width: int) -> tuple[list[int], int]:
    end = pos + count * width
    if count < 0 or end > len(buf):
        raise ValueError("assignment ends early")
    values = [
        int.from_bytes(buf[i : i + width], "big", signed=True) for i in range(pos, end, width)
    ]
    return values, end
