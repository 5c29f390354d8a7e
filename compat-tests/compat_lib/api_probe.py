"""Send one minimal request per (API, version) pair and record how a broker answers it.

The probe asks "does this broker answer this pair at all", not "is the answer
right": each request is the definition's zero value (empty strings and arrays,
zero numbers, null where nullable-by-default), encoded by kafkette's codec from
Kafka's message definitions (flexible versions get header v2 and tagged
fields there), sent on a fresh connection so one refusal cannot hide the next.
Outcomes:

* ``answered``: a response frame with our correlation id came back (its
  top-level ``error_code`` is kept when the response decodes);
* ``unsupported version``: answered, with UNSUPPORTED_VERSION (35);
* ``undecodable``: a response frame came back that does not decode at the
  version asked (only ApiVersions may answer a version it refuses with a v0
  error-only body, UNSUPPORTED_VERSION; any other undecodable answer is this);
* ``closed``: the broker closed the connection without answering;
* ``timeout``: nothing within the deadline;
* ``no definition``: the definitions kafkette reads do not know this API or
  version, so no request could be built.

A few pairs need more than zero values: Produce with ``acks=0`` gets no answer by
design, so the probe asks ``acks=1``; ApiVersions 3+ names the client software
(empty names are INVALID_REQUEST); Produce 0-2 have no definition any more
(Kafka 4.0 removed them, KIP-896) but Kafka 4.0 still advertises them, so their
body is v3's without its leading ``transactional_id`` (the layouts are otherwise
the same for an empty ``topic_data``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from bench.harness.raw_wire import ConnectionClosed, exchange
from kafkette.wire import primitives as p
from kafkette.wire.codec import message_codec
from kafkette.wire.kafka40_ranges import definition_name
from kafkette.wire.schema import in_range, load_message

ANSWERED = "answered"
UNSUPPORTED = "unsupported version"
UNDECODABLE = "undecodable"
CLOSED = "closed"
TIMEOUT = "timeout"
NO_DEFINITION = "no definition"

UNSUPPORTED_VERSION = 35
API_VERSIONS = 18
PRODUCE = 0
CLIENT_ID = "kafkette-api-probe"


@dataclass(frozen=True, slots=True)
class ProbeResult:
    api_key: int
    version: int
    outcome: str
    error_code: int | None = None
    detail: str = ""

    @property
    def answered(self) -> bool:
        return self.outcome in (ANSWERED, UNSUPPORTED)


def _overrides(api_key: int) -> dict:
    if api_key == PRODUCE:
        return {"acks": 1, "timeout_ms": 1000}
    if api_key == API_VERSIONS:  # v3+: empty software names are INVALID_REQUEST (KIP-511)
        return {"client_software_name": "kafkette-probe", "client_software_version": "1.0"}
    return dict(_MORE_THAN_ZERO.get(api_key, {}))


# Zero values Kafka refuses at parse time (closing the connection) or leaves
# unanswered: ACL filters need ANY (1) rather than UNKNOWN (0); an OffsetFetch 8+
# or AddPartitionsToTxn 4+ naming no group / transaction never completes on Kafka 4.0.
_ANY = 1
_MORE_THAN_ZERO: dict[int, dict] = {
    9: {"groups": [{"group_id": "kafkette-probe", "topics": None}]},
    24: {
        "transactions": [
            {"transactional_id": "kafkette-probe", "producer_id": 0, "producer_epoch": 0,
             "verify_only": True, "topics": []}
        ]
    },
    29: {"resource_type_filter": _ANY, "pattern_type_filter": _ANY, "operation": _ANY,
         "permission_type": _ANY},
}


def _request_flexible(api_key: int, version: int, name: str) -> bool:
    if api_key == API_VERSIONS:
        return version >= 3
    return load_message(name + "Request").is_flexible(version)


def build_request(api_key: int, version: int, correlation_id: int) -> bytes:
    """The whole frame of the minimal request; LookupError/ValueError without a definition."""
    name = definition_name(api_key)
    spec = load_message(name + "Request")
    body_version = version
    strip = 0
    if api_key == PRODUCE and version < spec.valid_versions[0]:
        body_version, strip = spec.valid_versions[0], 2  # drop v3's null transactional_id
    elif not in_range(version, spec.valid_versions):
        raise ValueError(f"{name}Request does not define version {version}")
    out = bytearray(b"\0\0\0\0")
    p.write_int16(out, api_key)
    p.write_int16(out, version)
    p.write_int32(out, correlation_id)
    p.write_string(out, CLIENT_ID)
    if _request_flexible(api_key, body_version, name):
        out.append(0)
    body = message_codec(name + "Request", body_version).encode(_overrides(api_key))
    out += body[strip:]
    struct.pack_into(">i", out, 0, len(out) - 4)
    return bytes(out)


def _skip_tagged(view: memoryview, pos: int) -> int:
    count, pos = p.read_uvarint(view, pos)
    for _ in range(count):
        _, pos = p.read_uvarint(view, pos)
        size, pos = p.read_uvarint(view, pos)
        pos += size
    return pos


def decode_response(api_key: int, version: int, frame: bytes) -> dict:
    """The response body (header skipped); raises on a body that does not decode."""
    name = definition_name(api_key)
    view = memoryview(frame)
    pos = 4
    if api_key != API_VERSIONS and _request_flexible(api_key, version, name):
        pos = _skip_tagged(view, pos)
    body, _ = message_codec(name + "Response", version).decode(view, pos)
    return body


def send_raw(bootstrap: str, frame: bytes, timeout: float) -> tuple[str, bytes | None]:
    """One request frame on a fresh connection: (outcome, response frame or None)."""
    try:
        return ANSWERED, exchange(bootstrap, frame, timeout)
    except ConnectionClosed:
        return CLOSED, None
    except TimeoutError:
        return TIMEOUT, None


def probe_pair(bootstrap: str, api_key: int, version: int, timeout: float = 10.0) -> ProbeResult:
    """Send the minimal request for one pair and classify the answer."""
    correlation_id = api_key * 100 + version + 1
    try:
        frame = build_request(api_key, version, correlation_id)
    except (LookupError, ValueError, FileNotFoundError) as exc:
        return ProbeResult(api_key, version, NO_DEFINITION, detail=str(exc))
    outcome, response = send_raw(bootstrap, frame, timeout)
    if response is None:
        return ProbeResult(api_key, version, outcome)
    (got,) = struct.unpack_from(">i", response, 0)
    if got != correlation_id:
        return ProbeResult(api_key, version, CLOSED, detail=f"correlation id {got}")
    try:
        error_code = decode_response(api_key, version, response).get("error_code")
    except Exception as exc:
        # ApiVersions answers a version it refuses with a v0 body (KIP-511): its
        # error code comes first. Nothing else is accepted undecoded.
        v0_error = struct.unpack_from(">h", response, 4)[0] if len(response) >= 6 else None
        if api_key == API_VERSIONS and v0_error == UNSUPPORTED_VERSION:
            return ProbeResult(api_key, version, UNSUPPORTED, v0_error)
        return ProbeResult(
            api_key, version, UNDECODABLE, detail=f"{type(exc).__name__}: {exc}"
        )
    if error_code == UNSUPPORTED_VERSION:
        return ProbeResult(api_key, version, UNSUPPORTED, error_code)
    return ProbeResult(api_key, version, ANSWERED, error_code)


def advertised_ranges(bootstrap: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """The broker's own ApiVersions (v3) answer: api key -> (min, max)."""
    frame = build_request(API_VERSIONS, 3, 1)
    outcome, response = send_raw(bootstrap, frame, timeout)
    if response is None:
        raise ConnectionError(f"ApiVersions v3 to {bootstrap}: {outcome}")
    body = decode_response(API_VERSIONS, 3, response)
    if body["error_code"]:
        raise ConnectionError(f"ApiVersions v3 to {bootstrap}: error {body['error_code']}")
    return {e["api_key"]: (e["min_version"], e["max_version"]) for e in body["api_keys"]}
