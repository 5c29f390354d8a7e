"""What a Fetch's session id and epoch ask for (Kafka's FetchManager.newContext).

=================  ==============  ===========================================
session id         epoch           meaning
=================  ==============  ===========================================
0                  -1 (FINAL)      sessionless full fetch (also every v4-6 fetch)
0                  0 (INITIAL)     full fetch; the broker may start a session
N                  -1              close session N, then a sessionless full fetch
N                  0               close session N, then a full fetch (new session)
N                  >0              incremental fetch in session N
=================  ==============  ===========================================

An incremental fetch of an unknown session is FETCH_SESSION_ID_NOT_FOUND; one whose
epoch is not the session's next is INVALID_FETCH_SESSION_EPOCH; one that switches
between topic names (v7-12) and topic ids (v13+) is FETCH_SESSION_TOPIC_ID_ERROR. An
incremental fetch that leaves its session empty closes it (answered sessionless).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from kafkette.broker.fetch_sessions.cache import FetchSession, FetchSessionCache, next_epoch
from kafkette.wire.errors import ErrorCode

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
_ZERO_ID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class FetchContext:
    """``error``: answer it at the top level with no partitions. ``session``: an
    incremental fetch of it. ``may_create``: a full fetch that may start a session.
    None of them: a sessionless fetch. ``epoch``: the session's epoch this request moved
    it to (another request of the session moving it again meanwhile makes this one's
    answer INVALID_FETCH_SESSION_EPOCH)."""

    error: int = 0
    session: FetchSession | None = None
    may_create: bool = False
    epoch: int = 0


SESSIONLESS = FetchContext()
FULL = FetchContext(may_create=True)


def open_context(
    cache: FetchSessionCache, version: int, body: dict, now_ms: int
) -> FetchContext:
    """The request's context; an incremental request's changes are applied to its session
    (and the session's epoch moved on) before the read, as Kafka does."""
    if version < 7:
        return SESSIONLESS
    session_id = body["session_id"]
    epoch = body["session_epoch"]
    if epoch == INITIAL_EPOCH or epoch == FINAL_EPOCH:
        if session_id != 0:
            cache.remove(session_id)  # any session named by a full fetch is closed
        return SESSIONLESS if epoch == FINAL_EPOCH else FULL
    session = cache.get(session_id)
    if session is None:
        return FetchContext(error=int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    if session.epoch != epoch:
        return FetchContext(error=int(ErrorCode.INVALID_FETCH_SESSION_EPOCH))
    if session.uses_topic_ids != (version >= 13):
        return FetchContext(error=int(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR))
    session.update(body["topics"], body["forgotten_topics_data"], _ZERO_ID)
    if not session.partitions:
        cache.remove(session.id)
        return SESSIONLESS
    cache.touch(session, now_ms)
    cache.incremental_fetches += 1
    session.epoch = next_epoch(session.epoch)
    return FetchContext(session=session, epoch=session.epoch)
