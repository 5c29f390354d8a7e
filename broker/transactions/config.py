"""Transaction coordinator settings, named and defaulted as Kafka's broker configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields


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
        values: dict[str, object] = {}
        for kafka_name, field_name in KAFKA_NAMES.items():
            if kafka_name in props:
                raw = str(props[kafka_name]).strip()
                values[field_name] = (
                    raw.lower() == "true"
                    if field_name == "transaction_partition_verification_enable"
                    else int(raw)
                )
        return cls(**values)  # type: ignore[arg-type]


KAFKA_NAMES: dict[str, str] = {
    f.name.replace("_", "."): f.name for f in fields(TransactionConfig)
}
