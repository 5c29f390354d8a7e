"""Share sessions (KIP-932): which partitions a share consumer fetches, by epoch.

A share consumer opens a session with ShareSessionEpoch 0 (a full request: the
partitions it names are the session), then counts 1, 2, ... (after the largest int32
comes 1 again); each later request names only partitions to add (or acknowledge) and
``ForgottenTopicsData`` those to drop. Epoch -1 is the last request: its
acknowledgements are applied, then the session closes and the records its member
holds are released. Sessions are keyed by (group id, member id); a new epoch-0 request
replaces the member's old session. A broker keeps at most
``group.share.max.share.sessions`` of them (SHARE_SESSION_LIMIT_REACHED beyond), and
a session ends with its connection, as Kafka's does.

Pure state (no trio): the caller applies the record side (releasing what a closed
session's member held).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkette.wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
INT32_MAX = 2**31 - 1

SessionKey = tuple[str, str]  # (group id, member id)
SharePartitionId = tuple[uuid.UUID, int]  # (topic id, partition)


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= INT32_MAX else epoch + 1


class ShareSessionError(Exception):
    """A request the session cache refuses, with Kafka's top-level error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class ShareSession:
    key: SessionKey
    epoch: int  # the epoch the next request must carry
    connection: object
    partitions: dict[SharePartitionId, None] = field(default_factory=dict)  # ordered set


class ShareSessions:
    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._sessions: dict[SessionKey, ShareSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> ShareSession | None:
        return self._sessions.get(key)

    def open_fetch(
        self,
        key: SessionKey,
        epoch: int,
        wanted: Iterable[SharePartitionId],
        forgotten: Iterable[SharePartitionId],
        has_acknowledgements: bool,
        connection: object,
    ) -> tuple[list[SharePartitionId], ShareSession | None]:
        """A ShareFetch's session step: the partitions this request fetches, and the
        session (None for the final epoch, whose session the caller closes after the
        acknowledgements). Raises ShareSessionError."""
        wanted = list(wanted)
        if epoch == FINAL_EPOCH:
            session = self._require(key)
            return [], None
        if epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise ShareSessionError(
                    ErrorCode.INVALID_REQUEST,
                    "Acknowledge data present in the initial ShareFetch of a share session.",
                )
            old = self._sessions.pop(key, None)
            if old is None and len(self._sessions) >= self.max_sessions:
                raise ShareSessionError(
                    ErrorCode.SHARE_SESSION_LIMIT_REACHED,
                    f"The broker has reached its limit of {self.max_sessions} share sessions.",
                )
            session = ShareSession(key, next_epoch(INITIAL_EPOCH), connection,
                                   dict.fromkeys(wanted))
            self._sessions[key] = session
            return list(session.partitions), session
        session = self._require(key)
        if session.epoch != epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"The share session epoch is {epoch}, the broker expected {session.epoch}.",
            )
        for tp in wanted:
            session.partitions.setdefault(tp, None)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        session.epoch = next_epoch(session.epoch)
        session.connection = connection
        return list(session.partitions), session

    def acknowledge_step(self, key: SessionKey, epoch: int) -> None:
        """A ShareAcknowledge's session check: epoch 0 is refused, -1 needs a session
        (closed by the caller afterwards), others must match and move it on."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                "A ShareAcknowledge cannot open a share session (epoch 0).",
            )
        session = self._require(key)
        if epoch == FINAL_EPOCH:
            return
        if session.epoch != epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"The share session epoch is {epoch}, the broker expected {session.epoch}.",
            )
        session.epoch = next_epoch(session.epoch)

    def _require(self, key: SessionKey) -> ShareSession:
        session = self._sessions.get(key)
        if session is None:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND,
                f"No share session for group {key[0]} member {key[1]}.",
            )
        return session

    def has_group(self, group_id: str) -> bool:
        """Whether a member of the group holds a share session here."""
        return any(key[0] == group_id for key in self._sessions)

    def close(self, key: SessionKey) -> ShareSession | None:
        return self._sessions.pop(key, None)

    def closed_connection(self, connection: object) -> list[ShareSession]:
        """The sessions of a connection that went away, removed."""
        gone = [s for s in self._sessions.values() if s.connection is connection]
        for session in gone:
            del self._sessions[session.key]
        return gone
