"""The one shape of the broker's durable stores, and their two errors.

Four kinds of admin-set state are kept the same way: client quotas, SCRAM credentials,
ACLs and client-metrics subscriptions. On a single node each is a JSON file in the data
dir, replaced atomically before a change is answered; in a cluster each lives in
ZooKeeper, shared by every broker. Which of the two a broker uses is decided once, when
the store is opened (each concept's ``open_*`` factory); the code above a store never asks
whether the broker is clustered.

Both kinds fail the same two ways, so callers catch two things, not one per store:
``StoreFileError`` (a file that cannot be read stops the start: serving without the
limits, users or DENY rules that were acknowledged would be worse) and
``StoreUnavailable`` (ZooKeeper did not answer or kept changing under us: the request
fails, the broker carries on). A file that cannot be written raises ``OSError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

__all__ = ["DurableStore", "StoreFileError", "StoreUnavailable"]

Snapshot = TypeVar("Snapshot", covariant=True)
Change = TypeVar("Change", contravariant=True)


class StoreFileError(ValueError):
    """A store's file in the data dir cannot be read: the broker refuses to start (one
    line for the operator) rather than run with less than was acknowledged."""


class StoreUnavailable(RuntimeError):
    """ZooKeeper did not answer, or kept changing under us: nothing is known to have
    changed, the request that needed the store fails and the broker carries on."""


class DurableStore(Protocol[Snapshot, Change]):
    """A durable store of entity entries: a file on one node, ZooKeeper in a cluster.

    ``read`` gives the entries as the store holds them now (a cluster's store may ask
    ZooKeeper); ``apply`` makes a change durable before it returns (what it returns is
    the store's own: the subscription stores give the configs the change made), and
    only then tells the ``on_change`` listeners. A cluster's store that watches
    ZooKeeper (quotas, ACLs) tells them of other brokers' changes too. Listeners run on
    the trio loop and must not block."""

    async def read(self) -> Snapshot: ...

    async def apply(self, change: Change, /) -> object: ...

    def on_change(self, listener: Callable[[Snapshot], None], /) -> None: ...
