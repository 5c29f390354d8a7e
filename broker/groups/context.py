"""What the parts of one coordinator's state share.

The classic protocol, the offsets store, the migration between the classic and
the consumer protocol and the coordinator state that composes them all work on
the same classic groups (a group's committed offsets live on its ``Group``, as
its ``__consumer_offsets`` records do) and add to the same records and replies of
the call being served. This is that shared part, and nothing else: each part
holds it, none holds another's internals.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TypeVar

from .config import GroupConfig
from .model import Group, JoinResponse, OffsetsRecord, Outcome, Reply, SyncResponse
from .partitioning import partition_for_group

T = TypeVar("T")


@dataclass
class GroupsContext:
    """The config (replaced when the offsets topic's partition count is learned), the
    classic groups by id, and what the current call produced so far."""

    config: GroupConfig
    groups: dict[str, Group] = field(default_factory=dict)
    replies: list[Reply] = field(default_factory=list)
    records: list[OffsetsRecord] = field(default_factory=list)

    def partition_for(self, group_id: str) -> int:
        """``__consumer_offsets`` partition holding ``group_id``'s records."""
        return partition_for_group(group_id, self.config.offsets_topic_num_partitions)

    def reply(self, ticket: Hashable, response: JoinResponse | SyncResponse) -> None:
        self.replies.append(Reply(ticket, response))

    def join_error(self, ticket: Hashable, member_id: str, error: int) -> None:
        self.reply(ticket, JoinResponse(error=error, member_id=member_id))

    def done(self, result: T) -> Outcome[T]:
        """The call is over: ``result`` with the records and replies it produced."""
        out = Outcome(result, self.replies, self.records)
        self.replies, self.records = [], []
        return out

    def discard(self) -> None:
        """Forget what a replay produced (a load writes nothing and answers no one)."""
        self.replies, self.records = [], []
