"""Cluster settings: Kafka's broker configs for ZooKeeper, replication and elections.

Built only when ``zookeeper.connect`` is set (``broker/config.py`` registers
the names, their defaults and validators, and calls ``ClusterConfig.from_properties``
lazily). Every field is the Kafka config of the same name, ``.`` spelled ``_``;
the broker id is ``broker.id`` (or ``node.id``, which Kafka 4 uses for the same thing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ClusterConfig:
    """Durations in milliseconds. Defaults are Apache Kafka's."""

    broker_id: int
    zookeeper_connect: str
    broker_rack: str | None = None
    zookeeper_session_timeout_ms: int = 18000
    # Kafka: unset means zookeeper.session.timeout.ms.
    zookeeper_connection_timeout_ms: int | None = None
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    replica_lag_time_max_ms: int = 30000
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_response_max_bytes: int = 10485760
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    num_replica_fetchers: int = 1
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    controlled_shutdown_enable: bool = True
    offsets_topic_replication_factor: int = 3
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    share_coordinator_state_topic_replication_factor: int = 3
    share_coordinator_state_topic_min_isr: int = 2

    @property
    def connection_timeout_s(self) -> float:
        timeout = self.zookeeper_connection_timeout_ms
        if timeout is None:
            timeout = self.zookeeper_session_timeout_ms
        return timeout / 1000

    @property
    def session_timeout_s(self) -> float:
        return self.zookeeper_session_timeout_ms / 1000

    @classmethod
    def from_properties(cls, props: Mapping[str, str], broker_id: int) -> ClusterConfig:
        """The cluster settings among Kafka-named ``props`` (already validated by
        ``broker/config.py``); names not given keep Kafka's defaults."""
        values: dict[str, object] = {
            "broker_id": broker_id,
            "zookeeper_connect": props["zookeeper.connect"].strip(),
        }
        for f in fields(cls):
            name = f.name.replace("_", ".")
            if f.name in values or name not in props:
                continue
            raw = props[name].strip()
            if f.name == "broker_rack":
                values[f.name] = raw or None
            elif f.type in (bool, "bool"):
                values[f.name] = raw.lower() == "true"
            else:
                values[f.name] = int(raw)
        return cls(**values)  # type: ignore[arg-type]
