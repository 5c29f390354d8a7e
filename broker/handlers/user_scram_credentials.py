"""AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554).

What ``kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[password=...]'
--entity-type users`` and ``--describe --entity-type users`` send. The client salts and
hashes the password itself; the broker derives StoredKey and ServerKey from the
SaltedPassword and keeps only those (the broker's credential store, a file or ZooKeeper:
broker/security/sasl/scram_store.py). Validation and messages are Kafka's
(ScramControlManager, ScramImage): a user named twice in one request is
DUPLICATE_RESOURCE, iterations outside 4096..16384 UNACCEPTABLE_CREDENTIAL, an unknown
mechanism UNSUPPORTED_SASL_MECHANISM, deleting or describing a credential that does not
exist RESOURCE_NOT_FOUND.

Authorization (Kafka: ALTER on the CLUSTER for Alter, DESCRIBE on the CLUSTER for
Describe) goes through ``checks.cluster_denied``, as every handler's cluster check.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from kafkette.broker.durable_store import StoreUnavailable
from kafkette.broker.security.authorizer.checks import ALTER, DESCRIBE, cluster_denied
from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    from kafkette.broker.server import Broker
    from kafkette.wire.connection import Request

log = logging.getLogger("kafkette.sasl")

DUPLICATE_ALTER = "A user credential cannot be altered twice in the same request"
DUPLICATE_DESCRIBE = (
    "Cannot describe SCRAM credentials for the same user twice in a single request: "
)
MISSING_DESCRIBE = "Attempt to describe a user credential that does not exist: "
MISSING_DELETE = "Attempt to delete a user credential that does not exist"
CLUSTER_DENIED = "Cluster authorization failed."  # Kafka's default message of error 31
STORE_READ_FAILED = "The SCRAM credential store could not be read; see the broker's log"
STORE_FAILED = "The SCRAM credential store could not be written; see the broker's log"
# How long AlterUserScramCredentials waits for the store (a file, or ZooKeeper) to write.
STORE_WRITE_TIMEOUT_S = 30.0


def _mechanism_and_name_error(name: str, mechanism: int) -> tuple[int, str] | None:
    """Kafka's validateScramUsernameAndMechanism: the mechanism first, then the name."""
    if mechanism not in sf.MECHANISM_BY_TYPE:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if not name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    return None


def _deduplicated(
    deletions: list[dict], upsertions: list[dict]
) -> tuple[dict[str, dict], dict[str, dict], dict[str, tuple[int, str]]]:
    """Kafka's ScramControlManager.alterCredentials, first pass: a user named twice in
    the request (in either list) is DUPLICATE_RESOURCE, whatever its entries hold;
    the others go on to validation."""
    errors: dict[str, tuple[int, str]] = {}
    to_delete: dict[str, dict] = {}
    to_upsert: dict[str, dict] = {}
    for entry in deletions:
        name = entry["name"]
        if name in errors:
            continue
        if to_delete.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
        else:
            to_delete[name] = entry
    for entry in upsertions:
        name = entry["name"]
        if name in errors:
            continue
        if to_delete.pop(name, None) is not None or to_upsert.pop(name, None) is not None:
            errors[name] = (ErrorCode.DUPLICATE_RESOURCE, DUPLICATE_ALTER)
        else:
            to_upsert[name] = entry
    return to_delete, to_upsert, errors


async def handle_alter_user_scram_credentials(broker: Broker, request: Request) -> dict:
    # Here, not at module level: a broker nobody asks about SCRAM never loads the package.
    from kafkette.broker.security.sasl.broker_sasl import sasl_of

    body = request.body
    deletions = body.get("deletions") or []
    upsertions = body.get("upsertions") or []
    if cluster_denied(broker, request, ALTER):
        names = dict.fromkeys(e["name"] for e in [*deletions, *upsertions])
        return {
            "results": [
                {
                    "user": name,
                    "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    "error_message": CLUSTER_DENIED,
                }
                for name in names
            ]
        }
    sasl = sasl_of(broker)
    async with sasl.alter_lock:
        store = await sasl.scram_store()
        deleting, upserting, errors = _deduplicated(deletions, upsertions)
        to_delete: dict[str, str] = {}  # user -> mechanism name
        to_upsert: dict[str, tuple[str, sf.ScramCredential]] = {}
        for name, entry in deleting.items():
            mechanism = entry["mechanism"]
            error = _mechanism_and_name_error(name, mechanism)
            mechanism_name = sf.MECHANISM_BY_TYPE.get(mechanism, "")
            if error is None:
                try:
                    with trio.fail_after(STORE_WRITE_TIMEOUT_S):
                        found = await store.lookup(mechanism_name, name)
                except (StoreUnavailable, trio.TooSlowError) as exc:
                    log.warning("SCRAM credential of %s not read: %s", name, exc or "timed out")
                    error = (ErrorCode.UNKNOWN_SERVER_ERROR, STORE_READ_FAILED)
                else:
                    if found is None:
                        error = (ErrorCode.RESOURCE_NOT_FOUND, MISSING_DELETE)
            if error is not None:
                errors[name] = error
            else:
                to_delete[name] = mechanism_name
        for name, entry in upserting.items():
            mechanism, iterations = entry["mechanism"], entry["iterations"]
            error = _mechanism_and_name_error(name, mechanism)
            if error is None and iterations < sf.MIN_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif error is None and iterations > sf.MAX_ITERATIONS:
                error = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            if error is not None:
                errors[name] = error
                continue
            mechanism_name = sf.MECHANISM_BY_TYPE[mechanism]
            credential = sf.credential_from_salted(
                mechanism_name, bytes(entry["salted_password"] or b""),
                bytes(entry["salt"] or b""), iterations,
            )
            to_upsert[name] = (mechanism_name, credential)
        if to_delete or to_upsert:
            try:
                with trio.fail_after(STORE_WRITE_TIMEOUT_S):
                    await store.apply({
                        **{name: {mech: None} for name, mech in to_delete.items()},
                        **{name: {mech: cred} for name, (mech, cred) in to_upsert.items()},
                    })
            except (OSError, StoreUnavailable, trio.TooSlowError) as exc:
                # Not a connection close: each user is told, the broker keeps serving.
                why = str(exc) or f"no answer within {STORE_WRITE_TIMEOUT_S} s"
                log.warning("SCRAM credentials not changed: the store failed: %s", why)
                message = STORE_FAILED  # the details (paths, hosts) stay in the log
                for name in [*to_delete, *to_upsert]:
                    errors[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, message)
                to_delete, to_upsert = {}, {}
        if to_delete or to_upsert:
            log.info(
                "SCRAM credentials changed by %s: %s",
                request.session.principal if request.session is not None else "?",
                ", ".join(
                    [f"deleted {mech} of {name}" for name, mech in to_delete.items()]
                    + [f"set {mech} of {name}" for name, (mech, _) in to_upsert.items()]
                ),
            )
    results = [
        {"user": name, "error_code": ErrorCode.NONE, "error_message": None}
        for name in [*to_delete, *to_upsert]
    ]
    results += [
        {"user": name, "error_code": code, "error_message": message}
        for name, (code, message) in errors.items()
    ]
    return {"results": results}


async def handle_describe_user_scram_credentials(broker: Broker, request: Request) -> dict:
    if cluster_denied(broker, request, DESCRIBE):
        return {
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": CLUSTER_DENIED,
            "results": [],
        }
    from kafkette.broker.security.sasl.broker_sasl import sasl_of

    try:
        with trio.fail_after(STORE_WRITE_TIMEOUT_S):
            return await _describe(await sasl_of(broker).scram_store(), request)
    except (StoreUnavailable, trio.TooSlowError) as exc:
        log.warning("SCRAM credentials not described: %s", exc or "the store timed out")
        return {
            "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
            "error_message": STORE_READ_FAILED,
            "results": [],
        }


async def _describe(store: Any, request: Request) -> dict:
    users = request.body.get("users")
    duplicated: dict[str, bool] = {}
    if not users:
        duplicated = dict.fromkeys(await store.users(), False)
    else:
        for entry in users:
            name = entry["name"]
            duplicated[name] = name in duplicated
    results = []
    for name, duplicate in duplicated.items():
        if duplicate:
            results.append({
                "user": name,
                "error_code": ErrorCode.DUPLICATE_RESOURCE,
                "error_message": DUPLICATE_DESCRIBE + name,
                "credential_infos": [],
            })
            continue
        entries = await store.mechanisms_of(name)
        if not entries:
            results.append({
                "user": name,
                "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                "error_message": MISSING_DESCRIBE + name,
                "credential_infos": [],
            })
            continue
        results.append({
            "user": name,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "credential_infos": [
                {"mechanism": sf.MECHANISMS[mech][1], "iterations": cred.iterations}
                for mech, cred in sorted(entries.items())
            ],
        })
    return {"error_code": ErrorCode.NONE, "error_message": None, "results": results}
