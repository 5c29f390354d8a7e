"""Group coordinator glue (placeholder until the group state machine lands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from kafkette.broker.server import Broker


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def load(self) -> None:
        return None

    async def start(self, nursery: trio.Nursery) -> None:
        return None
