"""Producer ids unique across the cluster, in blocks claimed from ZooKeeper.

Each broker used to hand out ids from its own data dir; two brokers of one
cluster would then give two producers the same id, and their sequences would
collide in a partition both write. Kafka's ZooKeeper-era brokers claim blocks of
1000 ids from ``/latest_producer_id_block``
(``{"version":1,"broker":N,"block_start":"S","block_end":"E"}``, ``E``
inclusive) with a write conditional on the znode version, so no two brokers
ever claim the same block; kafkette does the same. A block's ids not used when
the broker stops are skipped, as in Kafka.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING

from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError, NoNodeError

if TYPE_CHECKING:
    from kafkette.broker.cluster.zk_session import ZkSession

PATH = "/latest_producer_id_block"
BLOCK_SIZE = 1000
MAX_ATTEMPTS = 50


def encode_block(broker_id: int, start: int, end: int) -> bytes:
    return json.dumps(
        {"version": 1, "broker": broker_id, "block_start": str(start), "block_end": str(end)},
        separators=(",", ":"),
    ).encode()


def decode_block_end(data: bytes) -> int:
    return int(json.loads(data.decode())["block_end"])


class ZkProducerIdAllocator:
    """``allocate()`` as ``broker/producer_ids.py``'s (called in a worker thread); a new
    block costs one or two ZooKeeper round trips, every 1000 ids."""

    def __init__(self, session: ZkSession, broker_id: int) -> None:
        self._session = session
        self._broker_id = broker_id
        self._lock = threading.Lock()
        self._next = 0
        self._end = -1  # inclusive; nothing claimed yet

    def allocate(self) -> int:
        """The next id. ZooKeeper unreachable for a new block raises ConnectionError (an
        OSError, as a local block that cannot be persisted): InitProducerId then answers
        COORDINATOR_LOAD_IN_PROGRESS, as Kafka does while it waits for a block."""
        with self._lock:
            if self._next > self._end:
                try:
                    self._next, self._end = self._claim_block()
                except KazooException as exc:
                    raise ConnectionError(
                        f"cannot claim a producer id block from ZooKeeper: {exc!r}"
                    ) from exc
            producer_id = self._next
            self._next += 1
            return producer_id

    def _claim_block(self) -> tuple[int, int]:
        client = self._session.client
        for _ in range(MAX_ATTEMPTS):
            try:
                data, stat = client.get(PATH)
            except NoNodeError:
                data, stat = None, None
            if data is None or not data.strip():
                start = 0
            else:
                start = decode_block_end(data) + 1
            end = start + BLOCK_SIZE - 1
            block = encode_block(self._broker_id, start, end)
            try:
                if stat is None:
                    client.create(PATH, block)
                else:
                    client.set(PATH, block, version=stat.version)
            except (BadVersionError, NodeExistsError):
                continue  # another broker claimed one meanwhile: read again
            return start, end
        raise RuntimeError(f"could not claim a producer id block in {MAX_ATTEMPTS} attempts")
