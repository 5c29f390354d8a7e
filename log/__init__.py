"""kafkette.log: the segmented, crash-safe partition log (synchronous, thread-safe).

The broker codes against :class:`DataDir` (topics and their partitions) and
:class:`PartitionLog` (one partition). See ``docs/storage-format.md``.
"""

from kafkette.log.config import LogConfig, log_config_for, log_config_from_broker_props
from kafkette.log.data_dir import DataDir, TopicMetadata
from kafkette.log.errors import (
    LogClosed,
    LogError,
    OffsetMismatch,
    OffsetOutOfRange,
    RecordBatchTooLarge,
    TopicExists,
    UnknownTopicOrPartition,
)
from kafkette.log.file_region import FileRegion, ReadInfo
from kafkette.log.leader_epoch_cache import LeaderEpochCache
from kafkette.log.partition_log import AppendInfo, PartitionLog

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
