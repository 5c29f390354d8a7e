"""Pieces several family drivers share because their clients really share them.

kafka-python and aiokafka spell settings the same way and hand out the same ``ConsumerRecord``
shape; confluent-kafka and kcat both pass settings straight to librdkafka. The polling loops
are for the synchronous clients (kafka-python, confluent-kafka); aiokafka's awaitable
twins stay in its driver. Used from one thread, like the drivers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from compat_lib.family import HEARTBEAT_MS, SESSION_TIMEOUT_MS, TIMEOUT_S
from compat_lib.model import Got, describe_exception

# How long two group members may take to both own partitions and see every record (seconds).
TWO_MEMBERS_SETTLE_S = 20.0

# Kafka's producer setting names (as the scenarios pass them) in each client's spelling.
KAFKA_PYTHON_PRODUCER_KEYS = {
    "max.request.size": "max_request_size",
    "enable.idempotence": "enable_idempotence",
    "acks": "acks",
}
LIBRDKAFKA_PRODUCER_KEYS = {
    "max.request.size": "message.max.bytes",
    "enable.idempotence": "enable.idempotence",
    "acks": "acks",
}


def producer_settings(config: Mapping[str, Any] | None, names: Mapping[str, str]) -> dict:
    """``config`` (Kafka's names) renamed through ``names``; an unknown name is a KeyError."""
    return {names[key]: value for key, value in (config or {}).items()}


def kafka_python_group_settings(group: str) -> dict[str, Any]:
    """Consumer keywords (kafka-python's spelling, aiokafka's too) that join ``group`` fast."""
    return {
        "group_id": group,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
    }


def got_from_consumer_record(m: Any) -> Got:
    """A kafka-python or aiokafka ``ConsumerRecord`` (same attribute names) as a :class:`Got`."""
    return Got(
        partition=m.partition,
        offset=m.offset,
        key=m.key,
        value=m.value,
        headers=tuple((k, v) for k, v in (m.headers or ())),
        timestamp_ms=m.timestamp,
    )


def poll_until(count: int, fetch: Callable[[int], Iterable[Got]]) -> list[Got]:
    """Call ``fetch(still_wanted)`` (one short poll) until ``count`` records arrived or
    ``TIMEOUT_S`` passed; returns what arrived, in arrival order."""
    got: list[Got] = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(got) < count and time.monotonic() < deadline:
        got.extend(fetch(count - len(got)))
    return got


def assignments_settled(assignments: Iterable[Iterable[Any]]) -> bool:
    """True when every member owns a partition and no partition has two owners.

    A member's ``assignment()`` is what it owned last, not what the group decided:
    kafka-python (eager protocol) keeps the old assignment until its own SyncGroup
    answer arrives, so right after a rebalance one member can still report both
    partitions while the other already reports its new one. Only a disjoint,
    non-empty split is the state the scenario waits for.
    """
    owned = [set(a) for a in assignments]
    if not owned or not all(owned):
        return False
    return sum(len(a) for a in owned) == len(set().union(*owned))


def two_members(
    new_member: Callable[[], Any],
    topic: str,
    total: int,
    poll_once: Callable[[Any], Iterable[tuple[int, int]]],
    subscribe: Callable[[Any, str], None] | None = None,
    own_threads: bool = False,
) -> tuple[list[int], list[int], set[tuple[int, int]]]:
    """Two consumers from ``new_member()`` subscribed to ``topic``, polled with
    ``poll_once(member)`` -> (partition, offset) pairs until both own partitions and together
    saw ``total`` records, or ``TWO_MEMBERS_SETTLE_S`` passed; both are closed on return.
    "Own partitions" means :func:`assignments_settled`. Members are subscribed with
    ``subscribe(member, topic)`` (default ``member.subscribe([topic])``) and need
    ``assignment()`` (objects with a ``partition``) and ``close()``. Returns (partitions of
    member 1, partitions of member 2, pairs seen), the partitions as of the moment the split
    settled (or the end).

    Members are polled in turn from this thread, or each from a thread of its own with
    ``own_threads``: a client that completes a rebalance only while its own ``poll`` runs
    (kafka-python, see ``fam_kafka_python._subscribe``) loses a JoinGroup/SyncGroup answer
    that arrives while the other member is being polled, rejoins, and the two can keep
    each other rebalancing for good.
    """
    members = [new_member(), new_member()]
    try:
        for member in members:
            if subscribe is None:
                member.subscribe([topic])
            else:
                subscribe(member, topic)
        seen: set[tuple[int, int]] = set()
        poll = _poll_in_own_threads if own_threads else _poll_in_turn
        owned = poll(members, poll_once, total, seen)
        one, two = (sorted(tp.partition for tp in a) for a in owned)
        return one, two, seen
    finally:
        for member in members:
            member.close()


def _settled_split(members: list[Any], seen: set, total: int) -> list[set] | None:
    owned = [set(m.assignment()) for m in members]
    return owned if len(seen) >= total and assignments_settled(owned) else None


def _poll_in_turn(members, poll_once, total: int, seen: set) -> list[set]:
    deadline = time.monotonic() + TWO_MEMBERS_SETTLE_S
    while time.monotonic() < deadline:
        for member in members:
            seen.update(poll_once(member))
        owned = _settled_split(members, seen, total)
        if owned is not None:
            return owned
    return [set(m.assignment()) for m in members]


def _poll_in_own_threads(members, poll_once, total: int, seen: set) -> list[set]:
    """Each member polled without pause by its own thread (each consumer stays on one
    thread); this thread watches for the settled split. A poll error stops both and is
    raised here."""
    stop = threading.Event()
    lock = threading.Lock()
    failures: list[BaseException] = []

    def run(member: Any) -> None:
        try:
            while not stop.is_set():
                pairs = list(poll_once(member))
                with lock:
                    seen.update(pairs)
        except BaseException as exc:
            failures.append(exc)
            stop.set()

    threads = [threading.Thread(target=run, args=(m,), daemon=True) for m in members]
    for thread in threads:
        thread.start()
    owned = None
    try:
        deadline = time.monotonic() + TWO_MEMBERS_SETTLE_S
        while owned is None and time.monotonic() < deadline and not stop.is_set():
            time.sleep(0.05)
            with lock:
                owned = _settled_split(members, seen, total)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=TIMEOUT_S)
    if failures:
        raise failures[0]
    return owned if owned is not None else [set(m.assignment()) for m in members]


class LoggedError(Exception):
    """A client's exception together with the warnings and errors it logged meanwhile."""


class ClientLog:
    """Collects the WARNING+ lines logger ``name`` (a client library) writes while active:
    aiokafka and kafka-python log the broker's SASL_AUTHENTICATION_FAILED and raise only
    "Unable to bootstrap", so the cause is in their log, not their exception."""

    def __init__(self, name: str) -> None:
        self.lines: list[str] = []
        self._logger = logging.getLogger(name)
        lines = self.lines

        class Collect(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                lines.append(record.getMessage())

        self._handler = Collect(logging.WARNING)

    def __enter__(self) -> ClientLog:
        self._logger.addHandler(self._handler)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.removeHandler(self._handler)

    @staticmethod
    def _broker_error(line: str) -> bool:
        """The line names a Kafka error code, other than REQUEST_TIMED_OUT (7): that one is the
        client's own deadline running out, not the broker's answer."""
        return "[Error " in line and "[Error 7]" not in line

    def names_error_code(self) -> bool:
        return any(self._broker_error(line) for line in self.lines)

    def error(self, exc: BaseException) -> LoggedError:
        """``exc`` with the logged lines, those naming a Kafka error code first: a failure line
        keeps only its first 400 characters, and the cause comes before the retries'
        "socket disconnected"."""
        lines = sorted(dict.fromkeys(self.lines), key=lambda line: not self._broker_error(line))
        logged = " | ".join(lines)[:300] or "(nothing)"
        return LoggedError(f"client log: {logged}; raised {describe_exception(exc)}")


@contextmanager
def with_client_log(logger_name: str) -> Iterator[None]:
    """Re-raise an exception from the block with what ``logger_name`` logged meanwhile."""
    with ClientLog(logger_name) as log:
        try:
            yield
        except Exception as exc:
            raise log.error(exc) from exc
