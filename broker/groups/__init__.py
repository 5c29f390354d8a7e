"""Consumer groups: the pure state machine and the committed-offsets records.

``GroupCoordinatorState`` is the whole classic group coordinator without I/O;
``offsets_records`` encodes the ``__consumer_offsets`` records it asks the broker
to persist; ``partition_for_group`` is Kafka's group -> offsets-partition rule.
See docs/groups.md.
"""

from .config import GroupConfig
from .model import (
    FetchedOffset,
    GroupDescription,
    GroupListing,
    GroupState,
    JoinMember,
    JoinResponse,
    LeaveMemberResult,
    LeaveResult,
    MemberDescription,
    OffsetDeleteResult,
    OffsetFetchResult,
    OffsetsRecord,
    Outcome,
    Reply,
    SyncResponse,
)
from .partitioning import java_string_hash, partition_for_group
from .state import GroupCoordinatorState

OFFSETS_TOPIC = "__consumer_offsets"

__all__ = [
    "OFFSETS_TOPIC",
    "FetchedOffset",
    "GroupConfig",
    "GroupCoordinatorState",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "JoinMember",
    "JoinResponse",
    "LeaveMemberResult",
    "LeaveResult",
    "MemberDescription",
    "OffsetDeleteResult",
    "OffsetFetchResult",
    "OffsetsRecord",
    "Outcome",
    "Reply",
    "SyncResponse",
    "java_string_hash",
    "partition_for_group",
]
