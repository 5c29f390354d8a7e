"""A share group's own configs (GROUP config resources) and the settings they make.

Kafka lets an operator set per-group configs with IncrementalAlterConfigs on a GROUP
resource (``kafka-configs.sh --entity-type groups``); the share group configs override
the broker's ``group.share.*`` defaults within the broker's min/max bounds. The most
used is ``share.auto.offset.reset``: where a new share partition starts (``latest``
by default, so a new group sees only what is produced after it first fetches).

On a single node they are kept in ``group-configs.json`` in the data dir (replaced
atomically, read at first use): ``{"version": 1, "groups": {"<group>": {name: value}}}``;
in a cluster in ZooKeeper, shared by every broker (``group_config_zk.py``).
Only the ``share.*`` names are served; the validators and messages are Kafka's.
"""

from __future__ import annotations

import json
import re
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from kafkette.broker.durable_store import StoreFileError
from kafkette.log.checkpoint import atomic_write

if TYPE_CHECKING:
    from kafkette.broker.groups.config import GroupConfig
    from kafkette.broker.partitions import Partition
    from kafkette.broker.server import Broker
    from kafkette.broker.share_groups.group_config_zk import ZkGroupConfigStore

FILE_NAME = "group-configs.json"
RESOURCE_GROUP = 32  # Kafka's ConfigResource.Type.GROUP

# name -> (type, broker config giving the default, the min/max bound configs' suffix)
SHARE_GROUP_CONFIGS: dict[str, tuple[str, str | None, str | None]] = {
    "share.session.timeout.ms": ("INT", "group.share.session.timeout.ms", "session.timeout.ms"),
    "share.heartbeat.interval.ms": (
        "INT", "group.share.heartbeat.interval.ms", "heartbeat.interval.ms"),
    "share.record.lock.duration.ms": (
        "INT", "group.share.record.lock.duration.ms", "record.lock.duration.ms"),
    "share.delivery.count.limit": (
        "INT", "group.share.delivery.count.limit", "delivery.count.limit"),
    "share.partition.max.record.locks": (
        "INT", "group.share.partition.max.record.locks", "partition.max.record.locks"),
    "share.auto.offset.reset": ("STRING", None, None),
    "share.isolation.level": ("STRING", None, None),
    "share.renew.acknowledge.enable": ("BOOLEAN", None, None),
}
STRING_DEFAULTS = {
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.renew.acknowledge.enable": "true",
}
_DURATION = re.compile(
    r"^P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


class GroupConfigError(ValueError):
    """A group config Kafka refuses (INVALID_CONFIG), with Kafka's message."""


def _field(name: str) -> str:
    return name.replace(".", "_")


def default_of(name: str, groups: GroupConfig) -> str:
    _kind, broker_name, _bound = SHARE_GROUP_CONFIGS[name]
    if broker_name is None:
        return STRING_DEFAULTS[name]
    return str(getattr(groups, _field(broker_name)))


def duration_ms(text: str) -> int:
    """An ISO-8601 duration (``PT1H``, ``P1DT30M``) in milliseconds."""
    match = _DURATION.match(text)
    if match is None or text in ("P", "PT"):
        raise GroupConfigError(f"invalid duration {text!r}")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    seconds = parts["d"] * 86400 + parts["h"] * 3600 + parts["m"] * 60 + parts["s"]
    return int(seconds * 1000)


def validate(name: str, value: str, groups: GroupConfig) -> None:
    """Kafka's GroupConfig validators, raising GroupConfigError with its wording."""
    if name not in SHARE_GROUP_CONFIGS:
        raise GroupConfigError(f"Unknown group config name: {name}")
    kind, _broker_name, bound = SHARE_GROUP_CONFIGS[name]
    if kind == "INT":
        try:
            number = int(value)
        except ValueError:
            raise GroupConfigError(
                f"Invalid value {value} for configuration {name}: Not a number of type INT"
            ) from None
        if bound is not None:
            low = getattr(groups, _field(f"group.share.min.{bound}"))
            high = getattr(groups, _field(f"group.share.max.{bound}"))
            if number < low:
                raise GroupConfigError(
                    f"Invalid value {number} for configuration {name}: Value must be at "
                    f"least {low}")
            if number > high:
                raise GroupConfigError(
                    f"Invalid value {number} for configuration {name}: Value must be no "
                    f"more than {high}")
    elif name == "share.auto.offset.reset":
        lowered = value.lower()
        if lowered.startswith("by_duration:"):
            duration_ms(value.split(":", 1)[1])
        elif lowered not in ("latest", "earliest"):
            raise GroupConfigError(
                f"Invalid value {value} for configuration {name}: Invalid value `{value}` "
                "for configuration share.auto.offset.reset. The value must be either "
                "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."
            )
    elif name == "share.isolation.level":
        if value not in ("read_committed", "read_uncommitted"):
            raise GroupConfigError(
                f"Invalid value {value} for configuration {name}: String must be one of: "
                "read_committed, read_uncommitted")
    elif kind == "BOOLEAN" and value.lower() not in ("true", "false"):
        raise GroupConfigError(
            f"Invalid value {value} for configuration {name}: Expected value to be either "
            "true or false")


class GroupConfigStore:
    """Per-group configs of one broker: memory, and the data dir's file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._configs: dict[str, dict[str, str]] | None = None
        self._lock = threading.Lock()

    def _loaded(self) -> dict[str, dict[str, str]]:
        if self._configs is None:
            try:
                raw = json.loads(self._path.read_text())
                self._configs = {str(g): {str(k): str(v) for k, v in c.items()}
                                 for g, c in raw["groups"].items()}
            except FileNotFoundError:
                self._configs = {}
            except (ValueError, KeyError, AttributeError) as exc:
                raise StoreFileError(f"{self._path} is damaged: {exc}") from None
        return self._configs

    def get(self, group_id: str) -> dict[str, str]:
        return dict(self._loaded().get(group_id, {}))

    def replace(self, group_id: str, configs: dict[str, str]) -> None:
        """Set ``group_id``'s whole set (empty: none), on disk before in memory."""
        with self._lock:
            current = {g: dict(c) for g, c in self._loaded().items()}
            if configs:
                current[group_id] = dict(configs)
            else:
                current.pop(group_id, None)
            text = json.dumps({"version": 1, "groups": current}, indent=1, sort_keys=True)
            atomic_write(self._path, text.encode())
            self._configs = current


_stores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def open_cluster_group_configs(broker: Broker, nursery: trio.Nursery) -> None:
    """Cluster mode, at start: the group configs shared in ZooKeeper
    (``group_config_zk.py``), loaded before the broker serves."""
    from kafkette.broker.share_groups.group_config_zk import ZkGroupConfigStore

    assert broker.cluster is not None
    store = ZkGroupConfigStore(broker.cluster.session)
    await store.start(nursery)
    _stores[broker] = store


def store_of(broker: Broker) -> GroupConfigStore | ZkGroupConfigStore:
    """The broker's store: a cluster's, opened at start; a single node's file, made on
    first use (a broker that never sees a group config reads no file)."""
    store = _stores.get(broker)
    if store is None:
        store = _stores[broker] = GroupConfigStore(Path(broker.config.data_dir) / FILE_NAME)
    return store


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    """What a share group runs with: its configs over the broker's defaults."""

    record_lock_duration_ms: int
    delivery_count_limit: int
    partition_max_record_locks: int
    auto_offset_reset: str
    read_committed: bool
    renew_acknowledge_enabled: bool

    @classmethod
    def of(cls, broker: Broker, group_id: str) -> ShareGroupSettings:
        groups = broker.config.groups
        own = store_of(broker).get(group_id)

        def value(name: str) -> str:
            return own.get(name, default_of(name, groups))

        return cls(
            record_lock_duration_ms=int(value("share.record.lock.duration.ms")),
            delivery_count_limit=int(value("share.delivery.count.limit")),
            partition_max_record_locks=int(value("share.partition.max.record.locks")),
            auto_offset_reset=value("share.auto.offset.reset"),
            read_committed=value("share.isolation.level") == "read_committed",
            renew_acknowledge_enabled=value("share.renew.acknowledge.enable").lower() == "true",
        )

    def start_offset(self, partition: Partition) -> int:
        """Worker thread: where a new share partition starts (Kafka: the log start for
        earliest, the high watermark for latest, the first record stamped since
        now - duration for by_duration)."""
        reset = self.auto_offset_reset.lower()
        if reset == "earliest":
            return partition.log_start_offset
        if reset.startswith("by_duration:"):
            import time

            since = int(time.time() * 1000) - duration_ms(self.auto_offset_reset.split(":", 1)[1])
            return min(partition.first_offset_since(since), partition.high_watermark)
        return partition.high_watermark
