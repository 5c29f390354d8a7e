"""The broker's SASL state: its settings and its SCRAM credential store (the data dir's on
a single node, ZooKeeper's ``/config/users`` in a cluster).

Made on first use (``sasl_of``) and kept on the broker, so a broker with no SASL
listener never builds it; ``open_broker_sasl`` loads the credential store up front
(at start, so that an unreadable file stops the broker rather than its users).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.sasl.scram_store import open_scram_store
from kafkette.broker.security.sasl.settings import SaslSettings

if TYPE_CHECKING:
    from kafkette.broker.security.sasl.scram_store import ScramCredentialStore
    from kafkette.broker.security.sasl.zk_scram_store import ZkScramCredentialStore
    from kafkette.broker.server import Broker

_ATTRIBUTE = "_kafkette_sasl"


class BrokerSasl:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.settings = SaslSettings.from_config(broker.config.explicit)
        self._store: ScramCredentialStore | ZkScramCredentialStore | None = None
        self._loading = trio.Lock()
        # AlterUserScramCredentials: one change at a time, written then swapped in.
        self.alter_lock = trio.Lock()

    async def scram_store(self) -> ScramCredentialStore | ZkScramCredentialStore:
        """The data dir's credentials on a single node; ZooKeeper's in a cluster (opened
        at first use by ``open_scram_store``, which makes that choice)."""
        if self._store is None:
            async with self._loading:
                if self._store is None:
                    self._store = await open_scram_store(self.broker)
        return self._store


def sasl_of(broker: Broker) -> BrokerSasl:
    state = getattr(broker, _ATTRIBUTE, None)
    if state is None:
        state = BrokerSasl(broker)
        setattr(broker, _ATTRIBUTE, state)
    return state


async def open_broker_sasl(broker: Broker) -> None:
    """Load the SCRAM credentials now (raises StoreFileError)."""
    await sasl_of(broker).scram_store()
