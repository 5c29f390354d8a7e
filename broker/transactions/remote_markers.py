"""Requests a broker sends other brokers for transactions (cluster mode): markers for
partitions another broker leads, and TV2's implicit AddPartitionsToTxn to the coordinator.

Kafka's transaction coordinator sends WriteTxnMarkers to the leader of each
partition of a transaction (its TransactionMarkerChannelManager); the leader
appends the marker (a ``__consumer_offsets`` leader through its group
coordinator) and answers once it is committed. Here one ``PeerClient`` per
broker carries them, one partition per request (one request in flight per
broker; the coordinator writes a transaction's partitions concurrently).

Failures are answered as error codes the coordinator retries: a broker that
cannot be reached, or answers too late, is NOT_LEADER_OR_FOLLOWER (by the time
of the retry the metadata may name another leader).

With transaction.version 2 a client no longer sends AddPartitionsToTxn: the leader of
a partition it writes transactionally (Produce 12+, TxnOffsetCommit 5) adds the
partition at the transaction coordinator itself, as Kafka's AddPartitionsToTxnManager
does, with the brokers' batched AddPartitionsToTxn (v5, verify_only false).
``RemoteAddPartitions`` sends it when another broker coordinates the id; an
unreachable coordinator is NETWORK_EXCEPTION, as Kafka's manager answers it (the
Produce and TxnOffsetCommit handlers turn it into what their clients retry).
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
ADD_PARTITIONS_TO_TXN_VERSION = 5  # the brokers' batched form, as Kafka 4.0 sends it
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


class RemoteAddPartitions:
    """AddPartitionsToTxn (verify_only false) to the coordinator of a transactional id
    on another broker, one connection per broker. Event loop only."""

    def __init__(self, own_id: int, security: PeerSecurity) -> None:
        self._client_id = f"add-partitions-to-txn-{own_id}"
        self._security = security
        self._peers: dict[int, PeerClient] = {}

    def _peer(self, coordinator: BrokerInfo) -> PeerClient:
        peer = self._peers.get(coordinator.id)
        if peer is None or (peer.host, peer.port) != (coordinator.host, coordinator.port):
            peer = PeerClient(
                coordinator.host, coordinator.port, self._client_id, MAX_RESPONSE_BYTES,
                self._security,
            )
            self._peers[coordinator.id] = peer
        return peer

    async def add(
        self,
        coordinator: BrokerInfo,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[tuple[str, int]],
        *,
        timeout_s: float,
    ) -> ErrorCode:
        """Have ``coordinator`` add ``partitions`` to the transaction; its answer (the first
        error of any partition, NONE if all were added)."""
        topics: dict[str, list[int]] = {}
        for topic, index in sorted(partitions):
            topics.setdefault(topic, []).append(index)
        body = {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "verify_only": False,
                    "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                }
            ]
        }
        try:
            with trio.fail_after(timeout_s):
                response = await self._peer(coordinator).request(
                    ApiKey.ADD_PARTITIONS_TO_TXN, ADD_PARTITIONS_TO_TXN_VERSION, body
                )
        except (PeerError, trio.TooSlowError) as exc:
            _failures.log(
                ("add-partitions-to-txn", coordinator.id), logging.INFO,
                f"AddPartitionsToTxn to broker {coordinator.id} failed: {exc!r}",
            )
            return ErrorCode.NETWORK_EXCEPTION
        top = response.body.get("error_code", 0)
        if top:  # Kafka: CLUSTER_AUTHORIZATION_FAILED is not shown to clients as such
            if top == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                return ErrorCode.INVALID_TXN_STATE
            return _known(top)
        for result in response.body["results_by_transaction"]:
            for topic in result["topic_results"]:
                for partition in topic["results_by_partition"]:
                    if partition["partition_error_code"]:
                        return _known(partition["partition_error_code"])
        return ErrorCode.NONE

    async def aclose(self) -> None:
        for peer in self._peers.values():
            await peer.aclose()
        self._peers.clear()


def _known(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:  # a code this broker does not know
        return ErrorCode.UNKNOWN_SERVER_ERROR
