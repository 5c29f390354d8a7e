"""Subscription regexes (KIP-848 SubscribedTopicRegex), compiled with RE2.

Kafka 4.0 compiles them with RE2/J: matching takes time linear in the topic name, so a
pattern such as ``(a+)+b`` cannot stall the coordinator, and patterns RE2 does not know
(backreferences, lookaround) are refused with INVALID_REGULAR_EXPRESSION. Python's
``re`` backtracks, so it must never see a client's pattern: the ``google-re2`` binding is
used instead, imported only when the first regex subscription arrives (most brokers
never see one).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

_re2: Any = None
_options: Any = None


class InvalidRegex(ValueError):
    """RE2 refused the pattern; the message is RE2's description of why."""


def _module() -> tuple[Any, Any]:
    global _re2, _options
    if _re2 is None:
        import re2  # google-re2: lazily, see the module docstring

        options = re2.Options()
        options.log_errors = False  # a refused pattern is the client's error: no stderr line
        _re2, _options = re2, options
    return _re2, _options


@functools.lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Any:
    """The compiled pattern (cached: members of a group send the same one every
    heartbeat). Raises InvalidRegex."""
    re2, options = _module()
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise InvalidRegex(str(detail)) from None


def full_matches(pattern: str, names: Iterable[str], internal: frozenset[str]) -> frozenset[str]:
    """The names the whole pattern matches (Kafka's ``matcher(name).matches()``), never an
    internal topic."""
    compiled = compile_regex(pattern)
    return frozenset(n for n in names if n not in internal and compiled.fullmatch(n))
