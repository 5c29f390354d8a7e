"""CreateAcls, DescribeAcls and DeleteAcls (v1-3, as Kafka 4.0 serves them).

As in Kafka: creating and deleting need ALTER on the cluster, describing needs
DESCRIBE on it (CLUSTER_AUTHORIZATION_FAILED otherwise); with no authorizer
configured every answer is SECURITY_DISABLED "No Authorizer is configured."; a
binding or filter Kafka refuses (UNKNOWN codes, an empty name, a principal with no
``:``, a CLUSTER resource not named ``kafka-cluster``) gets INVALID_REQUEST with
Kafka's message while the request's other entries go ahead. In a cluster (ACLs in
ZooKeeper) a resource name with `/`, `.`/`..` or characters ZooKeeper paths refuse
is INVALID_REQUEST too: it cannot be one znode (the store's ``unstorable``).

A change is given ACL_CHANGE_TIMEOUT_S (waiting for the one before it included): in
a ZooKeeper outage kazoo holds requests until it reconnects, and the request, the
change lock and a worker thread would wait with it. Past the deadline, or when a
ZooKeeper write failed after being sent, the entries are UNKNOWN_SERVER_ERROR with a
message saying the outcome is unknown (the change may be stored, in part or whole).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from kafkette.broker.security.authorizer.acl import (
    AclBinding,
    AclError,
    AclOperation,
    new_binding,
    new_filter,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.security.authorizer.authorizer import AclStoreError
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.acls")

NO_AUTHORIZER = "No Authorizer is configured."
ACL_CHANGE_TIMEOUT_S = 30.0
TIMED_OUT = (f"Timed out after {ACL_CHANGE_TIMEOUT_S:g}s storing the change; the outcome"
             " is unknown (it may be stored, in part or whole).")
PARTLY_STORED = ("Storing the change failed part-way; the outcome is unknown (it may be"
                 " stored, in part or whole).")


def _failure_message(exc: AclStoreError, not_stored: str) -> str:
    if exc.outcome_unknown:
        log.error("ACL change failed part-way, outcome unknown: %s", exc)
        return PARTLY_STORED
    log.error("%s: %s", not_stored, exc)
    return not_stored + "."


def _refusal(broker: Broker, request: Request, operation: AclOperation) -> tuple[int, str | None]:
    """(error code, message) when the request may not go ahead, else (NONE, None)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER
    if not authorizer.allowed_cluster(request.session, operation):
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None
    return ErrorCode.NONE, None


async def handle_create_acls(broker: Broker, request: Request) -> dict:
    from kafkette.broker.security.authorizer.authorizer import AclStoreError

    creations = request.body["creations"]
    code, message = _refusal(broker, request, AclOperation.ALTER)
    if code:
        return {
            "throttle_time_ms": 0,
            "results": [{"error_code": code, "error_message": message} for _ in creations],
        }
    assert broker.authorizer is not None
    results: list[dict] = []
    valid: list[AclBinding] = []
    for entry in creations:
        try:
            binding = new_binding(
                entry["resource_type"], entry["resource_name"],
                entry["resource_pattern_type"], entry["principal"], entry["host"],
                entry["operation"], entry["permission_type"],
            )
            reason = broker.authorizer.unstorable(binding)
            if reason is not None:
                raise AclError(reason)
            valid.append(binding)
            results.append({"error_code": ErrorCode.NONE, "error_message": None})
        except AclError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": str(exc)})
    if valid:
        message = None
        try:
            with trio.fail_after(ACL_CHANGE_TIMEOUT_S):
                await broker.authorizer.create(valid)
            log.info("created %d ACLs for %s", len(valid), request.session.principal)
        except AclStoreError as exc:
            message = _failure_message(exc, "The ACLs could not be stored")
        except trio.TooSlowError:
            log.error("creating %d ACLs timed out after %gs, outcome unknown", len(valid),
                      ACL_CHANGE_TIMEOUT_S)
            message = TIMED_OUT
        if message is not None:
            failed = {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": message}
            results = [failed if r["error_code"] == ErrorCode.NONE else r for r in results]
    return {"throttle_time_ms": 0, "results": results}


def _filter_of(entry: dict):
    return new_filter(
        entry["resource_type_filter"], entry["resource_name_filter"],
        entry["pattern_type_filter"], entry["principal_filter"], entry["host_filter"],
        entry["operation"], entry["permission_type"],
    )


async def handle_describe_acls(broker: Broker, request: Request) -> dict:
    code, message = _refusal(broker, request, AclOperation.DESCRIBE)
    if code:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": message,
                "resources": []}
    assert broker.authorizer is not None
    try:
        selection = _filter_of(request.body)
    except AclError as exc:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.INVALID_REQUEST,
                "error_message": str(exc), "resources": []}
    grouped: dict[tuple, list[dict]] = {}
    for acl in broker.authorizer.describe(selection):
        key = (acl.resource_type, acl.resource_name, acl.pattern_type)
        grouped.setdefault(key, []).append(
            {"principal": acl.principal, "host": acl.host, "operation": acl.operation,
             "permission_type": acl.permission}
        )
    resources = [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype, "acls": acls}
        for (rtype, name, ptype), acls in grouped.items()
    ]
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
            "resources": resources}


def _matching_entry(acl: AclBinding) -> dict:
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "resource_type": acl.resource_type,
        "resource_name": acl.resource_name,
        "pattern_type": acl.pattern_type,
        "principal": acl.principal,
        "host": acl.host,
        "operation": acl.operation,
        "permission_type": acl.permission,
    }


async def handle_delete_acls(broker: Broker, request: Request) -> dict:
    from kafkette.broker.security.authorizer.authorizer import AclStoreError

    entries = request.body["filters"]
    code, message = _refusal(broker, request, AclOperation.ALTER)
    if code:
        return {
            "throttle_time_ms": 0,
            "filter_results": [
                {"error_code": code, "error_message": message, "matching_acls": []}
                for _ in entries
            ],
        }
    assert broker.authorizer is not None
    results: list[dict | None] = []
    filters = []
    for entry in entries:
        try:
            filters.append(_filter_of(entry))
            results.append(None)
        except AclError as exc:
            results.append({"error_code": ErrorCode.INVALID_REQUEST,
                            "error_message": str(exc), "matching_acls": []})
    message = None
    try:
        with trio.fail_after(ACL_CHANGE_TIMEOUT_S):
            removed = iter(await broker.authorizer.delete(filters))
    except AclStoreError as exc:
        message = _failure_message(exc, "The ACL deletion could not be stored")
    except trio.TooSlowError:
        log.error("deleting ACLs timed out after %gs, outcome unknown", ACL_CHANGE_TIMEOUT_S)
        message = TIMED_OUT
    if message is not None:
        failed = {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": message,
                  "matching_acls": []}
        return {"throttle_time_ms": 0,
                "filter_results": [r if r is not None else failed for r in results]}
    answered = []
    for result in results:
        if result is None:
            matched = next(removed)
            result = {"error_code": ErrorCode.NONE, "error_message": None,
                      "matching_acls": [_matching_entry(acl) for acl in matched]}
            if matched:
                log.info("deleted %d ACLs for %s", len(matched), request.session.principal)
        answered.append(result)
    return {"throttle_time_ms": 0, "filter_results": answered}
