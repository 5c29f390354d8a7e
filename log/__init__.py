"""kafkette.log: the segmented, crash-safe partition log (synchronous, thread-safe).

The broker codes against :class:`DataDir` (topics and their partitions) and
:class:`PartitionLog` (one partition). See ``docs/storage-format.md``.

The names below load with the module that defines them, on first use (PEP 562), as
``kafkette.broker.groups`` does: importing one light module of the package (its configs,
its errors) does not import the log engine, so a broker opens an empty data dir without
loading segments, indexes, producer state or recovery (docs/performance.md, start time).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "AppendInfo": "partition_log",
    "DataDir": "data_dir",
    "FileRegion": "file_region",
    "LeaderEpochCache": "leader_epoch_cache",
    "LogClosed": "errors",
    "LogConfig": "config",
    "LogError": "errors",
    "OffsetMismatch": "errors",
    "OffsetOutOfRange": "errors",
    "PartitionLog": "partition_log",
    "ReadInfo": "file_region",
    "RecordBatchTooLarge": "errors",
    "TopicExists": "errors",
    "TopicMetadata": "data_dir",
    "UnknownTopicOrPartition": "errors",
    "log_config_for": "config",
    "log_config_from_broker_props": "config",
}

__all__ = [
    "AppendInfo",
    "DataDir",
    "FileRegion",
    "LeaderEpochCache",
    "LogClosed",
    "LogConfig",
    "LogError",
    "OffsetMismatch",
    "OffsetOutOfRange",
    "PartitionLog",
    "ReadInfo",
    "RecordBatchTooLarge",
    "TopicExists",
    "TopicMetadata",
    "UnknownTopicOrPartition",
    "log_config_for",
    "log_config_from_broker_props",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from .config import LogConfig, log_config_for, log_config_from_broker_props
    from .data_dir import DataDir, TopicMetadata
    from .errors import (
        LogClosed,
        LogError,
        OffsetMismatch,
        OffsetOutOfRange,
        RecordBatchTooLarge,
        TopicExists,
        UnknownTopicOrPartition,
    )
    from .file_region import FileRegion, ReadInfo
    from .leader_epoch_cache import LeaderEpochCache
    from .partition_log import AppendInfo, PartitionLog
