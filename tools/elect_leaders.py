"""``kafkette elect-leaders``: kafka-leader-election.sh's job, without a JVM.

ElectLeaders (confluent-kafka's AdminClient has the call) for one partition
(``--topic``/``--partition``), the partitions of a JSON file (``--path-to-json-file``,
``{"partitions": [{"topic": "t", "partition": 0}, ...]}``, ``-`` for stdin) or every
partition (``--all-topic-partitions``). PREFERRED moves leadership back to each partition's
first replica when it is in sync; UNCLEAN elects a replica out of sync for a partition that
has no leader, accepting the loss of what only the old leader had. The answer is worded as
Kafka's tool words it: "Successfully completed leader election (PREFERRED) for partitions
...", "Valid replica already elected for partitions ..." (no election was needed, which is
not a failure); a partition that could not be elected makes the run fail (exit 1).
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    ToolError,
    add_client_options,
    add_json_option,
    int32,
    partition_entries,
    partition_name,
    print_json,
    read_json_file,
    run_tool,
)

ELECTION = '{"partitions":[{"topic":"clicks","partition":1}]}'
EPILOG = f"""examples:
  kafkette elect-leaders --election-type PREFERRED --all-topic-partitions
  kafkette elect-leaders --election-type PREFERRED --topic clicks --partition 0
  echo '{ELECTION}' | kafkette elect-leaders --election-type UNCLEAN --path-to-json-file -
"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "elect-leaders",
        help="elect preferred (or unclean) partition leaders",
        description="Elect partition leaders: the preferred replica, or (unclean) any replica "
        "of a partition without a leader (like kafka-leader-election.sh).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_client_options(parser)
    ac.add_timeout_option(parser)
    add_json_option(parser)
    parser.add_argument(
        "--election-type",
        required=True,
        type=str.upper,
        choices=("PREFERRED", "UNCLEAN"),
        help="PREFERRED: the first replica, when in sync; UNCLEAN: any replica "
        "of a partition that has no leader",
    )
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--topic", metavar="TOPIC", help="one partition's topic (with --partition)")
    scope.add_argument(
        "--path-to-json-file",
        metavar="FILE",
        help='{"partitions": [{"topic": "t", "partition": 0}, ...]} (- for stdin)',
    )
    scope.add_argument(
        "--all-topic-partitions",
        action="store_true",
        help="every partition the election type applies to",
    )
    parser.add_argument("--partition", type=int32, metavar="N", help="the partition of --topic")
    parser.set_defaults(run=lambda args: run_tool(run_elect, args))


def partitions_of(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """The partitions to elect for; None for every one."""
    if args.topic is not None:
        if args.partition is None:
            raise ToolError("--topic needs --partition, e.g. --topic clicks --partition 0", 2)
        return [(args.topic, args.partition)]
    if args.partition is not None:
        raise ToolError("--partition goes with --topic", 2)
    if args.all_topic_partitions:
        return None
    document = read_json_file(args.path_to_json_file, "--path-to-json-file")
    if not isinstance(document, dict) or "partitions" not in document:
        raise ToolError('Replica election data is missing "partitions" field', 2)
    return list(
        partition_entries(
            document["partitions"],
            '--path-to-json-file: each entry is {"topic": T, "partition": N}',
            "Replica election data contains duplicate partitions: {partitions}",
        )
    )


def kafka_error(value: Any) -> Any:
    """The KafkaError of one partition's result (a KafkaException wraps one), or None."""
    from confluent_kafka import KafkaException

    if isinstance(value, KafkaException):
        return value.args[0]
    return value


def run_elect(args: argparse.Namespace) -> None:
    from confluent_kafka import ElectionType, TopicPartition

    wanted = partitions_of(args)
    admin = ac.admin_client(args)
    kind = ElectionType[args.election_type]
    request = None if wanted is None else [TopicPartition(t, p) for t, p in wanted]
    # No request_timeout/operation_timeout: confluent-kafka 2.16 refuses either
    # (SystemError); ``ac.result`` bounds the wait by --timeout instead.
    future = admin.elect_leaders(kind, request)
    try:
        outcome: dict[Any, Any] = ac.result(future, args)
    except ToolError:
        raise
    except Exception as exc:
        raise ToolError(f"the leader election failed: {ac.error_text(exc)}") from exc
    elected, needless, failed = [], [], []
    for tp in sorted(outcome, key=lambda tp: (tp.topic, tp.partition)):
        error = kafka_error(outcome[tp])
        where = partition_name(tp.topic, tp.partition)
        if error is None:
            elected.append(where)
        elif error.name() == "ELECTION_NOT_NEEDED":
            needless.append(where)
        else:
            failed.append((where, f"{error.str()} ({error.name()})"))
    if args.json:
        print_json(
            {
                "election_type": args.election_type,
                "elected": elected,
                "not_needed": needless,
                "failed": [{"partition": p, "error": why} for p, why in failed],
            }
        )
    else:
        if elected:
            print(
                f"Successfully completed leader election ({args.election_type}) for "
                f"partitions {', '.join(elected)}"
            )
        if needless:
            print(f"Valid replica already elected for partitions {', '.join(needless)}")
    if failed:
        raise ToolError(
            f"{len(failed)} replica(s) could not be elected: "
            + "; ".join(f"{p}: {why}" for p, why in failed)
        )
