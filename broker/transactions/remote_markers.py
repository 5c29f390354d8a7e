"""Transaction markers for partitions another broker leads (cluster mode).

Kafka's transaction coordinator sends WriteTxnMarkers to the leader of each
partition of a transaction (its TransactionMarkerChannelManager); the leader
appends the marker (a ``__consumer_offsets`` leader through its group
coordinator) and answers once it is committed. Here one ``PeerClient`` per
broker carries them, one partition per request (one request in flight per
broker; the coordinator writes a transaction's partitions concurrently).

Failures are answered as error codes the coordinator retries: a broker that
cannot be reached, or answers too late, is NOT_LEADER_OR_FOLLOWER (by the time
of the retry the metadata may name another leader).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.cluster.peer_client import PeerClient, PeerError, PeerSecurity
from kafkette.broker.throttled_log import ThrottledLog
from kafkette.wire.apis import ApiKey
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.cluster.metadata import BrokerInfo

log = logging.getLogger("kafkette.transactions")
_failures = ThrottledLog(log, interval_s=10.0)  # a dead broker is retried every 0.5 s

WRITE_TXN_MARKERS_VERSION = 1
MAX_RESPONSE_BYTES = 1024 * 1024


class RemoteMarkers:
    """WriteTxnMarkers to other brokers, one connection each. Event loop only."""

    def __init__(self, own_id: int, security: PeerSecurity) -> None:
        """``security``: how to reach the other brokers (``Broker.peer_security``)."""
        self._client_id = f"txn-marker-sender-{own_id}"
        self._security = security
        self._peers: dict[int, PeerClient] = {}

    def _peer(self, leader: BrokerInfo) -> PeerClient:
        peer = self._peers.get(leader.id)
        if peer is None or (peer.host, peer.port) != (leader.host, leader.port):
            peer = PeerClient(
                leader.host, leader.port, self._client_id, MAX_RESPONSE_BYTES, self._security
            )
            self._peers[leader.id] = peer
        return peer

    async def write(
        self,
        leader: BrokerInfo,
        topic: str,
        index: int,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        committed: bool,
        timeout_s: float,
    ) -> ErrorCode:
        """Have ``leader`` write the marker into ``topic``-``index``; its answer."""
        body = {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "transaction_result": committed,
                    "topics": [{"name": topic, "partition_indexes": [index]}],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        }
        try:
            with trio.fail_after(timeout_s):
                response = await self._peer(leader).request(
                    ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body
                )
        except (PeerError, trio.TooSlowError) as exc:
            _failures.log(
                ("write-txn-markers", leader.id), logging.INFO,
                f"WriteTxnMarkers to broker {leader.id} failed: {exc!r}",
            )
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        for marker in response.body["markers"]:
            for result_topic in marker["topics"]:
                for partition in result_topic["partitions"]:
                    if partition["partition_index"] == index:
                        try:
                            return ErrorCode(partition["error_code"])
                        except ValueError:  # a code this broker does not know: retried
                            return ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.UNKNOWN_SERVER_ERROR

    async def aclose(self) -> None:
        for peer in self._peers.values():
            await peer.aclose()
        self._peers.clear()
