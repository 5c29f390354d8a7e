"""Every (API, version) pair Kafka 4.0 advertises, sent to the broker under test.

The yardstick is Kafka 4.0.0's own ApiVersions answer (``kafkette.wire.kafka40_ranges``,
recorded once from the reference broker), not kafkette's table, so the same test runs
against kafkette (default) and against the reference
(``pytest compat-tests/test_api_probe.py --bootstrap 127.0.0.1:PORT -s``). Each pair
gets a minimal valid request (``compat_lib/api_probe.py``) on a fresh connection.

* every pair the broker advertises must be answered without closing the connection
  (Produce 0-2 excepted: Kafka 4.0 advertises them for librdkafka's sake and closes the
  connection on them, KAFKA-18659 / KIP-896; the broker must do exactly that);
* every Kafka 4.0 pair the broker does not answer must have a written reason in
  ``docs/protocol-coverage.md`` ("Differs from Kafka 4.0", from ``wire/coverage.py``);
  the table of them is printed (``-s`` shows it).
"""

from __future__ import annotations

import socket
import struct
import threading

from compat_lib import api_probe
from compat_lib.api_probe import CLOSED, NO_DEFINITION, UNDECODABLE, UNSUPPORTED, ProbeResult

from kafkette.wire.coverage import differences
from kafkette.wire.kafka40_ranges import KAFKA_40_ADVERTISED, kafka_40_pairs

# Advertised by Kafka 4.0 and refused by closing the connection (measured on 4.0.0).
CLOSED_AS_KAFKA_40 = {(0, 0), (0, 1), (0, 2)}
PAIR_TIMEOUT_S = 10.0


def _probe_all(bootstrap: str, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], ProbeResult]:
    return {
        (key, version): api_probe.probe_pair(bootstrap, key, version, PAIR_TIMEOUT_S)
        for key, version in pairs
    }


def _name(key: int) -> str:
    return KAFKA_40_ADVERTISED.get(key, (f"api {key}", 0, 0))[0]


def test_every_advertised_pair_is_answered(broker: str) -> None:
    advertised = api_probe.advertised_ranges(broker)
    pairs = [(k, v) for k, (low, high) in sorted(advertised.items()) for v in range(low, high + 1)]
    results = _probe_all(broker, pairs)
    probed = {pair: r for pair, r in results.items() if r.outcome != NO_DEFINITION}
    assert probed, "nothing could be probed"
    wrong = []
    for pair, result in probed.items():
        expected_closed = pair in CLOSED_AS_KAFKA_40
        # An advertised pair answered UNSUPPORTED_VERSION is not served either.
        if expected_closed != (result.outcome == CLOSED) or (
            not expected_closed and result.outcome != api_probe.ANSWERED
        ):
            wrong.append(f"{_name(pair[0])} v{pair[1]}: {result.outcome} {result.detail}")
    unprobed = [f"{_name(k)} v{v}" for (k, v) in results if (k, v) not in probed]
    print(f"\n{len(probed)} advertised pairs probed; no definition to build: {unprobed or 'none'}")
    assert not wrong, "advertised pairs not answered as Kafka 4.0 does:\n" + "\n".join(wrong)


def _versions(text: str) -> set[int]:
    """``"0-2, 5"`` (as wire/coverage.py writes them) -> ``{0, 1, 2, 5}``."""
    versions: set[int] = set()
    for run in text.split(","):
        low, _, high = run.strip().partition("-")
        versions.update(range(int(low), int(high or low) + 1))
    return versions


def test_kafka_40_pairs_not_answered_have_a_written_reason(broker: str) -> None:
    results = _probe_all(broker, kafka_40_pairs())
    unserved, _ = differences()
    # A reason covers the versions it is written for, not the whole API.
    reasons = {
        (key, version): reason
        for key, _, versions, reason in unserved
        for version in _versions(versions)
    }
    missing_reason = []
    rows = []
    for (key, version), result in results.items():
        if (key, version) in CLOSED_AS_KAFKA_40:
            continue
        if result.outcome == api_probe.ANSWERED:
            continue
        reason = reasons.get((key, version))
        rows.append(f"| {key} | {_name(key)} | {version} | {result.outcome} | {reason or '-'} |")
        if reason is None:
            missing_reason.append(f"{_name(key)} v{version}: {result.outcome}")
    answered = sum(r.outcome == api_probe.ANSWERED for r in results.values())
    print(f"\n{answered} of {len(results)} Kafka 4.0 pairs answered by {broker}")
    if rows:
        print("| Key | API | Version | Outcome | Why (docs/protocol-coverage.md) |")
        print("|----:|-----|--------:|---------|-----|")
        print("\n".join(rows))
    assert not missing_reason, (
        "Kafka 4.0 pairs this broker does not answer, with no reason in wire/coverage.py:\n"
        + "\n".join(missing_reason)
    )


def _answer_once(frame_body: bytes) -> tuple[str, threading.Thread]:
    """A one-shot listener that answers the first request with ``frame_body`` after
    the request's correlation id: how the probe classifies answers, with no broker."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with server:
            conn, _ = server.accept()
            with conn:
                (size,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
                request = conn.recv(size, socket.MSG_WAITALL)
                answer = request[4:8] + frame_body  # the correlation id, then the body
                conn.sendall(struct.pack(">i", len(answer)) + answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return f"127.0.0.1:{server.getsockname()[1]}", thread


def test_an_answer_that_does_not_decode_is_not_counted_as_answered() -> None:
    # An error code alone is no Metadata v12 response.
    bootstrap, thread = _answer_once(struct.pack(">h", 0))
    result = api_probe.probe_pair(bootstrap, 3, 12, timeout=10)
    thread.join(10)
    assert result.outcome == UNDECODABLE and not result.answered, result
    # Only ApiVersions answers a version it refuses with a v0 body (error 35).
    bootstrap, thread = _answer_once(struct.pack(">hi", 35, 0))
    result = api_probe.probe_pair(bootstrap, 18, 4, timeout=10)
    thread.join(10)
    assert (result.outcome, result.error_code) == (UNSUPPORTED, 35), result
    bootstrap, thread = _answer_once(struct.pack(">hi", 35, 0))
    result = api_probe.probe_pair(bootstrap, 3, 12, timeout=10)
    thread.join(10)
    assert result.outcome == UNDECODABLE, result


def test_every_written_reason_is_for_a_pair_still_unserved() -> None:
    """A reason left behind once its API is served would read as a gap that is not."""
    from kafkette.wire.coverage import UNSERVED_REASONS

    unserved, _ = differences()
    assert set(UNSERVED_REASONS) == {key for key, _, _, _ in unserved}
