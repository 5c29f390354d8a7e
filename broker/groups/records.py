"""The ``__consumer_offsets`` records a group's changes are written as.

The classic protocol writes a group's metadata when a generation forms or ends, the
offsets store writes offsets and tombstones; both build them here, from the state
they keep, in the layouts of ``offsets_records``.
"""

from __future__ import annotations

from . import offsets_records as rec
from .model import CommittedOffset, Group, OffsetsRecord, TopicPartition


def offset_record(
    partition: int, group_id: str, tp: TopicPartition, entry: CommittedOffset | None
) -> OffsetsRecord:
    """``tp``'s committed offset in ``group_id`` (``entry`` None: its tombstone)."""
    key = rec.encode_offset_commit_key(group_id, tp[0], tp[1])
    value = None if entry is None else rec.encode_offset_commit_value(entry)
    return OffsetsRecord(partition, key, value)


def group_metadata_record(partition: int, group: Group) -> OffsetsRecord:
    """The group's generation, protocol, leader and members with their assignments."""
    members = tuple(
        rec.MemberRecord(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata_for(group.protocol_name),
            m.assignment,
        )
        for m in group.members.values()
    )
    value = rec.GroupMetadataValue(
        group.protocol_type or "",
        group.generation_id,
        group.protocol_name,
        group.leader_id,
        -1 if group.state_timestamp_ms is None else group.state_timestamp_ms,
        members,
    )
    return OffsetsRecord(
        partition,
        rec.encode_group_metadata_key(group.group_id),
        rec.encode_group_metadata_value(value),
    )


def group_tombstone(partition: int, group_id: str) -> OffsetsRecord:
    """Deletes the group's metadata record (the group is gone)."""
    return OffsetsRecord(partition, rec.encode_group_metadata_key(group_id), None)
