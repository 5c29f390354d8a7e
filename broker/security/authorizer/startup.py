"""Making ``broker.authorizer`` at start, importing the authorizer only when one is
configured (a broker without one starts exactly as before)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkette.broker.security.authorizer.authorizer import Authorizer
    from kafkette.broker.server import Broker


async def open_authorizer(broker: Broker) -> Authorizer | None:
    """The configured authorizer with its ACLs loaded (from ZooKeeper in a cluster,
    else the data dir), or None. Raises ValueError with one line for the operator."""
    if not broker.config.explicit.get("authorizer.class.name", "").strip():
        return None
    from kafkette.broker.security.authorizer.authorizer import authorizer_from_config

    authorizer = authorizer_from_config(broker.config)
    assert authorizer is not None
    if broker.cluster is not None:
        from kafkette.broker.security.authorizer.zk_store import open_shared_acls

        try:
            await open_shared_acls(broker, authorizer)
        except Exception as exc:  # ZooKeeper away, or unreadable: no start without ACLs
            raise ValueError(f"cannot read the ACLs from ZooKeeper: {exc}") from exc
    else:
        try:
            await authorizer.open(broker.config.data_dir)
        except OSError as exc:
            raise ValueError(f"cannot read the ACLs in {broker.config.data_dir}: {exc}") from exc
    return authorizer
