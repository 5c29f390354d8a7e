"""A Fetch answer whose session work waits until the answer is known to go out whole.

Kafka decides a Fetch's throttle (client quotas) before it touches the fetch session:
a throttled full fetch answers session id 0 and creates no session, a throttled
incremental fetch leaves its session's cached high watermarks and order as they were
(only the request's own changes and the epoch, applied when the request came in,
stay). So the Fetch handler answers with a ``FetchAnswer`` carrying that work, and
whoever sends it calls ``finish_answer`` first: the connection loop with
``throttled=False``, the quota path (broker/quotas/enforcement.py) with its decision.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkette.broker.fetch_sessions.cache import FetchSession, FetchSessionCache
from kafkette.broker.fetch_sessions.responses import SessionUpdates, apply_updates
from kafkette.wire.errors import ErrorCode

# answer, throttled -> whether the answer changed (it must then be encoded again)
OnAnswer = Callable[["FetchAnswer", bool], bool]


class FetchAnswer(dict):
    """The Fetch response's fields, and what sending it whole does to the session."""

    __slots__ = ("_on_answer",)

    def __init__(self, fields: dict, on_answer: OnAnswer) -> None:
        super().__init__(fields)
        self._on_answer: OnAnswer | None = on_answer

    def finish(self, throttled: bool) -> bool:
        on_answer, self._on_answer = self._on_answer, None
        return False if on_answer is None else on_answer(self, throttled)


def finish_answer(response: object, throttled: bool = False) -> bool:
    """Before ``response`` is encoded for sending: do (or, throttled, skip) its session
    work. True when that changed the answer."""
    if type(response) is FetchAnswer:
        return response.finish(throttled)
    return False


def creating_session(
    cache: FetchSessionCache, create: Callable[[], int]
) -> OnAnswer:
    """A full fetch that may start a session: it does, unless throttled (session id 0)."""

    def on_answer(answer: FetchAnswer, throttled: bool) -> bool:
        if throttled:
            return False
        session_id = create()
        answer["session_id"] = session_id
        return session_id != 0

    return on_answer


def updating_session(
    session: FetchSession, expected_epoch: int, updates: SessionUpdates
) -> OnAnswer:
    """An incremental fetch: its session's cache follows the answer, unless throttled or
    another request of the session moved its epoch meanwhile (INVALID_FETCH_SESSION_EPOCH,
    as Kafka's updateAndGenerateResponseData and getThrottledResponse answer)."""

    def on_answer(answer: FetchAnswer, throttled: bool) -> bool:
        if session.epoch != expected_epoch:
            answer["error_code"] = int(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
            answer["responses"] = []
            return True
        if not throttled:
            apply_updates(session, updates)
        return False

    return on_answer
