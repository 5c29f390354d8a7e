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

from compat_lib import api_probe
from compat_lib.api_probe import CLOSED, NO_DEFINITION, ProbeResult

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


def test_kafka_40_pairs_not_answered_have_a_written_reason(broker: str) -> None:
    results = _probe_all(broker, kafka_40_pairs())
    unserved, _ = differences()
    reasons = {key: reason for key, _, _, reason in unserved}
    missing_reason = []
    rows = []
    for (key, version), result in results.items():
        if (key, version) in CLOSED_AS_KAFKA_40:
            continue
        if result.outcome == api_probe.ANSWERED:
            continue
        reason = reasons.get(key)
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
