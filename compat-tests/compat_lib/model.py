"""Client-neutral records, start positions and errors shared by every family driver.

Drivers translate these into their client's own API so one scenario body runs unchanged
against kafka-python, aiokafka, confluent-kafka, kcat and the Java client.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Kafka's broker default for message.max.bytes (the largest record batch the broker accepts).
MESSAGE_MAX_BYTES = 1048588

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Rec:
    """A record to produce; ``partition`` None lets the client choose one."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    partition: int | None = None


@dataclass(frozen=True)
class Got:
    """A consumed record, normalised across clients (timestamps in ms since the epoch)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int = -1


class Received(list):
    """The records a driver returns (a plain ``list[Got]``), plus ``note``: when fewer
    arrived than asked, what the client saw at that moment (its assignment, positions,
    group generation, the group as the broker describes it), so that a short read under
    load explains itself in the assertion message instead of needing a rerun with logs."""

    note: str = ""


@dataclass(frozen=True)
class Start:
    """Where a consumer starts: ``earliest``, ``offset`` (value), ``timestamp`` (value, ms) or
    ``tail`` (value = how many records before the latest offset, resolved by the client)."""

    kind: str
    value: int = 0

    @staticmethod
    def earliest() -> Start:
        return Start("earliest")

    @staticmethod
    def offset(n: int) -> Start:
        return Start("offset", n)

    @staticmethod
    def timestamp(ms: int) -> Start:
        return Start("timestamp", ms)

    @staticmethod
    def tail(n: int) -> Start:
        return Start("tail", n)


@dataclass
class GroupInfo:
    """What ``describe group`` returned, reduced to fields every admin API exposes."""

    group_id: str
    state: str
    protocol_type: str = ""
    members: int = 0
    extra: dict = field(default_factory=dict)


class ClientError(Exception):
    """What a client reported, as one line: ``<family> <operation>: <error as the client saw it>``.

    Scenario assertions let these propagate so the failure line tells a broker author which
    client call failed and with which error code or exception.
    """

    def __init__(self, family: str, operation: str, detail: str) -> None:
        self.family = family
        self.operation = operation
        self.detail = " ".join(str(detail).split())[:400]
        super().__init__(f"{family} {operation}: {self.detail}")


def describe_exception(exc: BaseException) -> str:
    """One line naming the exception class and message (and a Kafka error code if present)."""
    name = type(exc).__name__
    text = str(exc) or repr(exc)
    code = getattr(exc, "errno", None)
    if code is None and hasattr(exc, "args") and exc.args:
        first = exc.args[0]
        code_fn = getattr(first, "code", None)
        if callable(code_fn):  # confluent_kafka.KafkaError inside KafkaException
            return f"{name}: {first.name()} (code {code_fn()}): {first.str()}"
    return f"{name}: {text}"
