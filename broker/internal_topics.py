"""The internal topics' names, and what the group and transaction coordinators do
alike with their internal topic.

``__consumer_offsets`` and ``__transaction_state`` are created on first use,
with the partition count configured then (a later change of
``offsets.topic.num.partitions`` / ``transaction.state.log.num.partitions``
is ignored, as in Kafka), and replayed on start: whole batches from the log
start to the log end, decoded, records below the log start (a batch
straddling a DeleteRecords) left out.

In a cluster, a coordinator's write counts only once it is committed: Kafka
appends group metadata, offsets, transaction state and markers with acks=-1
and answers after the high watermark passes them (``append_committed``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode
from kafkette.wire.record_batch import read_header
from kafkette.wire.records import Record, decode_batches

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from kafkette.broker.partitions import Partition
    from kafkette.broker.topics import TopicRegistry
    from kafkette.wire.record_batch import BatchHeader

log = logging.getLogger("kafkette.server")

READ_CHUNK_BYTES = 4 * 1024 * 1024

# The internal topics, named here and nowhere else.
OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
SHARE_STATE_TOPIC = "__share_group_state"  # KIP-932 share partitions' state
INTERNAL_TOPICS = frozenset({OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})


def partitions_in_use(
    topics: TopicRegistry, name: str, configured: int, config_name: str
) -> int | None:
    """The topic's partition count (None if it does not exist yet); says so once
    when the configured count differs, which only applies at creation."""
    existing = topics.metadata(name)
    if existing is None:
        return None
    if existing.partitions != configured:
        log.info("%s has %d partitions (%s=%d is used only at creation)",
                 name, existing.partitions, config_name, configured)
    return existing.partitions


async def create_if_missing(
    topics: TopicRegistry, name: str, partitions: int, configs: dict[str, str]
) -> None:
    """Create the topic unless it exists (a concurrent creation is fine); raises
    TopicError for any other failure."""
    from kafkette.broker.topics import TopicError  # here: broker.topics may import this module

    if topics.metadata(name) is not None:
        return
    try:
        await topics.create(name, partitions, configs)
    except TopicError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise


def replay_batches(partition: Partition) -> Iterator[tuple[BatchHeader, list[Record]]]:
    """Every batch of the partition in order, with its records at or above the log
    start. Blocking: worker threads only."""
    start = offset = partition.log_start_offset
    while offset < partition.log_end_offset:
        batches = decode_batches(partition.read(offset, READ_CHUNK_BYTES).to_bytes())
        if not batches:
            return
        for header, records in batches:
            if header.base_offset < start:
                records = [r for r in records if (r.offset or 0) >= start]
            yield header, records
            offset = header.next_offset


# A coordinator's write to its internal topic that did not commit, as Kafka's coordinators
# answer it (normalizeException): leadership gone -> NOT_COORDINATOR (the client finds the
# new one); too few replicas or no commit in time -> COORDINATOR_NOT_AVAILABLE (retry).
COORDINATOR_WRITE_ERRORS = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


async def append_committed(
    partition: Partition,
    batch: bytearray,
    timeout_s: float,
    check: Callable[[], ErrorCode] | None = None,
) -> ErrorCode:
    """Append a batch the broker built (``Partition.append_batch``); in a cluster
    (``partition.replicated``) only while this broker leads the partition, then wait
    until the high watermark passes it (acks=-1), at most ``timeout_s``.

    NONE once committed; ``check``'s error, NOT_LEADER_OR_FOLLOWER (not the leader,
    or leadership lost while waiting), NOT_ENOUGH_REPLICAS (the ISR is smaller than
    ``min.insync.replicas``: nothing written), NOT_ENOUGH_REPLICAS_AFTER_APPEND or
    REQUEST_TIMED_OUT otherwise (the caller maps them as Kafka's coordinators do).
    A storage failure raises, as ``append_batch`` does. On a single node this is
    exactly ``append_batch``.
    """
    error, commit = await append_uncommitted(partition, batch, check)
    if error != ErrorCode.NONE or commit is None:
        return error
    return await commit(timeout_s)


async def append_uncommitted(
    partition: Partition,
    batch: bytearray,
    check: Callable[[], ErrorCode] | None = None,
) -> tuple[ErrorCode, Callable[[float], Awaitable[ErrorCode]] | None]:
    """``append_committed`` in two steps, so a caller can append under its own lock
    (log order = its order) and wait for the replication after releasing it.

    Answers the append's error and, in a cluster after a successful append, the wait:
    ``await commit(timeout_s)`` answers as ``append_committed`` does. On a single node
    this is ``append_batch`` and there is nothing to wait for (None).
    """
    if not partition.replicated:
        return await partition.append_batch(batch, check), None

    tenure: int | None = None

    def leading_then_check() -> ErrorCode:  # under the append lock
        nonlocal tenure
        tenure = partition.leader_tenure()
        if tenure is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        # acks=-1: an ISR smaller than min.insync.replicas refuses the write up front.
        error = partition.check_min_isr()
        if error != ErrorCode.NONE:
            return error
        return ErrorCode.NONE if check is None else check()

    error = await partition.append_batch(batch, leading_then_check)
    if error != ErrorCode.NONE:
        return error, None
    last_offset = read_header(batch).next_offset - 1  # the log patched the base offset in

    async def commit(timeout_s: float) -> ErrorCode:
        return await partition.wait_for_acks(last_offset, timeout_s, tenure)

    return ErrorCode.NONE, commit
