"""Making ``broker.authorizer`` at start, importing the authorizer only when one is
configured (a broker without one starts exactly as before)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkette.broker.security.authorizer.authorizer import Authorizer
    from kafkette.broker.server import Broker

log = logging.getLogger("kafkette.authorizer")


async def open_authorizer(broker: Broker) -> Authorizer | None:
    """The configured authorizer with its ACLs loaded (from ZooKeeper in a cluster,
    else the data dir: ``open_acl_store`` chooses), or None. Raises ValueError with one
    line for the operator."""
    if not broker.config.explicit.get("authorizer.class.name", "").strip():
        return None
    from kafkette.broker.security.authorizer.authorizer import authorizer_from_config
    from kafkette.broker.security.authorizer.store import open_acl_store

    authorizer = authorizer_from_config(broker.config)
    assert authorizer is not None
    store = await open_acl_store(broker)
    authorizer.keep_in(store)
    log.info(
        "authorizer: %d ACLs %s, super.users=%s, allow.everyone.if.no.acl.found=%s",
        len(authorizer.index), store.origin,
        ",".join(sorted(authorizer.super_users)) or "(none)",
        str(authorizer.allow_if_no_acl).lower(),
    )
    return authorizer
