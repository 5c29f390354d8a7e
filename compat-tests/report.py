"""Turn a compatibility run into ``docs/compatibility.md``.

Usage (from the repo root, after ``pytest compat-tests``)::

    .venv/bin/python compat-tests/report.py [--results compat-tests/.build/results.json]
                                                 [--out docs/compatibility.md]

Reads the JSON the suite's conftest writes (one row per family x scenario) and renders a
families x scenarios table, the client versions, the broker tested and one line per failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_RESULTS = HERE / ".build" / "results.json"
DEFAULT_OUT = HERE.parent / "docs" / "compatibility.md"

# Written once, kept across regenerations: answers measured against Kafka 4.0.0.
KAFKA_40_ANSWERS = """
## Answers measured against Kafka 4.0

Where kafkette's answer once differed from Apache Kafka 4.0.0's, the same raw request
was sent to the reference broker and kafkette now answers as it did;
`tests/broker/test_kafka4_answers.py` pins each answer. What still differs, pair by
pair with its reason, is in `docs/protocol-coverage.md` ("Differs from Kafka 4.0").

- **Version ranges**: JoinGroup is advertised 2-9 (0-1 were removed by KIP-896).
  Produce is advertised 0-12 as Kafka 4.0 does (for librdkafka, KAFKA-18659), and
  Produce 0-2 close the connection, as on Kafka 4.0 (its log: "unsupported version").
- **DescribeConfigs for the broker**: every config set at start is STATIC_BROKER_CONFIG,
  whether it came from the properties file, `--config` or a `serve` flag that stands
  for a config (`--listen` is `listeners`, `--advertised-listener` is
  `advertised.listeners`, `--data-dir` is `log.dirs`); with `include_synonyms` a static
  config lists the static value, then the default (left out when null), as Kafka does.
  With `--listen` alone, `advertised.listeners` shows what clients are told (the listen
  address, the bound port when it was 0).
- **OffsetCommit from a member the coordinator does not know**: with the topic unknown,
  UNKNOWN_TOPIC_OR_PARTITION first (all versions). A commit without generation (-1) to
  a group that does not exist or has no members is accepted whatever member id it
  names; with a generation to a group that does not exist: ILLEGAL_GENERATION up to
  v8, GROUP_ID_NOT_FOUND from v9; to a group with members: UNKNOWN_MEMBER_ID for an
  unknown (or empty) member id whatever the generation, ILLEGAL_GENERATION for a known
  member with another generation.
- **Heartbeat from an unknown member** (v0-4): UNKNOWN_MEMBER_ID, group or no group; a
  known member with another generation: ILLEGAL_GENERATION.
- **A second member joins, static membership disabled** (JoinGroup 2-9): the first
  member's heartbeat gets REBALANCE_IN_PROGRESS, the second join waits for the first
  member's rejoin; both get generation + 1, the first member stays leader and alone
  receives the member list (2 members); a member that does not rejoin within its
  rebalance timeout is dropped (the joiner then gets 1 member). Measured the same on
  both brokers, raw and with two kafka-python consumers (4 partitions: 4, then 2 + 2).
- **SyncGroup 5+ without protocol type or name**: INCONSISTENT_GROUP_PROTOCOL, checked
  before anything else.
- **`message.format.version` in CreateTopics**: Kafka 4.0 removed it (KIP-724):
  INVALID_CONFIG, "Unknown topic config name: message.format.version", with or
  without `validate_only`.

`compat-tests/test_api_probe.py` sends every (API, version) pair Kafka 4.0 advertises
(its ApiVersions answer, recorded in `wire/kafka40_ranges.py`) to the broker under test
as a minimal request; against the reference: `pytest compat-tests/test_api_probe.py
--bootstrap 127.0.0.1:PORT -s`.
"""

SCENARIOS: dict[str, str] = {
    "metadata_auto_create": "Metadata for an unknown topic auto-creates it",
    "create_delete_topic": "CreateTopics / DeleteTopics",
    "create_partitions": "CreatePartitions, then produce to the new partition",
    "codec_none": "Produce + consume, no compression",
    "codec_gzip": "Produce + consume, gzip",
    "codec_snappy": "Produce + consume, snappy",
    "codec_lz4": "Produce + consume, lz4",
    "codec_zstd": "Produce + consume, zstd",
    "bulk_roundtrip": "3000 records (lz4) in many batches and fetches",
    "headers_nulls": "Headers, null key, null value, empty key/value",
    "near_max_message_bytes": "A record just under message.max.bytes (1048588)",
    "too_large_rejected": "A record over message.max.bytes is refused (MESSAGE_TOO_LARGE)",
    "idempotent_produce": "Idempotent produce (enable.idempotence, acks=all)",
    "consume_earliest": "Consume from earliest",
    "consume_latest": "Consume relative to latest (ListOffsets -1)",
    "consume_timestamp": "Consume from a timestamp (ListOffsets by time)",
    "seek_reread": "Seek back and re-read",
    "group_commit_resume": "Group consume, commit, restart resumes at the commit",
    "group_two_members": "A second member joins: rebalance, one partition each",
    "describe_alter_configs": "DescribeConfigs / (Incremental)AlterConfigs on a topic",
    "delete_records": "DeleteRecords moves the log start offset",
    "list_describe_groups": "ListGroups / DescribeGroups",
    "spark_pattern": "Spark source/sink calls (describeTopics, listOffsets, assign+seek+poll)",
    "txn_commit_abort": "Transactions: commit, abort, commit; read_committed sees only committed",
    "txn_offsets": "Consume-transform-produce with sendOffsetsToTransaction (abort, then commit)",
    "txn_fencing": "Zombie fencing: same transactional.id fences the old producer",
    "txn_fencing_commit": "Zombie fencing: the fenced producer's EndTxn is refused",
    # test_security.py: a secured broker (TLS, mTLS, SASL_SSL, StandardAuthorizer ACLs)
    "tls_roundtrip": "TLS (test CA): produce, consume, a group via the SSL listener",
    "mtls_principal": "Mutual TLS: the principal is the certificate's subject",
    "sasl_plain": "SASL_SSL PLAIN: produce + consume",
    "sasl_scram_sha_256": "SASL_SSL SCRAM-SHA-256: produce + consume",
    "sasl_scram_sha_512": "SASL_SSL SCRAM-SHA-512: produce + consume",
    "sasl_wrong_password": "Wrong password / unknown user: SASL_AUTHENTICATION_FAILED",
    "acl_produce_consume": "ACLs: write, read, deny wins, ANONYMOUS refused, Metadata filtered",
    "acl_group": "ACLs: group consume allowed / GROUP_AUTHORIZATION_FAILED",
    "acl_admin": "ACLs: create under a prefix, no delete, no alter configs",
}
CELL = {"passed": "pass", "failed": "**FAIL**", "error": "**ERROR**", "skipped": "skip"}


def base_scenario(scenario: str) -> str:
    return "codec" if scenario.startswith("codec_") else scenario


def render(run: dict) -> str:
    results = run["results"]
    families = list(run.get("declared") or dict.fromkeys(r["family"] for r in results))
    declared = {f: set(s) for f, s in (run.get("declared") or {}).items()}
    cells = {(r["family"], r["scenario"]): r for r in results}
    scenarios = list(SCENARIOS) + sorted({r["scenario"] for r in results} - set(SCENARIOS))

    lines = ["# Client compatibility", ""]
    lines.append(
        "Generated by `compat-tests/report.py` from a run of the client compatibility suite "
        "(`pytest compat-tests`). Do not edit by hand; re-run the suite and the script."
    )
    lines.append("")
    started = " (started by the suite)" if run.get("started_by_suite") else ""
    lines.append(f"- Broker tested: **{run.get('broker', 'unknown')}**{started}")
    lines.append(f"- Run: {run.get('created', 'unknown')}")
    if run.get("started_by_suite"):
        lines.append(f"- Broker exit code after SIGTERM: {run.get('broker_exit_code')}")
    counts: dict[str, int] = {}
    for r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    lines.append(f"- Outcomes: {summary}")
    lines.append("")
    lines.append("## Clients")
    lines.append("")
    for family in families:
        lines.append(f"- `{family}`: {run.get('families', {}).get(family, 'not run')}")
    lines.append("")
    lines.append("## Matrix")
    lines.append("")
    lines.append(
        "`pass`/`**FAIL**`: the scenario ran; `n/a`: the client cannot express it "
        "(e.g. kcat has no admin API); `skip`: the client's tool is missing on the machine; "
        "`-`: not run."
    )
    lines.append("")
    lines.append("| Scenario | " + " | ".join(families) + " |")
    lines.append("|---|" + "---|" * len(families))
    for scenario in scenarios:
        row = []
        for family in families:
            result = cells.get((family, scenario))
            if result is not None:
                row.append(CELL.get(result["outcome"], result["outcome"]))
            elif family in declared and base_scenario(scenario) not in declared[family]:
                row.append("n/a")
            else:
                row.append("-")
        title = SCENARIOS.get(scenario, scenario)
        lines.append(f"| `{scenario}`: {title} | " + " | ".join(row) + " |")
    lines.append("")
    failures = [r for r in results if r["outcome"] in ("failed", "error")]
    lines.append("## What the clients saw")
    lines.append("")
    if not failures:
        lines.append("Every scenario that ran passed.")
    for r in failures:
        message = r["message"].replace("|", "\\|")
        lines.append(f"- `{r['family']}` / `{r['scenario']}`: {message}")
    skipped = [r for r in results if r["outcome"] == "skipped"]
    if skipped:
        lines.append("")
        lines.append("## Skipped")
        lines.append("")
        for r in skipped:
            lines.append(f"- `{r['family']}` / `{r['scenario']}`: {r['message']}")
    lines.append("")
    lines.append("## Reproduce")
    lines.append("")
    lines.append("From the repository root, with the Python of the environment `kafkette[test]` is")
    lines.append("installed in (README's set-up: `.venv/bin/python`):")
    lines.append("")
    lines.append("```sh")
    lines.append("python -m pytest compat-tests -q            # starts kafkette itself")
    lines.append("python -m pytest compat-tests -q --bootstrap HOST:PORT --broker-name NAME")
    lines.append("python compat-tests/report.py               # rewrites this file")
    lines.append("```")
    lines.extend(KAFKA_40_ANSWERS.splitlines())
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not args.results.exists():
        print(f"no results at {args.results}; run pytest compat-tests first", file=sys.stderr)
        return 2
    run = json.loads(args.results.read_text())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(run))
    print(f"wrote {args.out} ({len(run['results'])} results)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
