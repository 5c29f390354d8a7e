"""Which oldest segments retention may delete: Kafka's three rules, as predicates.

Deletion always takes a prefix of the segment list, oldest first, stopping at
the first segment a rule keeps. As in Kafka the active (last) segment is
deletable too when it is not empty and the rule covers it; the partition log
then rolls a fresh empty segment at the log end offset first, so the log end
offset is unchanged and the log start offset moves up to it.

Time and size rules apply when ``cleanup.policy`` includes ``delete``;
compaction is the log cleaner's separate pass (``log/cleaner.py``). The
log-start rule applies under every policy (as in Kafka).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkette.log.config import LogConfig
from kafkette.log.segment import LogSegment

# predicate(segment, next_segment_or_None) -> delete?
SegmentPredicate = Callable[[LogSegment, LogSegment | None], bool]


def deletable_prefix(
    segments: Sequence[LogSegment], predicate: SegmentPredicate,
    high_watermark: int | None = None,
) -> int:
    """How many oldest segments ``predicate`` allows deleting (Kafka's deletableSegments).

    With replication (``high_watermark`` given) a segment goes only if every
    offset it covers is below the HW, as in Kafka: the log start offset must
    never pass the high watermark. Single node (None): HW is the log end.
    """
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        if following is None and segment.size == 0:
            break  # never delete an empty active segment
        if high_watermark is not None and high_watermark < (
            following.base_offset if following is not None else segment.next_offset
        ):
            break
        if not predicate(segment, following):
            break
        count += 1
    return count


def retention_time_breached(config: LogConfig, now_ms: int) -> SegmentPredicate | None:
    """Segments whose largest timestamp is older than retention.ms."""
    if not config.deletes or config.retention_ms < 0:
        return None
    limit = config.retention_ms

    def predicate(segment: LogSegment, _next: LogSegment | None) -> bool:
        return now_ms - segment.largest_timestamp > limit

    return predicate


def retention_size_breached(
    config: LogConfig, segments: Sequence[LogSegment]
) -> SegmentPredicate | None:
    """Oldest segments whose removal keeps the log at or above retention.bytes."""
    if not config.deletes or config.retention_bytes < 0:
        return None
    excess = sum(s.size for s in segments) - config.retention_bytes
    if excess <= 0:
        return None
    remaining = [excess]

    def predicate(segment: LogSegment, _next: LogSegment | None) -> bool:
        if remaining[0] - segment.size >= 0:
            remaining[0] -= segment.size
            return True
        return False

    return predicate


def log_start_breached(log_start_offset: int) -> SegmentPredicate:
    """Segments wholly below the log start offset (after DeleteRecords)."""

    def predicate(_segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= log_start_offset

    return predicate
