"""Errors the log raises, named after the Kafka error code the broker answers with."""

from __future__ import annotations


class LogError(Exception):
    """Base class of every error raised by ``kafkette.log``."""


class OffsetOutOfRange(LogError):
    """The offset is below the log start offset or above the log end offset.

    Maps to Kafka's OFFSET_OUT_OF_RANGE; carries the bounds so the broker can
    log them and clients can reset.
    """

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(
            f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]"
        )
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class UnknownTopicOrPartition(LogError):
    """No such topic or partition in the data dir (UNKNOWN_TOPIC_OR_PARTITION)."""


class TopicExists(LogError):
    """create_topic on a name already present (TOPIC_ALREADY_EXISTS)."""


class LogClosed(LogError):
    """The partition log was closed (e.g. its topic was deleted) while in use."""


class CorruptIndex(LogError):
    """An index file fails its sanity check; the caller rebuilds it from the log."""


class RecordBatchTooLarge(LogError):
    """An append larger than segment.bytes (RECORD_BATCH_TOO_LARGE)."""


class OffsetMismatch(LogError, ValueError):
    """A follower append whose offsets do not continue the log (Kafka's
    UnexpectedAppendOffsetException / OffsetsOutOfOrderException): a batch
    starts below the log end offset or below the end of the batch before it."""

    def __init__(self, offset: int, expected_at_least: int) -> None:
        super().__init__(
            f"batch at offset {offset} cannot be appended: the log continues at "
            f"{expected_at_least}"
        )
        self.offset = offset
        self.expected_at_least = expected_at_least


class CleanAborted(Exception):
    """The broker is stopping (or the log changed under the clean): nothing was swapped.

    The log cleaner's (log/cleaner.py re-exports it), not a Kafka error: here so that the
    broker can catch it without importing the cleaner."""
