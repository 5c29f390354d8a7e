"""Kafka's ZooKeeper layout: every path and JSON document, built and parsed (pure).

The documents are the ones Kafka 2.x brokers write (so Kafka's own ZooKeeper
tools read them): broker registration v5, controller v1, topic assignment v3
with a topic id, partition state v1, topic config v1. Parsers accept what
Kafka's older versions wrote too where it costs nothing (no topic id: None).
"""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import dataclass, field

CLUSTER_ID = "/cluster/id"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONFIG_TOPICS = "/config/topics"
DELETE_TOPICS = "/admin/delete_topics"
# Created at start by every broker, as Kafka's KafkaZkClient.createTopLevelPaths does.
PERSISTENT_PATHS = (
    "/cluster",
    BROKER_IDS,
    BROKER_TOPICS,
    "/brokers/seqid",
    CONFIG_TOPICS,
    "/config/changes",
    "/config/brokers",
    DELETE_TOPICS,
    "/isr_change_notification",
    "/latest_producer_id_block",
)


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{topic}"


def partition_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}"


def state_path(topic: str, partition: int) -> str:
    return f"{BROKER_TOPICS}/{topic}/partitions/{partition}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _dump(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _load(data: bytes) -> dict:
    doc = json.loads(data.decode())
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, got {data[:80]!r}")
    return doc


# /cluster/id ------------------------------------------------------------------


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    return str(_load(data)["id"])


# /brokers/ids/<id> ------------------------------------------------------------

SCHEMA_REGISTRY_FIELD = "kafkette_schema_registry"


def encode_broker(
    host: str,
    port: int,
    rack: str | None,
    timestamp_ms: int,
    endpoints: list[tuple[str, str, str, int]] | None = None,
    schema_registry_url: str | None = None,
) -> bytes:
    """Kafka's registration v5. ``endpoints``: (listener, protocol, host, port) of every
    listener, the inter-broker one first (other brokers dial the endpoint of their
    ``inter.broker.listener.name``, see ``decode_broker``); None: one PLAINTEXT listener
    at host:port. ``host``/``port`` are the first PLAINTEXT-protocol endpoint's, as Kafka
    writes them for old clients. ``schema_registry_url``: kafkette's own field
    ``kafkette_schema_registry`` (Kafka's parser ignores fields it does not know)."""
    if endpoints is None:
        endpoints = [("PLAINTEXT", "PLAINTEXT", host, port)]
    plaintext = next((e for e in endpoints if e[1] == "PLAINTEXT"), None)
    extra = {} if not schema_registry_url else {SCHEMA_REGISTRY_FIELD: schema_registry_url}
    return _dump(
        {
            "listener_security_protocol_map": {name: proto for name, proto, _, _ in endpoints},
            "endpoints": [f"{name}://{_url_host(h)}:{p}" for name, _, h, p in endpoints],
            "jmx_port": -1,
            "features": {},
            "host": plaintext[2] if plaintext else None,
            "timestamp": str(timestamp_ms),
            "port": plaintext[3] if plaintext else -1,
            "version": 5,
            "rack": rack,
            **extra,
        }
    )


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _split_endpoint(text: str) -> tuple[str, str, int]:
    name, _, hostport = text.partition("://")
    host, _, port = hostport.rpartition(":")
    return name, host.strip("[]"), int(port)


def decode_broker(data: bytes, listener_name: str | None = None) -> tuple[str, int, str | None]:
    """(host, port, rack) where other brokers reach it: the endpoint of
    ``listener_name`` (``inter.broker.listener.name``, as Kafka's brokers choose), else
    its first endpoint; host/port for a registration with none. Raises ValueError (or
    KeyError) for a registration it cannot read."""
    doc = _load(data)
    endpoints = [_split_endpoint(e) for e in doc.get("endpoints") or []]
    if endpoints:
        _, host, port = next((e for e in endpoints if e[0] == listener_name), endpoints[0])
        return host, port, doc.get("rack")
    return str(doc["host"]), int(doc["port"]), doc.get("rack")


def decode_broker_endpoints(data: bytes) -> tuple[tuple[str, str, int], ...]:
    """Every listener of a registration: (listener name, host, port), in its order."""
    return tuple(_split_endpoint(e) for e in _load(data).get("endpoints") or [])


def decode_broker_schema_registry(data: bytes) -> str | None:
    """The registration's schema registry URL (kafkette's field), None without one."""
    url = _load(data).get(SCHEMA_REGISTRY_FIELD)
    return url if isinstance(url, str) and url else None


# /controller, /controller_epoch -----------------------------------------------


def encode_controller(broker_id: int, timestamp_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(timestamp_ms)})


def decode_controller(data: bytes) -> int:
    return int(_load(data)["brokerid"])


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_controller_epoch(data: bytes) -> int:
    return int(data.decode().strip())


# /brokers/topics/<topic> ------------------------------------------------------


def topic_id_to_str(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def topic_id_from_str(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<t>``. During a reassignment (KIP-455) ``replicas`` of a
    partition is the full set (target first, then the original replicas not in the
    target), ``adding`` the target replicas not in the original set and ``removing``
    the original replicas not in the target; both are empty otherwise."""

    topic_id: uuid.UUID | None
    replicas: dict[int, tuple[int, ...]]
    adding: dict[int, tuple[int, ...]] = field(default_factory=dict)
    removing: dict[int, tuple[int, ...]] = field(default_factory=dict)


def encode_topic(
    topic_id: uuid.UUID,
    replicas: dict[int, tuple[int, ...]],
    adding: dict[int, tuple[int, ...]] | None = None,
    removing: dict[int, tuple[int, ...]] | None = None,
) -> bytes:
    """Kafka's version 3 (2.8+): version 2's ``adding_replicas``/``removing_replicas``
    (only partitions being reassigned are listed) plus the topic id."""
    return _dump(
        {
            "version": 3,
            "topic_id": topic_id_to_str(topic_id),
            "partitions": {str(p): list(r) for p, r in sorted(replicas.items())},
            "adding_replicas": {str(p): list(r) for p, r in sorted((adding or {}).items()) if r},
            "removing_replicas": {
                str(p): list(r) for p, r in sorted((removing or {}).items()) if r
            },
        }
    )


def _partition_lists(raw: object, keep_empty: bool = False) -> dict[int, tuple[int, ...]]:
    if not isinstance(raw, dict):
        return {}
    return {int(p): tuple(int(b) for b in r) for p, r in raw.items() if r or keep_empty}


def decode_topic(data: bytes) -> TopicAssignment:
    doc = _load(data)
    raw_id = doc.get("topic_id")
    return TopicAssignment(
        topic_id_from_str(raw_id) if raw_id else None,
        _partition_lists(doc.get("partitions") or {}, keep_empty=True),
        _partition_lists(doc.get("adding_replicas") or {}),
        _partition_lists(doc.get("removing_replicas") or {}),
    )


# /brokers/topics/<topic>/partitions/<p>/state ---------------------------------


@dataclass(frozen=True, slots=True)
class StateDoc:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


def encode_state(
    leader: int, leader_epoch: int, isr: tuple[int, ...], controller_epoch: int
) -> bytes:
    return _dump(
        {
            "controller_epoch": controller_epoch,
            "leader": leader,
            "version": 1,
            "leader_epoch": leader_epoch,
            "isr": list(isr),
        }
    )


def decode_state(data: bytes) -> StateDoc:
    doc = _load(data)
    return StateDoc(
        int(doc["leader"]),
        int(doc["leader_epoch"]),
        tuple(int(b) for b in doc["isr"]),
        int(doc["controller_epoch"]),
    )


# /config/topics/<topic> -------------------------------------------------------


def encode_topic_config(configs: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": dict(sorted(configs.items()))})


def decode_topic_config(data: bytes) -> dict[str, str]:
    return {str(k): str(v) for k, v in (_load(data).get("config") or {}).items()}
