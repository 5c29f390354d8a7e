"""The share coordinator's inter-broker state APIs (83-87) on a single node: advertised as
Kafka's brokers advertise them, answered from ``__share_group_state`` (a cluster's
coordinators, fencing and moves: tests/cluster/test_share_groups_cluster.py)."""

from __future__ import annotations

import uuid

from bench.harness import raw_wire
from kafkette.wire.apis import ApiKey


def _one(answer: dict) -> dict:
    return answer["results"][0]["partitions"][0]


def _body(group: str, tid: uuid.UUID, **part) -> dict:
    return {"group_id": group, "topics": [{"topic_id": tid, "partitions": [
        {"partition": 0, **part}]}]}


def test_state_apis_write_read_summary_delete(broker, names) -> None:
    _topic, group = names
    tid = uuid.uuid4()
    address = broker.bootstrap
    versions = raw_wire.call(address, ApiKey.API_VERSIONS, 3, {
        "client_software_name": "t", "client_software_version": "1"})
    advertised = {k["api_key"]: (k["min_version"], k["max_version"])
                  for k in versions["api_keys"]}
    assert advertised[83] == (0, 0) and advertised[85] == (0, 1) and advertised[87] == (0, 1)

    read = _one(raw_wire.call(address, ApiKey.READ_SHARE_GROUP_STATE, 0,
                              _body(group, tid, leader_epoch=-1)))
    assert (read["error_code"], read["start_offset"], read["state_batches"]) == (0, -1, [])
    batches = [{"first_offset": 10, "last_offset": 12, "delivery_state": 2,
                "delivery_count": 1}]
    written = _one(raw_wire.call(address, ApiKey.WRITE_SHARE_GROUP_STATE, 1, _body(
        group, tid, state_epoch=1, leader_epoch=0, start_offset=10,
        delivery_complete_count=3, state_batches=batches)))
    assert written["error_code"] == 0
    read = _one(raw_wire.call(address, ApiKey.READ_SHARE_GROUP_STATE, 0,
                              _body(group, tid, leader_epoch=0)))
    assert (read["error_code"], read["state_epoch"], read["start_offset"]) == (0, 1, 10)
    assert read["state_batches"] == batches
    summary = _one(raw_wire.call(address, ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 1,
                                 _body(group, tid, leader_epoch=0)))
    assert (summary["error_code"], summary["start_offset"],
            summary["delivery_complete_count"]) == (0, 10, 3)
    deleted = _one(raw_wire.call(address, ApiKey.DELETE_SHARE_GROUP_STATE, 0,
                                 _body(group, tid)))
    assert deleted["error_code"] == 0
    read = _one(raw_wire.call(address, ApiKey.READ_SHARE_GROUP_STATE, 0,
                              _body(group, tid, leader_epoch=-1)))
    assert read["start_offset"] == -1
