"""A response whose last step waits for the quota decision.

Some answers change state once they are known to go out whole, and Kafka decides a
request's throttle (client quotas) before that step: a Fetch's session is created or
moved on only by an answer that is not throttled (broker/fetch_sessions/). Such a
handler answers with a ``FinishingAnswer``: the response's fields and a ``finish``
hook. The answer path (answer.py) calls the hook exactly once, right before encoding,
with its throttle decision; nothing else calls it, and no other code needs to know
which API the hook belongs to.
"""

from __future__ import annotations

from collections.abc import Callable

# (answer, throttled) -> whether the hook changed the answer's fields
Finish = Callable[["FinishingAnswer", bool], bool]


class FinishingAnswer(dict):
    """A response's fields, and the step that sending them does (``finish``)."""

    __slots__ = ("_finish",)

    def __init__(self, fields: dict, finish: Finish) -> None:
        super().__init__(fields)
        self._finish: Finish | None = finish

    def finish(self, throttled: bool) -> bool:
        """Run the hook (once: a second call does nothing); True if it changed the answer."""
        finish, self._finish = self._finish, None
        return False if finish is None else finish(self, throttled)


def finish(response: object, throttled: bool) -> bool:
    """Before ``response`` is encoded: run its hook, if it has one. True when that
    changed the answer (an encoding made before must be made again)."""
    if type(response) is FinishingAnswer:
        return response.finish(throttled)
    return False
