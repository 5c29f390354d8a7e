"""Generate ``docs/protocol-coverage.md`` from ``SUPPORTED`` and Kafka's definitions.

The page is never written by hand: ``python -m kafkette.wire.coverage`` rewrites it,
``--check`` exits 1 when the committed page is stale (for CI), ``--output -`` prints it.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version as package_version
from pathlib import Path

from kafkette.wire.apis import SUPPORTED, ApiSpec
from kafkette.wire.kafka40_ranges import KAFKA_40_ADVERTISED
from kafkette.wire.kafka43_ranges import KAFKA_43_DEFINED
from kafkette.wire.schema import ALWAYS, MessageSpec, load_message

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "docs" / "protocol-coverage.md"


def _release_line(version: str) -> str:
    """``3.0.12`` -> ``3.0.x``: the page must not go stale with every patch release inside
    the dependency range (their definitions are the same; a new minor line may add some)."""
    major, minor = [*version.split("."), "0"][:2]
    return f"{major}.{minor}.x"


def _range(low: int, high: int) -> str:
    return str(low) if low == high else f"{low}-{high}"


def _flexible_from(spec: MessageSpec) -> str:
    low, high = spec.flexible_versions
    if low > high:
        return "never"
    return f"{low}+" if high == ALWAYS[1] else _range(low, high)


def _row(api: ApiSpec) -> str:
    request = load_message(api.request_definition)
    response = load_message(api.response_definition)
    known = _range(*request.valid_versions)
    if response.valid_versions != request.valid_versions:
        known += f" (response {_range(*response.valid_versions)})"
    decoded = _range(api.decode_min, api.max_version)
    advertised = _range(api.min_version, api.max_version) if api.advertised else "not advertised"
    cells = [
        str(int(api.key)),
        api.name,
        advertised,
        decoded,
        known,
        _flexible_from(request),
        api.note,
    ]
    return "| " + " | ".join(cells) + " |"


# Why kafkette does not answer (some versions of) an API Kafka 4.0 advertises. Read by
# ``differences`` only for pairs still missing from SUPPORTED, so an entry whose API
# becomes served simply stops showing; a missing pair without an entry says so.
UNSERVED_REASONS: dict[int, str] = {
    38: "delegation tokens (KIP-48): no token authentication",
    39: "delegation tokens (KIP-48): no token authentication",
    40: "delegation tokens (KIP-48): no token authentication",
    41: "delegation tokens (KIP-48): no token authentication",
    64: "KRaft broker registration: no controller quorum",
    80: "KRaft voters (KIP-853): no controller quorum",
    81: "KRaft voters (KIP-853): no controller quorum",
}

# Where kafkette advertises more than Kafka 4.0 does, and why.
EXTRA_REASONS: dict[int, str] = {
    0: "13 names topics by id: Kafka 4.1's (docs/topic-ids.md)",
    8: "10 names topics by id: Kafka 4.1's (docs/topic-ids.md)",
    9: "10 names topics by id: Kafka 4.1's (docs/topic-ids.md)",
    1: "18 (a follower's HighWatermark, KIP-1166) is Kafka 4.2's; read and ignored",
    35: "5 (IsCordoned, KIP-1066) is Kafka 4.2's; always false here",
    45: "1 (allow_replication_factor_change, KIP-860) is Kafka 4.1's",
    76: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    77: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    78: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    79: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    90: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    91: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    92: "KIP-932 share groups (Kafka 4.2+, docs/share-groups.md)",
    83: "KIP-932's share coordinator, inter-broker (Kafka 4.2+, docs/share-groups.md)",
    84: "KIP-932's share coordinator, inter-broker (Kafka 4.2+, docs/share-groups.md)",
    85: "KIP-932's share coordinator, inter-broker (Kafka 4.2+, docs/share-groups.md)",
    86: "KIP-932's share coordinator, inter-broker (Kafka 4.2+, docs/share-groups.md)",
    87: "KIP-932's share coordinator, inter-broker (Kafka 4.2+, docs/share-groups.md)",
}

# Answers measured against Kafka 4.0.0 that still differ (not visible in the ranges).
BEHAVIOUR_DIFFERENCES: tuple[str, ...] = (
    "A version outside the advertised range of an API whose response has a top-level"
    " error code (JoinGroup 0-1, Fetch 18, ...) is answered UNSUPPORTED_VERSION (35);"
    " Kafka 4.0 closes the connection (it answers only ApiVersions that way).",
    "DescribeAcls with UNKNOWN (0) resource/pattern/operation/permission filters:"
    " Kafka 4.0 refuses the request while parsing it and closes the connection;"
    " kafkette answers (SECURITY_DISABLED without an authorizer).",
)


# Why a (API, version) pair Kafka 4.3's definitions know is not advertised here. An
# entry stops showing once its versions are served; a gap without one says so.
KAFKA_43_REASONS: dict[int, str] = {
    2: "11 lists by earliest pending upload (KIP-1023): tiered storage, not served",
    11: "0-1 removed from brokers in Kafka 4.0 (KIP-896); Kafka 4.x advertises 2-9",
    22: "6 (KIP-939 two-phase commit) is flagged unstable in 4.3, not advertised by Kafka",
    27: "2 (KIP-1228, Kafka 4.2) tells the leader the marker's transaction version; Kafka 4.0"
    " serves 1",
    38: "delegation tokens (KIP-48): no token authentication",
    39: "delegation tokens (KIP-48): no token authentication",
    40: "delegation tokens (KIP-48): no token authentication",
    41: "delegation tokens (KIP-48): no token authentication",
    64: "KRaft broker registration: no controller quorum",
    66: "2 filters by a transactional id pattern (KIP-1152): not served yet",
    74: "1 lists every config resource type (KIP-1142): not served yet",
    80: "KRaft voters (KIP-853): no controller quorum",
    81: "KRaft voters (KIP-853): no controller quorum",
    88: "streams groups (KIP-1071): not served; Kafka Streams uses the classic protocol",
    89: "streams groups (KIP-1071): not served; Kafka Streams uses the classic protocol",
}


def kafka_43_gaps() -> list[tuple[int, str, str, str]]:
    """(api key, name, versions, reason) of what Kafka 4.3's definitions offer to
    clients that kafkette does not advertise."""
    rows = []
    for key, (name, low, high) in sorted(KAFKA_43_DEFINED.items()):
        ours = next((a for a in SUPPORTED.values() if int(a.key) == key), None)
        served = _pairs(ours.min_version, ours.max_version) if ours and ours.advertised else set()
        if ours is not None and not ours.advertised:
            served = _pairs(ours.min_version, ours.max_version)  # answered (KIP-714 APIs)
        if missing := _pairs(low, high) - served:
            rows.append((key, name, _ranges(missing),
                         KAFKA_43_REASONS.get(key, "not served yet")))
    return rows


def _kafka_43_section() -> list[str]:
    gaps = kafka_43_gaps()
    pairs = sum(high - low + 1 for _, low, high in KAFKA_43_DEFINED.values())
    lines = [
        "## Kafka 4.3's client APIs",
        "",
        f"Kafka 4.3.0's definitions offer {len(KAFKA_43_DEFINED)} APIs ({pairs} (API, version)",
        "pairs) to clients of a broker (recorded in `wire/kafka43_ranges.py`); the codec",
        "knows every one of them (kafka-python's definitions and `wire/supplement/`).",
        f"kafkette serves all but {sum(_count(v) for _, _, v, _ in gaps)} pairs:",
    ]
    return [*lines, *_differences_table("Known to Kafka 4.3, not served", gaps), ""]


def _pairs(low: int, high: int) -> set[int]:
    return set(range(low, high + 1))


def _ranges(versions: set[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``0-2, 5``."""
    runs: list[list[int]] = []
    for version in sorted(versions):
        if runs and version == runs[-1][1] + 1:
            runs[-1][1] = version
        else:
            runs.append([version, version])
    return ", ".join(_range(low, high) for low, high in runs)


def differences() -> tuple[list[tuple[int, str, str, str]], list[tuple[int, str, str, str]]]:
    """(pairs Kafka 4.0 advertises that kafkette does not, pairs kafkette advertises
    that Kafka 4.0 does not), each as rows of (api key, name, versions, reason)."""
    unserved, extra = [], []
    keys = sorted(set(KAFKA_40_ADVERTISED) | {int(k) for k in SUPPORTED})
    for key in keys:
        kafka = KAFKA_40_ADVERTISED.get(key)
        ours = next((a for a in SUPPORTED.values() if int(a.key) == key), None)
        theirs = _pairs(kafka[1], kafka[2]) if kafka else set()
        served = _pairs(ours.min_version, ours.max_version) if ours and ours.advertised else set()
        name = kafka[0] if kafka else ours.name  # type: ignore[union-attr]
        if missing := theirs - served:
            reason = UNSERVED_REASONS.get(key, "not served yet")
            unserved.append((key, name, _ranges(missing), reason))
        if more := served - theirs:
            reason = EXTRA_REASONS.get(key, "not advertised by Kafka 4.0")
            extra.append((key, name, _ranges(more), reason))
    return unserved, extra


def _differences_section() -> list[str]:
    unserved, extra = differences()
    kafka_pairs = sum(high - low + 1 for _, low, high in KAFKA_40_ADVERTISED.values())
    missing = sum(_count(versions) for _, _, versions, _ in unserved)
    lines = [
        "## Differs from Kafka 4.0",
        "",
        "Measured against the ApiVersions answer of Apache Kafka 4.0.0 (recorded in",
        "`wire/kafka40_ranges.py`; `compat-tests/test_api_probe.py` sends every pair).",
        f"Kafka 4.0 advertises {kafka_pairs} (API, version) pairs; kafkette advertises",
        f"{kafka_pairs - missing} of them.",
    ]
    lines += _differences_table("Advertised by Kafka 4.0, not by kafkette", unserved)
    lines += _differences_table("Advertised by kafkette, not by Kafka 4.0", extra)
    lines += ["", "### Answers that differ", ""]
    lines.extend(f"- {text}" for text in BEHAVIOUR_DIFFERENCES)
    lines.append("")
    return lines


def _differences_table(title: str, rows: list[tuple[int, str, str, str]]) -> list[str]:
    """A ``### title`` table of (key, API, versions, why); "(none)" when empty."""
    lines = ["", f"### {title}", "", "| Key | API | Versions | Why |",
             "|----:|-----|---------:|-----|"]  # fmt: skip
    lines.extend(f"| {k} | {n} | {v} | {r} |" for k, n, v, r in rows)
    return lines if rows else [*lines, "| | (none) | | |"]


def _count(versions: str) -> int:
    total = 0
    for part in versions.split(", "):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


def render() -> str:
    """The whole page as Markdown."""
    lines = [
        "# Protocol coverage",
        "",
        "Generated by `python -m kafkette.wire.coverage` from `wire/apis.py` (`SUPPORTED`)",
        "and Apache Kafka's message definitions as shipped in kafka-python "
        f"{_release_line(package_version('kafka-python'))}. Do not edit by hand.",
        "",
        "- **Advertised**: the range kafkette answers in ApiVersions. \"not advertised\": served",
        "  but left out of ApiVersions, as Kafka 4.0 does (GetTelemetrySubscriptions and",
        "  PushTelemetry without a metrics plugin, KIP-714; docs/operations-apis.md).",
        "- **Decoded**: the versions kafkette serves. Any other version is refused: with",
        "  UNSUPPORTED_VERSION (35) where the definitions know it and its response has a",
        "  top-level error code (ApiVersions: KIP-511's v0 answer), else by closing the",
        "  connection, as Kafka's socket server does.",
        "- **Definitions know**: the versions in Kafka's definition (`validVersions`).",
        "- **Flexible from**: the first version with compact encodings and tagged fields",
        "  (request header v2, response header v1; ApiVersions responses keep header v0).",
        "",
        "| Key | API | Advertised | Decoded | Definitions know | Flexible from | Notes |",
        "|----:|-----|-----------:|--------:|-----------------:|--------------:|-------|",
    ]
    lines.extend(_row(api) for api in sorted(SUPPORTED.values(), key=lambda a: a.key))
    lines.append("")
    lines.append(f"{len(SUPPORTED)} APIs.")
    lines.append("")
    lines.extend(_differences_section())
    lines.extend(_kafka_43_section())
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkette.wire.coverage", description=__doc__)
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT), help="file to write, - for stdout")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.output == "-":
        sys.stdout.write(page)
        return 0
    path = Path(args.output)
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != page:
            print(f"{path} is stale: run python -m kafkette.wire.coverage", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
