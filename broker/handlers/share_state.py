"""The share coordinator's inter-broker state APIs (KIP-932): InitializeShareGroupState
(83), ReadShareGroupState (84), WriteShareGroupState (85), DeleteShareGroupState (86),
ReadShareGroupStateSummary (87).

A data partition's leader sends them to the leader of the share partition's
``__share_group_state`` partition (``share_groups/persister.py``); the answers are the
share coordinator's (``share_groups/coordinator.py``), per partition. As in Kafka the
caller needs CLUSTER_ACTION on the cluster (every partition CLUSTER_AUTHORIZATION_FAILED
otherwise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.broker.security.authorizer.checks import CLUSTER_ACTION, cluster_denied
from kafkette.broker.share_groups import state_records as rec
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request


def _each(broker: Broker, request: Request, answer):
    """Run ``await answer(key, partition dict) -> dict`` for every partition asked."""

    async def run() -> dict:
        body = request.body
        refused = cluster_denied(broker, request, CLUSTER_ACTION)
        results = []
        for topic in body["topics"]:
            parts = []
            for part in topic["partitions"]:
                key = (body["group_id"], topic["topic_id"], part["partition"])
                if refused:
                    entry = {"error_code": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)}
                elif not body["group_id"] or part["partition"] < 0:
                    entry = {"error_code": int(ErrorCode.INVALID_REQUEST)}
                else:
                    entry = await answer(key, part)
                entry.setdefault("error_message", None)
                if entry["error_code"] and entry["error_message"] is None:
                    entry["error_message"] = ErrorCode(entry["error_code"]).name
                parts.append({"partition": part["partition"], **entry})
            results.append({"topic_id": topic["topic_id"], "partitions": parts})
        return {"results": results}

    return run()


def _read_entry(error: ErrorCode, state: rec.ShareState, summary: bool) -> dict:
    if error != ErrorCode.NONE:
        entry: dict = {"error_code": int(error), "state_epoch": 0, "start_offset": -1}
    else:
        entry = {"error_code": 0, "state_epoch": state.state_epoch,
                 "start_offset": state.start_offset}
    if summary:
        entry["leader_epoch"] = state.leader_epoch if error == ErrorCode.NONE else -1
        entry["delivery_complete_count"] = (
            state.delivery_complete_count if error == ErrorCode.NONE else -1)
    else:
        entry["state_batches"] = [] if error != ErrorCode.NONE else [
            {"first_offset": f, "last_offset": last, "delivery_state": s, "delivery_count": c}
            for f, last, s, c in state.batches
        ]
    return entry


async def handle_read_share_group_state(broker: Broker, request: Request) -> dict:
    coordinator = broker.share_coordinator

    async def answer(key: rec.ShareKey, part: dict) -> dict:
        error, state = await coordinator.read(key, part["leader_epoch"])
        return _read_entry(error, state, summary=False)

    return await _each(broker, request, answer)


async def handle_read_share_group_state_summary(broker: Broker, request: Request) -> dict:
    coordinator = broker.share_coordinator

    async def answer(key: rec.ShareKey, part: dict) -> dict:
        error, state = await coordinator.read(key)
        return _read_entry(error, state, summary=True)

    return await _each(broker, request, answer)


async def handle_write_share_group_state(broker: Broker, request: Request) -> dict:
    coordinator = broker.share_coordinator

    async def answer(key: rec.ShareKey, part: dict) -> dict:
        if part["leader_epoch"] < -1 or part["state_epoch"] < 0:
            return {"error_code": int(ErrorCode.INVALID_REQUEST)}
        state = rec.ShareState(
            rec.SNAPSHOT, 0, part["state_epoch"], part["leader_epoch"], part["start_offset"],
            tuple((b["first_offset"], b["last_offset"], b["delivery_state"],
                   b["delivery_count"]) for b in part["state_batches"]),
            delivery_complete_count=part.get("delivery_complete_count", -1),
        )
        return {"error_code": int(await coordinator.write(key, state))}

    return await _each(broker, request, answer)


async def handle_initialize_share_group_state(broker: Broker, request: Request) -> dict:
    coordinator = broker.share_coordinator

    async def answer(key: rec.ShareKey, part: dict) -> dict:
        if part["state_epoch"] < 0:
            return {"error_code": int(ErrorCode.INVALID_REQUEST)}
        return {"error_code": int(await coordinator.initialize(
            key, part["state_epoch"], part["start_offset"]))}

    return await _each(broker, request, answer)


async def handle_delete_share_group_state(broker: Broker, request: Request) -> dict:
    coordinator = broker.share_coordinator

    async def answer(key: rec.ShareKey, part: dict) -> dict:
        return {"error_code": int(await coordinator.write(key, None))}

    return await _each(broker, request, answer)
