"""The broker's client metrics subscriptions: one store, a file or ZooKeeper, chosen at start.

A single node keeps them in its data dir (file_store.py); a cluster in ZooKeeper
(zk_store.py), shared by every broker as Kafka shares them in its metadata. Both are a
``durable_store.DurableStore[Subscriptions, SubscriptionChange]`` with ``names`` and
``configs`` for the admin APIs. ``open_client_metrics`` makes the choice once, when the
broker starts; the handlers and the telemetry APIs only ever ask ``store_of``.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.broker.telemetry.file_store import SubscriptionStore
    from kafkette.broker.telemetry.zk_store import ZkSubscriptionStore

# subscription name -> config name -> value
Subscriptions = dict[str, dict[str, str]]


@dataclass(frozen=True, slots=True)
class SubscriptionChange:
    """Make one subscription's configs ``edit(current)`` (``edit`` may raise, and may be
    called again if another writer got there first); an empty result removes it. With
    ``validate_only`` nothing is written: the store only says what the result would be."""

    name: str
    edit: Callable[[dict[str, str]], dict[str, str]]
    validate_only: bool = False


_stores: weakref.WeakKeyDictionary[Broker, SubscriptionStore | ZkSubscriptionStore] = (
    weakref.WeakKeyDictionary()
)


async def open_client_metrics(broker: Broker) -> None:
    """Open the broker's subscription store at start: a cluster's in ZooKeeper, else the
    data dir's file, read now (a damaged one raises StoreFileError and the start stops,
    as for the quotas file). Kept beside the broker, so that the broker itself needs no
    field for a feature most deployments never use."""
    store: SubscriptionStore | ZkSubscriptionStore
    if broker.cluster is not None:
        from kafkette.broker.telemetry.zk_store import ZkSubscriptionStore

        store = ZkSubscriptionStore(broker.cluster.session)
    else:
        from pathlib import Path

        from kafkette.broker.telemetry.file_store import FILE_NAME, SubscriptionStore

        store = SubscriptionStore(Path(broker.config.data_dir) / FILE_NAME)
        await store.load()
    _stores[broker] = store


def store_of(broker: Broker) -> SubscriptionStore | ZkSubscriptionStore:
    """The store ``open_client_metrics`` opened for the broker; a single node that had no
    file at start skips the opening (so a plain start loads nothing of telemetry) and gets
    an empty store here, on first use."""
    store = _stores.get(broker)
    if store is None:
        from pathlib import Path

        from kafkette.broker.telemetry.file_store import FILE_NAME, SubscriptionStore

        store = _stores[broker] = SubscriptionStore(Path(broker.config.data_dir) / FILE_NAME)
    return store
