"""Client quotas: the configs (DescribeClientQuotas / AlterClientQuotas) and throttling.

- entities.py: quota entities (user, client-id, ip, defaults) and Kafka's checks;
- store.py: one node's quotas in the data dir (``client-quotas.json``);
  zk_store.py: a cluster's, in ZooKeeper's ``/config/users|clients|ips``; both are a
  ``durable_store.DurableStore`` and ``open_quota_store`` picks one at start;
- rate.py: Kafka's sampled rate (``quota.window.num`` x ``quota.window.size.seconds``);
- manager.py: which quota applies to a (user, client id), and the throttle time;
- enforcement.py: the answer path's quota decisions (throttle time, the throttled answer's shape).

docs/quotas.md says what is enforced and how.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.durable_store import DurableStore
from kafkette.broker.quotas.manager import QuotaManager
from kafkette.broker.quotas.store import Changes, FileQuotaStore, Quotas

if TYPE_CHECKING:
    from kafkette.broker.server import Broker

__all__ = ["QuotaManager", "QuotaStore", "open_quota_store"]

QuotaStore = DurableStore[Quotas, Changes]


async def open_quota_store(broker: Broker) -> QuotaStore:
    """The cluster's store in cluster mode, else the data dir's (read in a worker
    thread). Raises StoreFileError (a damaged file) or StoreUnavailable (ZooKeeper)."""
    if broker.cluster is not None:
        from kafkette.broker.quotas.zk_store import ZkQuotaStore

        return await ZkQuotaStore.open(broker.cluster.session)

    import trio

    return await trio.to_thread.run_sync(FileQuotaStore.load, broker.config.data_dir)
