"""The session work of a Fetch answer, run once the answer is known to go out whole.

Kafka decides a Fetch's throttle (client quotas) before it touches the fetch session:
a throttled full fetch answers session id 0 and creates no session, a throttled
incremental fetch leaves its session's cached high watermarks and order as they were
(only the request's own changes and the epoch, applied when the request came in,
stay). So the Fetch handler answers with a ``FinishingAnswer`` (broker/network/
finishing.py) whose ``finish`` hook is one of these; the answer path runs it with its
throttle decision, right before encoding.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkette.broker.fetch_sessions.cache import FetchSession, FetchSessionCache
from kafkette.broker.fetch_sessions.responses import SessionUpdates, apply_updates
from kafkette.broker.network.finishing import Finish, FinishingAnswer
from kafkette.wire.errors import ErrorCode


def creating_session(cache: FetchSessionCache, create: Callable[[], int]) -> Finish:
    """A full fetch that may start a session: it does, unless throttled (session id 0)."""

    def finish(answer: FinishingAnswer, throttled: bool) -> bool:
        if throttled:
            return False
        session_id = create()
        answer["session_id"] = session_id
        return session_id != 0

    return finish


def updating_session(
    session: FetchSession, expected_epoch: int, updates: SessionUpdates
) -> Finish:
    """An incremental fetch: its session's cache follows the answer, unless throttled or
    another request of the session moved its epoch meanwhile (INVALID_FETCH_SESSION_EPOCH,
    as Kafka's updateAndGenerateResponseData and getThrottledResponse answer)."""

    def finish(answer: FinishingAnswer, throttled: bool) -> bool:
        if session.epoch != expected_epoch:
            answer["error_code"] = int(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
            answer["responses"] = []
            return True
        if not throttled:
            apply_updates(session, updates)
        return False

    return finish
