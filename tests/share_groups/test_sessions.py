"""Share sessions (pure): epoch 0 opens (no acknowledgements), each request moves the
epoch on, -1 is the last, a wrong epoch or a missing session is Kafka's error, the cache
has a limit, and a closed connection ends its sessions."""

from __future__ import annotations

import uuid

import pytest

from kafkette.broker.share_groups.sessions import (
    INT32_MAX,
    ShareSessionError,
    ShareSessions,
    next_epoch,
)
from kafkette.wire.errors import ErrorCode

T = uuid.UUID(int=3)
KEY = ("g", "m")


def test_open_then_incremental_then_final() -> None:
    sessions = ShareSessions(10)
    conn = object()
    parts, session = sessions.open_fetch(KEY, 0, [(T, 0)], [], False, conn)
    assert parts == [(T, 0)] and session.epoch == 1
    parts, _ = sessions.open_fetch(KEY, 1, [(T, 1)], [], True, conn)
    assert parts == [(T, 0), (T, 1)]
    parts, _ = sessions.open_fetch(KEY, 2, [], [(T, 0)], False, conn)
    assert parts == [(T, 1)]
    sessions.acknowledge_step(KEY, 3)
    assert sessions.get(KEY).epoch == 4
    parts, session = sessions.open_fetch(KEY, -1, [], [], True, conn)
    assert parts == [] and session is None and sessions.get(KEY) is not None


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda s: s.open_fetch(KEY, 0, [(T, 0)], [], True, None), ErrorCode.INVALID_REQUEST),
        (lambda s: s.open_fetch(KEY, 1, [], [], False, None), ErrorCode.SHARE_SESSION_NOT_FOUND),
        (lambda s: s.open_fetch(KEY, -1, [], [], False, None), ErrorCode.SHARE_SESSION_NOT_FOUND),
        (lambda s: s.acknowledge_step(KEY, 0), ErrorCode.INVALID_SHARE_SESSION_EPOCH),
        (lambda s: s.acknowledge_step(KEY, 2), ErrorCode.SHARE_SESSION_NOT_FOUND),
    ],
)
def test_refusals(call, code) -> None:
    with pytest.raises(ShareSessionError) as refused:
        call(ShareSessions(10))
    assert refused.value.code == code


def test_wrong_epoch_limit_and_closed_connection() -> None:
    sessions = ShareSessions(1)
    conn = object()
    sessions.open_fetch(KEY, 0, [(T, 0)], [], False, conn)
    with pytest.raises(ShareSessionError) as wrong:
        sessions.open_fetch(KEY, 5, [], [], False, conn)
    assert wrong.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    with pytest.raises(ShareSessionError) as full:
        sessions.open_fetch(("g", "other"), 0, [], [], False, conn)
    assert full.value.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    # the same member reopening replaces its own session, limit or not
    sessions.open_fetch(KEY, 0, [(T, 1)], [], False, conn)
    assert [s.key for s in sessions.closed_connection(conn)] == [KEY]
    assert len(sessions) == 0


def test_epoch_wraps_to_one() -> None:
    assert next_epoch(INT32_MAX) == 1 and next_epoch(1) == 2
