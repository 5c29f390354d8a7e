"""What ``produce`` and ``consume`` share about their confluent-kafka client.

Quiet clients: librdkafka prints its own log lines on stderr (every failed connect, every
few milliseconds); a tool's stderr is one error line, so its logs are off unless the user
asks for ``-X debug=...`` or ``-X log_level=N``. Topic metadata is asked once, up front,
so that an unreachable broker, a missing topic or a wrong partition is one clear line
instead of a record-by-record failure minutes later.

Progress on a terminal: a one-line counter on stderr, rewritten at most once a second, shown
only when stderr is a terminal and the records do not go to that terminal themselves.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from kafkette.tools.common import ToolError, probe, unreachable

METADATA_TIMEOUT_S = 10.0
CONNECT_TIMEOUT_S = 5.0
_ANSWERED: set[str] = set()  # bootstraps seen to accept a connection in this process
PROGRESS_INTERVAL_S = 1.0


def quiet(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's own stderr logging off unless the user asked for it.

    ``log_level`` 0 still lets librdkafka print its FATAL lines (a refused
    InitProducerId, say) on stderr beside the tool's own line about the same error: a
    logger that drops everything keeps stderr to that one line.
    """
    if "debug" not in config and "log_level" not in config:
        config["log_level"] = 0
        config["logger"] = _silent_logger()
    return config


def _silent_logger() -> logging.Logger:
    logger = logging.getLogger("kafkette.tools.librdkafka")
    logger.propagate = False
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    return logger


def topic_metadata(client: Any, topic: str, bootstrap: str) -> Any:
    """The topic's metadata (``TopicMetadata``); ``ToolError`` when no broker answered."""
    from confluent_kafka import KafkaError, KafkaException

    if bootstrap not in _ANSWERED:
        # librdkafka reports a refused connection only when the request times out; a plain
        # TCP connect says "nobody there" at once (the admin tools' probe).
        probe(bootstrap, CONNECT_TIMEOUT_S)
        _ANSWERED.add(bootstrap)
    try:
        metadata = client.list_topics(topic, timeout=METADATA_TIMEOUT_S)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
                            KafkaError._ALL_BROKERS_DOWN):
            raise unreachable(bootstrap) from None
        raise ToolError(f"metadata for {topic}: {error.str()}") from None
    found = metadata.topics[topic]
    if found.error is not None and found.error.code() == KafkaError.TOPIC_EXCEPTION:
        raise invalid_topic(topic)
    return found


# Kafka's text for INVALID_TOPIC_EXCEPTION (Metadata carries the code alone) and its rule
# for a legal name (org.apache.kafka.common.internals.Topic).
INVALID_TOPIC_TEXT = "The request attempted to perform an operation on an invalid topic."
TOPIC_NAME_RULE = (
    "a topic name is 1 to 249 ASCII letters, digits, '.', '_' and '-', and not '.' or '..'"
)


def invalid_topic(topic: str) -> ToolError:
    """The broker refused the name itself: no topic of that name can ever exist, so there is
    nothing to wait for or create."""
    return ToolError(
        f"topic {topic!r} is not a valid topic name: the broker answered "
        f"INVALID_TOPIC_EXCEPTION ({INVALID_TOPIC_TEXT}): {TOPIC_NAME_RULE}"
    )


def is_missing(topic_metadata: Any) -> bool:
    from confluent_kafka import KafkaError

    error = topic_metadata.error
    return error is not None and error.code() in (
        KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE)


def check_partitions(topic: str, topic_metadata: Any, partitions: list[int]) -> None:
    known = sorted(topic_metadata.partitions)
    for partition in partitions:
        if partition not in topic_metadata.partitions:
            raise ToolError(
                f"topic {topic} has {len(known)} partition(s) (0-{len(known) - 1}): "
                f"there is no partition {partition}; add partitions with "
                f"`kafkette topics alter {topic} --partitions N`")


class Progress:
    """``kafkette: <verb> N records (R/s)`` on stderr, once a second, on a terminal only."""

    def __init__(self, verb: str, enabled: bool) -> None:
        self.verb = verb
        self.enabled = enabled
        self.started = time.monotonic()
        self.next_at = self.started + PROGRESS_INTERVAL_S
        self.shown = False

    def update(self, count: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self.next_at:
            return
        self.next_at = now + PROGRESS_INTERVAL_S
        rate = count / max(now - self.started, 1e-9)
        sys.stderr.write(f"\rkafkette: {self.verb} {count:,} records ({rate:,.0f}/s)  ")
        sys.stderr.flush()
        self.shown = True

    def finish(self, count: int) -> None:
        """Leave a final count on a terminal when a progress line was shown."""
        if self.shown:
            elapsed = time.monotonic() - self.started
            sys.stderr.write(f"\rkafkette: {self.verb} {count:,} records in {elapsed:.1f} s"
                             f" ({count / max(elapsed, 1e-9):,.0f}/s)  \n")
            sys.stderr.flush()
