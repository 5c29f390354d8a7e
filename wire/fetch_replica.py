"""Who sends a Fetch: the fetching replica's broker id, or -1 for a consumer.

A field of the decoded request whose place moved (KIP-903: ``replica_state`` from v15),
read by the Fetch handler (what a follower may read) and by the client quotas
(replication is never throttled): one reading for both, as Kafka's
``FetchRequest.replicaId()``.
"""

from __future__ import annotations


def replica_id_of(body: dict, version: int) -> int:
    """The fetching replica's broker id, -1 for consumers (KIP-903 moved it in v15)."""
    if version >= 15:
        state = body.get("replica_state")
        return state["replica_id"] if state else -1
    return body.get("replica_id", -1)
