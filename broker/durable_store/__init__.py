"""Durable entity stores: a file on a single node, ZooKeeper in a cluster.

- contract.py: the ``DurableStore`` protocol the four stores (client quotas, SCRAM
  credentials, ACLs, client-metrics subscriptions) implement, and their two errors;
- entity_znode.py: Kafka's ``/config/<type>/<name>`` znodes, shared by the ZooKeeper
  stores that write them (kazoo imported lazily).

Light to import: a single-node broker loads this at start without kazoo.
"""

from kafkette.broker.durable_store.contract import DurableStore, StoreFileError, StoreUnavailable

__all__ = ["DurableStore", "StoreFileError", "StoreUnavailable"]
