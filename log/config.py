"""Per-partition log settings, parsed once from Kafka's config names.

The broker owns the broker-level defaults (``log.*`` names) and each topic may
override them with topic-level names (``segment.bytes`` ...). Both are turned
into one frozen :class:`LogConfig` here, so nothing downstream reads strings.
The broker-wide ``log.cleaner.*`` settings are :class:`CleanerConfig`.
Units: bytes and milliseconds, as in Kafka.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647
DOUBLE_MAX = 1.7976931348623157e308

CLEANUP_POLICIES = frozenset({"delete", "compact", "compact,delete"})
TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime"})


@dataclass(frozen=True)
class LogConfig:
    """Settings of one partition log; Kafka topic-level names in comments."""

    segment_bytes: int = 1073741824  # segment.bytes / log.segment.bytes
    segment_ms: int = 604800000  # segment.ms / log.roll.ms
    retention_ms: int = 604800000  # retention.ms / log.retention.ms (-1 = forever)
    retention_bytes: int = -1  # retention.bytes / log.retention.bytes (-1 = unbounded)
    index_interval_bytes: int = 4096  # index.interval.bytes / log.index.interval.bytes
    max_index_bytes: int = 10485760  # segment.index.bytes / log.index.size.max.bytes
    flush_interval_messages: int = LONG_MAX  # flush.messages / log.flush.interval.messages
    flush_interval_ms: int = LONG_MAX  # flush.ms / log.flush.interval.ms
    cleanup_policy: str = "delete"  # cleanup.policy / log.cleanup.policy
    message_timestamp_type: str = "CreateTime"  # message.timestamp.type
    producer_id_expiration_ms: int = 86400000  # producer.id.expiration.ms (broker only)
    # Compaction (log/cleaner.py); broker names log.cleaner.*
    delete_retention_ms: int = 86400000  # delete.retention.ms / log.cleaner.delete.retention.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms / log.cleaner.min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    # Derived: the active segment's age limit. Kafka rolls a compacted log's active
    # segment at min(segment.ms, max.compaction.lag.ms), so the lag can be honoured.
    roll_ms: int = dataclasses.field(init=False, repr=False, compare=False, default=0)
    # Derived: ``compact`` is in cleanup.policy (read per produce request: no string work).
    compacts: bool = dataclasses.field(init=False, repr=False, compare=False, default=False)

    def __post_init__(self) -> None:
        if self.segment_bytes < 14:  # Kafka's floor: LegacyRecord.RECORD_OVERHEAD_V0
            raise ValueError(f"segment.bytes must be >= 14, got {self.segment_bytes}")
        if self.segment_bytes > INT_MAX:
            raise ValueError("segment.bytes must fit in an int32")
        if self.segment_ms < 1:
            raise ValueError("segment.ms must be >= 1")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ValueError("retention.ms / retention.bytes must be >= -1")
        if self.index_interval_bytes < 0:
            raise ValueError("index.interval.bytes must be >= 0")
        if self.max_index_bytes < 12:
            raise ValueError("segment.index.bytes must be >= 12 (one time index entry)")
        if self.flush_interval_messages < 1 or self.flush_interval_ms < 0:
            raise ValueError("flush.messages must be >= 1 and flush.ms >= 0")
        if self.producer_id_expiration_ms < 1:
            raise ValueError("producer.id.expiration.ms must be >= 1")
        if self.delete_retention_ms < 0 or self.min_compaction_lag_ms < 0:
            raise ValueError("delete.retention.ms and min.compaction.lag.ms must be >= 0")
        if self.max_compaction_lag_ms < 1:
            raise ValueError("max.compaction.lag.ms must be >= 1")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ValueError("min.cleanable.dirty.ratio must be between 0 and 1")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise ValueError(f"unknown cleanup.policy {self.cleanup_policy!r}")
        if self.message_timestamp_type not in TIMESTAMP_TYPES:
            raise ValueError(f"unknown message.timestamp.type {self.message_timestamp_type!r}")
        compacts = "compact" in self.cleanup_policy.split(",")
        object.__setattr__(self, "compacts", compacts)
        roll_ms = self.segment_ms
        if compacts:
            roll_ms = min(roll_ms, self.max_compaction_lag_ms)
        object.__setattr__(self, "roll_ms", roll_ms)

    @property
    def deletes(self) -> bool:
        """True when time/size retention applies (``delete`` is in cleanup.policy)."""
        return "delete" in self.cleanup_policy.split(",")


def _cleanup_policy(value: str) -> str:
    """Kafka accepts the list in any order and with spaces: normalise it."""
    parts = sorted({p.strip() for p in value.split(",") if p.strip()})
    return ",".join(parts)


# Topic-level Kafka name -> (LogConfig field, parser)
TOPIC_CONFIG_FIELDS: dict[str, tuple[str, Callable[[str], object]]] = {
    "segment.bytes": ("segment_bytes", int),
    "segment.ms": ("segment_ms", int),
    "retention.ms": ("retention_ms", int),
    "retention.bytes": ("retention_bytes", int),
    "index.interval.bytes": ("index_interval_bytes", int),
    "segment.index.bytes": ("max_index_bytes", int),
    "flush.messages": ("flush_interval_messages", int),
    "flush.ms": ("flush_interval_ms", int),
    "cleanup.policy": ("cleanup_policy", _cleanup_policy),
    "message.timestamp.type": ("message_timestamp_type", str.strip),
    "delete.retention.ms": ("delete_retention_ms", int),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", float),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", int),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", int),
}

# Broker-level Kafka name -> (LogConfig field, multiplier to bytes/ms). Later
# entries for the same field win, as in Kafka (log.roll.ms beats log.roll.hours).
BROKER_CONFIG_FIELDS: tuple[tuple[str, str, int], ...] = (
    ("log.segment.bytes", "segment_bytes", 1),
    ("log.roll.hours", "segment_ms", 3600000),
    ("log.roll.ms", "segment_ms", 1),
    ("log.retention.hours", "retention_ms", 3600000),
    ("log.retention.minutes", "retention_ms", 60000),
    ("log.retention.ms", "retention_ms", 1),
    ("log.retention.bytes", "retention_bytes", 1),
    ("log.index.interval.bytes", "index_interval_bytes", 1),
    ("log.index.size.max.bytes", "max_index_bytes", 1),
    ("log.flush.interval.messages", "flush_interval_messages", 1),
    ("log.flush.interval.ms", "flush_interval_ms", 1),
    ("producer.id.expiration.ms", "producer_id_expiration_ms", 1),
    ("log.cleaner.delete.retention.ms", "delete_retention_ms", 1),
    ("log.cleaner.min.compaction.lag.ms", "min_compaction_lag_ms", 1),
    ("log.cleaner.max.compaction.lag.ms", "max_compaction_lag_ms", 1),
)


def log_config_for(topic_configs: Mapping[str, str], broker_default: LogConfig) -> LogConfig:
    """The LogConfig of a topic: ``broker_default`` overridden by topic-level names.

    Names that are not log settings (e.g. ``max.message.bytes``) are ignored;
    a bad value raises ValueError naming the config, so the broker can answer
    INVALID_CONFIG before anything is persisted.
    """
    changes: dict[str, object] = {}
    for name, raw in topic_configs.items():
        entry = TOPIC_CONFIG_FIELDS.get(name)
        if entry is None or raw is None:
            continue
        field_name, parse = entry
        try:
            changes[field_name] = parse(raw)
        except ValueError as exc:
            raise ValueError(f"invalid value {raw!r} for {name}") from exc
    return dataclasses.replace(broker_default, **changes)


def log_config_from_broker_props(props: Mapping[str, str]) -> LogConfig:
    """The broker-wide default LogConfig from ``server.properties``-style names."""
    changes: dict[str, object] = {}
    for name, field_name, scale in BROKER_CONFIG_FIELDS:
        if name in props:
            try:
                changes[field_name] = int(props[name]) * scale
            except ValueError as exc:
                raise ValueError(f"invalid value {props[name]!r} for {name}") from exc
    if "log.cleanup.policy" in props:
        changes["cleanup_policy"] = _cleanup_policy(props["log.cleanup.policy"])
    if "log.cleaner.min.cleanable.ratio" in props:
        try:
            changes["min_cleanable_dirty_ratio"] = float(props["log.cleaner.min.cleanable.ratio"])
        except ValueError as exc:
            raise ValueError(
                f"invalid value {props['log.cleaner.min.cleanable.ratio']!r} "
                "for log.cleaner.min.cleanable.ratio"
            ) from exc
    if "log.message.timestamp.type" in props:
        changes["message_timestamp_type"] = props["log.message.timestamp.type"].strip()
    return LogConfig(**changes)


@dataclass(frozen=True)
class CleanerConfig:
    """Broker-wide cleaner settings (Kafka's ``log.cleaner.*`` names and defaults).

    Here, not in log/cleaner.py, so that parsing the broker's config does not import
    the cleaner (nor the log engine it imports)."""

    enable: bool = True  # log.cleaner.enable
    threads: int = 1  # log.cleaner.threads
    backoff_ms: int = 15000  # log.cleaner.backoff.ms
    io_max_bytes_per_second: float = DOUBLE_MAX  # log.cleaner.io.max.bytes.per.second
    dedupe_buffer_size: int = 134217728  # log.cleaner.dedupe.buffer.size

    @property
    def map_memory_bytes(self) -> int:
        return self.dedupe_buffer_size // max(1, self.threads)
