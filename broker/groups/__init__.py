"""Consumer groups: the coordinator, its pure state and the committed-offsets records.

``coordinator.GroupCoordinator`` is the broker's group coordinator (the state on the
event loop: persisting, answering, timers, leadership in a cluster);
``GroupCoordinatorState`` is every group without I/O, composed of the classic
protocol (``classic``), the consumer protocol (``consumer/``), the migration between
them (``migration``) and the offsets store (``offsets_store``); ``offsets_records``
encodes the ``__consumer_offsets`` records; ``partition_for_group`` is Kafka's
group -> offsets-partition rule. See docs/groups.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Names are resolved on first use (PEP 562), so a broker that never serves a
# group never imports the state machine: that keeps start-up fast.
_EXPORTS = {
    "GroupConfig": "config",
    "FetchedOffset": "model",
    "GroupDescription": "model",
    "GroupListing": "model",
    "GroupState": "model",
    "JoinMember": "model",
    "JoinResponse": "model",
    "LeaveMemberResult": "model",
    "LeaveResult": "model",
    "MemberDescription": "model",
    "OffsetDeleteResult": "model",
    "OffsetFetchResult": "model",
    "OffsetsRecord": "model",
    "TransactionalRecord": "model",
    "TxnMarker": "model",
    "Outcome": "model",
    "Reply": "model",
    "SyncResponse": "model",
    "java_string_hash": "partitioning",
    "partition_for_group": "partitioning",
    "record_group_id": "offsets_records",
    "GroupCoordinatorState": "state",
}

__all__ = [
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
    "TransactionalRecord",
    "TxnMarker",
    "java_string_hash",
    "partition_for_group",
    "record_group_id",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
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
        TransactionalRecord,
        TxnMarker,
    )
    from .offsets_records import record_group_id
    from .partitioning import java_string_hash, partition_for_group
    from .state import GroupCoordinatorState
