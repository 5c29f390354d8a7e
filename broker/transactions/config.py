"""Transaction coordinator settings, named and defaulted as Kafka's broker configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkette.broker.config_section import from_kafka_properties, kafka_names


@dataclass(frozen=True)
class TransactionConfig:
    """Every field is the Kafka config of the same name with ``.`` for ``_``
    (see ``KAFKA_NAMES``); durations in milliseconds."""

    transaction_state_log_num_partitions: int = 50
    transaction_state_log_segment_bytes: int = 104_857_600
    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3_600_000
    transaction_partition_verification_enable: bool = True

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> TransactionConfig:
        """Build from Kafka-named properties; other names are ignored."""
        return from_kafka_properties(cls, props)


KAFKA_NAMES: dict[str, str] = kafka_names(TransactionConfig)
