"""The driver contract every client family implements, and the guard that turns any client
exception into a one-line :class:`ClientError`.

Drivers are used from one thread (pytest's); they open and close clients per call so that a
failure in one scenario cannot leak state into the next. Every call is bounded by the
client's own timeouts (``TIMEOUT_S`` and friends) so a dead broker fails fast.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Any

from compat_lib.model import ClientError, Got, GroupInfo, Rec, Start, describe_exception
from compat_lib.security import ClientSecurity

# Upper bound for one client operation (seconds); clients get slightly smaller own timeouts.
TIMEOUT_S = 15.0
REQUEST_TIMEOUT_MS = 10_000
# Short consumer group timeouts keep joins and restarts fast (6 s is Kafka's minimum default).
SESSION_TIMEOUT_MS = 6_000
HEARTBEAT_MS = 1_000

ALL_SCENARIOS = frozenset(
    {
        "metadata_auto_create",
        "create_delete_topic",
        "create_partitions",
        "codec",
        "bulk_roundtrip",
        "headers_nulls",
        "near_max_message_bytes",
        "too_large_rejected",
        "idempotent_produce",
        "consume_earliest",
        "consume_latest",
        "consume_timestamp",
        "seek_reread",
        "group_commit_resume",
        "group_two_members",
        "describe_alter_configs",
        "delete_records",
        "list_describe_groups",
        "spark_pattern",
    }
)
# Transactions (KIP-98/KIP-447): every family with a transactional producer declares these.
TXN_SCENARIOS = frozenset(
    {"txn_commit_abort", "txn_offsets", "txn_fencing", "txn_fencing_commit"}
)
ALL_SCENARIOS = ALL_SCENARIOS | TXN_SCENARIOS
# Consumer isolation levels, as Kafka spells them (``isolation.level``).
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


class Unsupported(Exception):
    """The client family cannot express this operation (the scenario is n/a for it)."""


class Family:
    """Base class: one client family. Methods raise :class:`ClientError` via :func:`guarded`."""

    name: str = ""
    scenarios: frozenset[str] = frozenset()

    def __init__(self, bootstrap: str, security: ClientSecurity | None = None) -> None:
        self.bootstrap = bootstrap
        # None: plaintext, as the unsecured suite runs; else TLS/SASL settings (Kafka's terms)
        # that each driver translates into its client's own (compat_lib/security.py).
        self.security = security

    def secured(self, bootstrap: str, security: ClientSecurity) -> Family:
        """A driver of the same family for another listener with these security settings
        (the secured scenarios hold several at once, e.g. alice's and bob's)."""
        return type(self)(bootstrap, security)

    # The importable module that must be present for this family (Python clients).
    module: str | None = None
    install_hint: str = ""

    def available(self) -> str | None:
        """None when the family can run here, else the reason it cannot (used to skip)."""
        if self.module is not None and importlib.util.find_spec(self.module) is None:
            return f"Python module {self.module} not installed ({self.install_hint})"
        return None

    def version(self) -> str:
        raise NotImplementedError

    def close(self) -> None:
        """Release long-lived resources (only the Java agent has any)."""

    # --- operations; see each driver for how its client expresses them -------------------
    def partitions_for(self, topic: str) -> int:
        """Partition count from a producer metadata request (auto-creates the topic)."""
        raise Unsupported("partitions_for")

    def list_topics(self) -> set[str]:
        raise Unsupported("list_topics")

    def check_login(self) -> set[str]:
        """Connect (TLS handshake, SASL login) and list the topics; raises what the client
        reports when the broker refuses the connection or the login. Drivers whose client
        only logs the broker's refusal (and raises a generic "no broker") add what it logged."""
        return self.list_topics()

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None) -> None:
        raise Unsupported("create_topic")

    def delete_topic(self, topic: str) -> None:
        raise Unsupported("delete_topic")

    def create_partitions(self, topic: str, total: int) -> None:
        raise Unsupported("create_partitions")

    def describe_partition_count(self, topic: str) -> int:
        raise Unsupported("describe_partition_count")

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        """Produce and wait for every ack; returns (partition, offset) per record, in order.
        ``config`` holds Kafka-style producer settings (``max.request.size``,
        ``enable.idempotence``); drivers translate the names to their client's."""
        raise Unsupported("produce")

    def consume(
        self,
        topic: str,
        partition: int,
        start: Start,
        count: int,
        isolation: str = READ_UNCOMMITTED,
    ) -> list[Got]:
        """Assign one partition (no group), position at ``start``, poll until ``count``
        records arrived or the timeout passed; returns what arrived. ``isolation`` is the
        consumer's ``isolation.level`` (``read_committed`` skips aborted transactions)."""
        raise Unsupported("consume")

    def seek_reread(
        self, topic: str, partition: int, first: int, seek_to: int, second: int
    ) -> tuple[list[Got], list[Got]]:
        """With one consumer: read ``first`` records from earliest, seek to ``seek_to``,
        read ``second`` records."""
        raise Unsupported("seek_reread")

    def list_offset(self, topic: str, partition: int, spec: str | int) -> int:
        """ListOffsets for ``earliest``, ``latest`` or a timestamp in ms."""
        raise Unsupported("list_offset")

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        """Subscribe in ``group`` (earliest reset), read ``count`` records, commit the
        offset after the last one, close (leaving the group)."""
        raise Unsupported("group_consume")

    def group_two_members(
        self, group: str, topic: str, total: int
    ) -> tuple[list[int], list[int], set[tuple[int, int]]]:
        """Two members of ``group`` subscribed to ``topic``, polled in turn (one thread)
        until both own partitions and together saw ``total`` records, or 20 s passed.
        Returns (partitions of member 1, partitions of member 2, {(partition, offset)})."""
        raise Unsupported("group_two_members")

    def list_groups(self) -> set[str]:
        raise Unsupported("list_groups")

    def describe_group(self, group: str) -> GroupInfo:
        raise Unsupported("describe_group")

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        raise Unsupported("describe_configs")

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        raise Unsupported("alter_configs")

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        """Delete records before ``before``; returns the new log start offset."""
        raise Unsupported("delete_records")


    # --- transactions ---------------------------------------------------------------------
    def txn_produce(
        self, topic: str, transactional_id: str, txns: list[tuple[list[Rec], bool]]
    ) -> None:
        """One transactional producer: ``init_transactions``, then per ``(records, commit)``
        begin, send every record and wait for its ack, commit (True) or abort (False)."""
        raise Unsupported("txn_produce")

    def txn_copy(
        self,
        group: str,
        source: str,
        dest: str,
        transactional_id: str,
        count: int,
        commit: bool,
    ) -> list[Got]:
        """Consume-transform-produce once: a read_committed consumer with ``group.id=group``
        assigned partition 0 of ``source`` (starting at the group's committed offset, else
        earliest) reads ``count`` records; in one transaction each is sent to partition 0
        of ``dest`` with the same key and the value prefixed by ``copied:``, and the offset
        after the last one is added with ``sendOffsetsToTransaction``; then commit or
        abort. Returns the records read."""
        raise Unsupported("txn_copy")

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        """The group's committed offset for the partition (None when it has none)."""
        raise Unsupported("committed_offset")

    def txn_fencing(
        self, topic: str, transactional_id: str, first: Rec, late: Rec | None, successor: Rec
    ) -> tuple[str, str]:
        """Zombie fencing: producer A (``transactional_id``) begins a transaction and sends
        ``first`` (acked); producer B with the same id initialises (fencing A, aborting its
        transaction), sends ``successor`` in a transaction and commits; then A sends ``late``
        (waiting for its ack; skipped when ``late`` is None, so that the commit is A's next
        request) and, whatever that gave, calls commit. Returns what A's client raised from
        the send and from the commit (each "" if it raised nothing)."""
        raise Unsupported("txn_fencing")


def guarded(family: Family) -> Any:
    """Proxy whose method calls re-raise client exceptions as :class:`ClientError`."""
    return _Guard(family)


class _Guard:
    def __init__(self, family: Family) -> None:
        self._family = family

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._family, attr)
        if not callable(value) or attr.startswith("_"):
            return value
        return _wrap(self._family.name, attr, value)


def _wrap(family: str, op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (ClientError, Unsupported, AssertionError):
            raise
        except Exception as exc:
            raise ClientError(family, op, describe_exception(exc)) from exc

    return call
