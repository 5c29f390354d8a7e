"""Group coordinator settings, named and defaulted as Kafka's broker configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkette.broker.config_section import from_kafka_properties, kafka_names

INT32_MAX = 2**31 - 1

# Kafka's fixed JoinGroup timeout for a member that has not yet got its first
# generation (GroupCoordinator.NewMemberJoinTimeoutMs): 5 minutes.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


@dataclass(frozen=True)
class GroupConfig:
    """Coordinator configuration; every field maps to the Kafka config of the same
    name with ``.`` for ``_`` (see ``KAFKA_NAMES``). All durations in milliseconds
    unless the name says otherwise."""

    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3000
    group_max_size: int = INT32_MAX
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600_000
    offsets_commit_timeout_ms: int = 5000
    offsets_topic_num_partitions: int = 50
    offsets_topic_segment_bytes: int = 104_857_600
    offset_metadata_max_bytes: int = 4096
    # KIP-848 consumer groups (broker/groups/consumer).
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_max_size: int = INT32_MAX
    group_consumer_assignors: str = "uniform,range"
    group_consumer_migration_policy: str = "bidirectional"
    # KIP-932 share groups (broker/share_groups, docs/share-groups.md).
    group_share_session_timeout_ms: int = 45_000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_heartbeat_interval_ms: int = 5_000
    group_share_min_heartbeat_interval_ms: int = 5_000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    group_share_assignors: str = "simple"
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_min_delivery_count_limit: int = 2
    group_share_max_delivery_count_limit: int = 10
    group_share_partition_max_record_locks: int = 2000
    group_share_min_partition_max_record_locks: int = 100
    group_share_max_partition_max_record_locks: int = 4000
    group_share_max_share_sessions: int = 2000

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    @classmethod
    def from_properties(cls, props: Mapping[str, str | int]) -> GroupConfig:
        """Build from Kafka-named properties (``group.max.size`` ...); unknown
        names are ignored so a whole ``server.properties`` can be passed."""
        return from_kafka_properties(cls, props)


KAFKA_NAMES: dict[str, str] = kafka_names(GroupConfig)
