"""Client quotas in a cluster: ZooKeeper's ``/config/users|clients|ips`` in Kafka's JSON.

Two brokers on one chroot: a quota altered through the first is in ZooKeeper as Kafka
writes it (a user's SCRAM credential beside it is kept), the change notification is in
``/config/changes``, and the second broker describes it and enforces it (its watch).
Skips when ZooKeeper is not installed.
"""

from __future__ import annotations

import json
import time

from kafka.protocol.admin import AlterClientQuotasRequest as Alter
from kafka.protocol.admin import DescribeClientQuotasRequest as Describe

from bench.harness.raw_wire import raw_request


def _request(bootstrap: str, request, version: int = 1):  # type: ignore[no-untyped-def]
    """One request on a fresh connection (kafka-python's encoder); its decoded answer."""
    return raw_request(bootstrap, request, version, "quota-test")


def test_a_quota_altered_at_one_broker_is_in_zookeeper_and_at_the_other(
    zookeeper_connect, kazoo_client, zk_member
) -> None:
    zk = kazoo_client(zookeeper_connect)
    scram = "salt=c2FsdA==,stored_key=a2V5,server_key=a2V5,iterations=4096"
    zk.create("/config/users/alice", json.dumps(
        {"version": 1, "config": {"SCRAM-SHA-256": scram}}).encode(), makepath=True)
    with zk_member(1) as first, zk_member(2) as second:
        request = Alter(entries=[
            Alter.EntryData(
                entity=[Alter.EntryData.EntityData(entity_type="user", entity_name="alice")],
                ops=[Alter.EntryData.OpData(key="producer_byte_rate", value=1024.0, remove=False)],
            ),
            Alter.EntryData(
                entity=[Alter.EntryData.EntityData(entity_type="user", entity_name="alice"),
                        Alter.EntryData.EntityData(entity_type="client-id", entity_name=None)],
                ops=[Alter.EntryData.OpData(key="consumer_byte_rate", value=2048.0, remove=False)],
            ),
        ], validate_only=False)  # fmt: skip
        answer = _request(first.bootstrap, request)
        assert [e.error_code for e in answer.entries] == [0, 0]

        user = json.loads(zk.get("/config/users/alice")[0])
        assert user == {"version": 1, "config": {"SCRAM-SHA-256": scram,
                                                 "producer_byte_rate": "1024"}}  # fmt: skip
        pair = json.loads(zk.get("/config/users/alice/clients/<default>")[0])
        assert pair == {"version": 1, "config": {"consumer_byte_rate": "2048"}}
        notes = [json.loads(zk.get(f"/config/changes/{name}")[0])
                 for name in zk.get_children("/config/changes")]  # fmt: skip
        assert {"version": 2, "entity_path": "users/alice/clients/<default>"} in notes

        # the second broker's watch made it enforce the quota too (before anything asks it)
        deadline = time.monotonic() + 15
        manager = second.broker.client_quotas
        while not manager.active and time.monotonic() < deadline:
            time.sleep(0.05)
        assert manager.resolve("alice", "any")["producer_byte_rate"][0] == 1024.0

        described = _request(second.bootstrap, Describe(components=[
            Describe.ComponentData(entity_type="user", match_type=0, match="alice")
        ], strict=False))  # fmt: skip
        entries = {
            tuple((x.entity_type, x.entity_name) for x in e.entity):
                {v.key: v.value for v in e.values}
            for e in described.entries
        }  # fmt: skip
        assert entries == {
            (("user", "alice"),): {"producer_byte_rate": 1024.0},
            (("client-id", None), ("user", "alice")): {"consumer_byte_rate": 2048.0},
        }
