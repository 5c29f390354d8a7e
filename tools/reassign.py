"""``kafkette reassign generate|execute|verify|cancel|list``: kafka-reassign-partitions.sh's
modes, with its JSON files and its words, without a JVM.

* ``generate`` proposes where a topic's partitions go on ``--broker-list``: Kafka's spread
  (AdminUtils.assignReplicasToBrokers: partition p's first replica on broker
  ``(p + start) % n``, the others shifted by a per-round amount; with racks, the brokers
  alternate rack by rack and no rack holds two replicas while another holds none). The start
  is random, as in Kafka, so two runs may differ; the replication factor stays.
* ``execute`` prints the current assignment (save it: it is the rollback plan), optionally
  sets Kafka's replication throttles (``--throttle``), and sends AlterPartitionReassignments.
* ``verify`` asks ListPartitionReassignments and the topics' replicas: each partition "is
  completed" or "is still in progress"; once none of the plan's partitions moves (moves of
  other partitions do not count), it clears the throttles (``--preserve-throttles`` keeps
  them), as Kafka's tool does.
* ``cancel`` sends AlterPartitionReassignments with no target for the partitions that move.
* ``list`` shows every ongoing move with its adding and removing replicas.

confluent-kafka has no reassignment calls: those two requests go over kafkette's own client
(``wire_client.py``) to the broker DescribeCluster names as controller (on KRaft Kafka any
broker, which forwards them); topics, brokers and configs go through the AdminClient. A JSON
file may be ``-``, standard input. ``--timeout`` is milliseconds, as kafka-reassign-partitions.sh
takes it.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterable
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    ToolError,
    int64,
    partition_entries,
    partition_name,
    print_json,
    read_json_file,
    run_tool,
)
from kafkette.tools.wire_client import by_topic, error_text, open_client

PLAN_TOPICS = '{"version":1,"topics":[{"topic":"clicks"}]}'
PLAN_MOVE = '{"version":1,"partitions":[{"topic":"clicks","partition":0,"replicas":[1]}]}'
EPILOG = f"""examples:
  echo '{PLAN_TOPICS}' | kafkette reassign generate --topics-to-move-json-file - --broker-list 1
  echo '{PLAN_MOVE}' | kafkette reassign execute --reassignment-json-file -
  echo '{PLAN_MOVE}' | kafkette reassign verify --reassignment-json-file -
  kafkette reassign list
"""
DESCRIPTION = """Move partitions between brokers (like kafka-reassign-partitions.sh), usually
with files, as Kafka's tool takes them: `generate --topics-to-move-json-file topics.json
--broker-list 1,2,3` proposes a plan (save the proposed JSON as plan.json); `execute
--reassignment-json-file plan.json [--throttle BYTES_PER_S]` starts it and prints the current
assignment to roll back to; `verify --reassignment-json-file plan.json` until every partition
is completed (it then clears the throttles); `cancel --reassignment-json-file plan.json` stops
moves in progress. A JSON file may be -, standard input."""

ANY_LOG_DIR = "any"
BROKER_THROTTLES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
NOT_CONTROLLER = 41
EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use "
    "--additional to override this and create a new partition assignment in addition to "
    "the existing one. The --additional flag can also be used to change the throttle by "
    "resubmitting the current reassignment."
)

Partition = tuple[str, int]


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "reassign",
        help="move partitions between brokers (generate, execute, verify, cancel)",
        description=DESCRIPTION,
        epilog=EPILOG,
    )

    def action(name: str, help: str, examples: str) -> argparse.ArgumentParser:
        return ac.add_action(actions, name, help, examples, timeout_ms=True)

    sub = action(
        "generate",
        "propose a new assignment of topics' partitions to brokers",
        f"  echo '{PLAN_TOPICS}' | kafkette reassign generate "
        "--topics-to-move-json-file - --broker-list 1\n",
    )
    sub.add_argument(
        "--topics-to-move-json-file",
        required=True,
        metavar="FILE",
        help='{"version":1,"topics":[{"topic":"clicks"},...]} (- for stdin)',
    )
    sub.add_argument(
        "--broker-list",
        required=True,
        metavar="ID,ID,...",
        help="the brokers to spread the partitions over",
    )
    sub.add_argument("--disable-rack-aware", action="store_true", help="ignore the brokers' racks")
    sub.set_defaults(run=lambda args: run_tool(run_generate, args))

    sub = action(
        "execute",
        "start moving partitions to the replicas a plan names",
        f"  echo '{PLAN_MOVE}' | kafkette reassign execute --reassignment-json-file -\n",
    )
    plan_option(sub)
    sub.add_argument(
        "--additional",
        action="store_true",
        help="start even though other reassignments are in progress",
    )
    sub.add_argument(
        "--throttle",
        type=int64,
        default=-1,
        metavar="BYTES_PER_S",
        help="limit replication of the moving partitions to this rate (cleared "
        "by verify once done)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_execute, args))

    sub = action(
        "verify",
        "say whether a plan's moves are done; clear throttles when they are",
        f"  echo '{PLAN_MOVE}' | kafkette reassign verify --reassignment-json-file -\n",
    )
    plan_option(sub)
    preserve_option(sub)
    sub.set_defaults(run=lambda args: run_tool(run_verify, args))

    sub = action(
        "cancel",
        "stop a plan's moves that are in progress (back to the old replicas)",
        f"  echo '{PLAN_MOVE}' | kafkette reassign cancel --reassignment-json-file -\n",
    )
    plan_option(sub)
    preserve_option(sub)
    sub.set_defaults(run=lambda args: run_tool(run_cancel, args))

    sub = action("list", "list the reassignments in progress", "  kafkette reassign list\n")
    sub.set_defaults(run=lambda args: run_tool(run_list, args))


def plan_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--reassignment-json-file",
        required=True,
        metavar="FILE",
        help='{"version":1,"partitions":[{"topic":"t","partition":0,'
        '"replicas":[1,2]},...]} (- for stdin)',
    )


def preserve_option(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="leave the replication throttles as they are",
    )


# ---------------------------------------------------------------- JSON files


def read_json(path: str, option: str) -> dict:
    document = read_json_file(path, option)
    if not isinstance(document, dict) or document.get("version", 1) != 1:
        raise ToolError(f'{option} {path}: a JSON object with "version": 1 is expected', 2)
    return document


def topics_to_move(path: str) -> list[str]:
    document = read_json(path, "--topics-to-move-json-file")
    try:
        topics = [str(entry["topic"]) for entry in document.get("topics", [])]
    except (TypeError, KeyError):
        raise ToolError('--topics-to-move-json-file: each entry is {"topic": NAME}', 2) from None
    if duplicates(topics):
        raise ToolError(
            f"List of topics to reassign contains duplicate entries: "
            f"{', '.join(duplicates(topics))}",
            2,
        )
    return topics


def plan(path: str) -> dict[Partition, list[int]]:
    """The plan's target replicas by partition, checked as Kafka's tool checks them (in its
    order: an empty plan, an empty replica list, a partition twice, a replica twice)."""
    document = read_json(path, "--reassignment-json-file")
    entries = document.get("partitions", [])
    if entries == []:
        raise ToolError("Partition reassignment list cannot be empty", 2)
    targets: dict[Partition, list[int]] = partition_entries(
        entries,
        '--reassignment-json-file: each entry is {"topic": T, "partition": N, '
        '"replicas": [ID, ...]}',
        "Partition reassignment contains duplicate topic partitions: {partitions}",
        target_replicas,
    )
    for where, replicas in targets.items():
        if duplicates(map(str, replicas)):
            raise ToolError(
                f"Partition replica lists may not contain duplicate entries: "
                f"{name(where)} contains multiple entries for "
                f"{','.join(duplicates(map(str, replicas)))}",
                2,
            )
    return targets


def target_replicas(entry: dict) -> list[int]:
    """One plan entry's replicas (``log_dirs`` must be "any" each, one per replica)."""
    replicas = [int(r) for r in entry["replicas"]]
    where = partition_name(str(entry["topic"]), int(entry["partition"]))
    if not replicas:
        raise ToolError("Partition replica list cannot be empty", 2)
    log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
    if len(log_dirs) != len(replicas):
        raise ToolError(
            f"Size of replicas list {replicas} is different from size of log "
            f"dirs list {log_dirs} for partition {where}",
            2,
        )
    if any(d != ANY_LOG_DIR for d in log_dirs):
        raise ToolError(
            f'{where}: log_dirs other than "any" (moves between a '
            'broker\'s log directories) are not supported: use "any"',
            2,
        )
    return replicas


def duplicates(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    return sorted({item for item in items if item in seen or seen.add(item)})


def name(partition: Partition) -> str:
    return partition_name(*partition)


def reassignment_json(assignment: dict[Partition, list[int]]) -> str:
    """Kafka's reassignment JSON, compact and sorted by topic and partition."""
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {
                    "topic": t,
                    "partition": p,
                    "replicas": assignment[(t, p)],
                    "log_dirs": [ANY_LOG_DIR] * len(assignment[(t, p)]),
                }
                for t, p in sorted(assignment)
            ],
        },
        separators=(",", ":"),
    )


# ---------------------------------------------------------------- the cluster


def current_replicas(
    admin: Any, args: argparse.Namespace, topics: Iterable[str]
) -> dict[Partition, list[int]]:
    """Each partition's replicas (in the assignment's order) of the named topics."""
    metadata = ac.cluster_metadata(admin, args)
    found: dict[Partition, list[int]] = {}
    for topic in sorted(set(topics)):
        known = metadata.topics.get(topic)
        if known is None or known.error is not None:
            raise ToolError(f"Topic {topic} not found: see `kafkette topics list`")
        for pid, partition in known.partitions.items():
            found[(topic, pid)] = list(partition.replicas)
    return found


def brokers(admin: Any, args: argparse.Namespace) -> dict[int, Any]:
    cluster = ac.result(admin.describe_cluster(request_timeout=args.timeout), args)
    return {node.id: node for node in cluster.nodes}


def controller(admin: Any, args: argparse.Namespace) -> Any:
    cluster = ac.result(admin.describe_cluster(request_timeout=args.timeout), args)
    if cluster.controller is None:
        raise ToolError("the cluster names no controller now: retry in a moment")
    return cluster.controller


def controller_call(admin: Any, args: argparse.Namespace, api: str, body: dict) -> dict:
    """One reassignment request to the controller, asked again (after a fresh look at who it
    is) while the broker asked answers NOT_CONTROLLER, as Kafka's admin client does."""
    from kafkette.wire.apis import ApiKey

    with open_client(args) as client:

        def attempt() -> dict:
            node = controller(admin, args)
            return client.link(node.host, node.port).request(ApiKey[api], body)

        answer = client.retry(attempt, lambda a: a["error_code"] == NOT_CONTROLLER)
    if answer["error_code"]:
        raise ToolError(
            f"the controller refused: {error_text(answer['error_code'], answer['error_message'])}"
        )
    return answer


def ongoing(
    admin: Any, args: argparse.Namespace, partitions: Iterable[Partition] | None = None
) -> dict[Partition, dict]:
    """ListPartitionReassignments (every one, or those of ``partitions``): by partition,
    its replicas and the replicas being added and removed."""
    topics = None
    if partitions is not None:
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic(partitions).items()]
    answer = controller_call(
        admin,
        args,
        "LIST_PARTITION_REASSIGNMENTS",
        {"timeout_ms": int(args.timeout * 1000), "topics": topics},
    )
    return {
        (topic["name"], part["partition_index"]): {
            "replicas": list(part["replicas"]),
            "adding": list(part["adding_replicas"]),
            "removing": list(part["removing_replicas"]),
        }
        for topic in answer["topics"]
        for part in topic["partitions"]
    }


def alter(
    admin: Any, args: argparse.Namespace, targets: dict[Partition, list[int] | None]
) -> dict[Partition, str]:
    """AlterPartitionReassignments (None cancels): the partitions refused, with why."""
    topics = [
        {"name": t, "partitions": [{"partition_index": p, "replicas": targets[(t, p)]} for p in ps]}
        for t, ps in by_topic(targets).items()
    ]
    answer = controller_call(
        admin,
        args,
        "ALTER_PARTITION_REASSIGNMENTS",
        {"timeout_ms": int(args.timeout * 1000), "topics": topics},
    )
    return {
        (topic["name"], part["partition_index"]): error_text(
            part["error_code"], part["error_message"]
        )
        for topic in answer["responses"]
        for part in topic["partitions"]
        if part["error_code"]
    }


def alter_configs(
    admin: Any,
    args: argparse.Namespace,
    changes: dict[tuple[Any, str], dict[str, str | None]],
    hint: str,
) -> None:
    """IncrementalAlterConfigs: ``{(resource type, name): {config: value, or None to
    delete}}``."""
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    resources = [
        ConfigResource(
            kind,
            key,
            incremental_configs=[
                ConfigEntry(
                    config,
                    value,
                    incremental_operation=AlterConfigOpType.DELETE
                    if value is None
                    else AlterConfigOpType.SET,
                )
                for config, value in configs.items()
            ],
        )
        for (kind, key), configs in changes.items()
        if configs
    ]
    # librdkafka takes one BROKER resource per call (each goes to that broker).
    batches = [[r for r in resources if r.restype != ResourceType.BROKER]]
    batches += [[r] for r in resources if r.restype == ResourceType.BROKER]
    for batch in filter(None, batches):
        outcome = ac.results(
            admin.incremental_alter_configs(batch, request_timeout=args.timeout), args
        )
        for resource, value in outcome.items():
            if isinstance(value, Exception):
                raise ToolError(
                    f"could not change the replication throttles of "
                    f"{resource.name!r}: {ac.error_text(value)}: {hint}"
                )


def clear_throttles(
    admin: Any, args: argparse.Namespace, targets: dict[Partition, list[int]]
) -> list[str]:
    """Kafka's verify/cancel clean-up: every broker's and the plan's topics' throttles."""
    from confluent_kafka.admin import ResourceType

    broker_ids = sorted(set(brokers(admin, args)) | {r for rs in targets.values() for r in rs})
    topics = sorted({t for t, _ in targets})
    changes: dict[tuple[Any, str], dict[str, str | None]] = {}
    for broker_id in broker_ids:
        changes[(ResourceType.BROKER, str(broker_id))] = dict.fromkeys(BROKER_THROTTLES)
    for topic in topics:
        changes[(ResourceType.TOPIC, topic)] = dict.fromkeys(TOPIC_THROTTLES)
    alter_configs(admin, args, changes, "add --preserve-throttles to leave them")
    return [
        f"Clearing broker-level throttles on broker{plural(broker_ids)} "
        f"{','.join(map(str, broker_ids))}",
        f"Clearing topic-level throttles on topic{plural(topics)} {','.join(topics)}",
    ]


def plural(items: list) -> str:
    return "" if len(items) == 1 else "s"


def set_throttles(
    admin: Any,
    args: argparse.Namespace,
    moving: dict[Partition, dict],
    targets: dict[Partition, list[int]],
    current: dict[Partition, list[int]],
) -> None:
    """Kafka's --throttle: the moving partitions' source replicas throttled as leaders, their
    new replicas as followers, and the rate on every broker involved."""
    from confluent_kafka.admin import ResourceType

    moves: dict[Partition, tuple[set[int], set[int]]] = {}
    for where, state in moving.items():
        moves[where] = (set(state["replicas"]) - set(state["adding"]), set(state["adding"]))
    for where, replicas in targets.items():
        sources = moves[where][0] if where in moves else set(current[where])
        moves[where] = (sources, set(replicas) - sources)
    changes: dict[tuple[Any, str], dict[str, str | None]] = {}
    for topic in sorted({t for t, _ in moves}):
        mine = {p: move for (t, p), move in moves.items() if t == topic}
        changes[(ResourceType.TOPIC, topic)] = {
            TOPIC_THROTTLES[0]: ",".join(
                sorted(f"{p}:{b}" for p, (src, _) in mine.items() for b in src)
            ),
            TOPIC_THROTTLES[1]: ",".join(
                sorted(f"{p}:{b}" for p, (src, dst) in mine.items() for b in dst - src)
            ),
        }
    for broker_id in sorted({b for src, dst in moves.values() for b in src | dst}):
        changes[(ResourceType.BROKER, str(broker_id))] = dict.fromkeys(
            BROKER_THROTTLES[:2], str(args.throttle)
        )
    alter_configs(
        admin,
        args,
        changes,
        "a broker without replication throttles (kafkette "
        "has none) refuses them; run without --throttle",
    )


# ---------------------------------------------------------------- spreading replicas


def spread(
    broker_racks: dict[int, str | None],
    partitions: int,
    replication: int,
    start: int | None = None,
    shift: int | None = None,
) -> list[list[int]]:
    """Kafka's replica assignment for a topic of ``partitions`` x ``replication`` on these
    brokers (AdminUtils.assignReplicasToBrokers), rack-aware when every broker has a rack."""
    if replication > len(broker_racks):
        raise ToolError(
            f"Replication factor: {replication} larger than available brokers: {len(broker_racks)}."
        )
    rack_aware = all(rack is not None for rack in broker_racks.values())
    order = rack_alternated(broker_racks) if rack_aware else sorted(broker_racks)
    count = len(order)
    racks = len(set(broker_racks.values())) if rack_aware else 1
    first = random.randrange(count) if start is None else start
    shift = random.randrange(count) if shift is None else shift
    assignment = []
    for pid in range(partitions):
        if pid > 0 and pid % count == 0:
            shift += 1
        leader_index = (pid + first) % count
        replicas = [order[leader_index]]
        step = 0
        while len(replicas) < replication:
            broker = order[replica_index(leader_index, shift * racks, step, count)]
            step += 1
            if rack_aware and not fits(broker, replicas, broker_racks, racks, count):
                continue
            if not rack_aware and broker in replicas:
                continue
            replicas.append(broker)
        assignment.append(replicas)
    return assignment


def replica_index(first: int, shift: int, index: int, count: int) -> int:
    return (first + 1 + (shift + index) % (count - 1)) % count


def fits(
    broker: int, chosen: list[int], racks_of: dict[int, str | None], racks: int, count: int
) -> bool:
    """A rack gets a second replica only once every rack has one; a broker likewise."""
    used_racks = {racks_of[b] for b in chosen}
    rack_ok = racks_of[broker] not in used_racks or len(used_racks) == racks
    return rack_ok and (broker not in chosen or len(chosen) == count)


def rack_alternated(broker_racks: dict[int, str | None]) -> list[int]:
    """Brokers taken one rack at a time (racks and brokers in order): 1(a), 3(b), 2(a)..."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(broker_racks):
        by_rack.setdefault(str(broker_racks[broker]), []).append(broker)
    queues = [by_rack[rack] for rack in sorted(by_rack)]
    order = []
    while any(queues):
        order += [queue.pop(0) for queue in queues if queue]
    return order


# ---------------------------------------------------------------- actions


def run_generate(args: argparse.Namespace) -> None:
    topics = topics_to_move(args.topics_to_move_json_file)
    try:
        wanted = [int(b) for b in args.broker_list.split(",")]
    except ValueError:
        raise ToolError(
            f"--broker-list {args.broker_list!r} is not a list of broker ids: "
            "write e.g. --broker-list 1,2,3",
            2,
        ) from None
    if duplicates(map(str, wanted)):
        raise ToolError(
            f"Broker list contains duplicate entries: {','.join(duplicates(map(str, wanted)))}", 2
        )
    admin = ac.admin_client(args)
    current = current_replicas(admin, args, topics)
    nodes = brokers(admin, args)
    racks = {b: (None if args.disable_rack_aware else nodes[b].rack) for b in wanted if b in nodes}
    if not args.disable_rack_aware and len({r is None for r in racks.values()}) > 1:
        raise ToolError(
            "Not all brokers have rack information. Add --disable-rack-aware in "
            "command line to make replica assignment without rack information."
        )
    proposed: dict[Partition, list[int]] = {}
    for topic in topics:
        mine = sorted(p for t, p in current if t == topic)
        for pid, replicas in enumerate(spread(racks, len(mine), len(current[(topic, mine[0])]))):
            proposed[(topic, pid)] = replicas
    if args.json:
        print_json(
            {
                "current": json.loads(reassignment_json(current)),
                "proposed": json.loads(reassignment_json(proposed)),
            }
        )
        return
    print(f"Current partition replica assignment\n{reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}")


def run_execute(args: argparse.Namespace) -> None:
    targets = plan(args.reassignment_json_file)
    admin = ac.admin_client(args)
    moving = ongoing(admin, args)
    if moving and not args.additional:
        raise ToolError(EXISTING)
    known = brokers(admin, args)
    unknown = sorted({r for rs in targets.values() for r in rs} - set(known))
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]}: see `kafkette metadata`")
    current = current_replicas(admin, args, {t for t, _ in targets})
    missing = sorted(set(targets) - set(current))
    if missing:
        raise ToolError(f"Unable to find partition: {', '.join(map(name, missing))}")
    rollback = reassignment_json({p: current[p] for p in targets})
    if not args.json:
        print(
            f"Current partition replica assignment\n\n{rollback}\n\n"
            "Save this to use as the --reassignment-json-file option during rollback"
        )
    if args.throttle >= 0:
        if not args.json:
            print(
                "Warning: You must run --verify periodically, until the reassignment "
                "completes, to ensure the throttle is removed."
            )
        set_throttles(admin, args, moving, targets, current)
        if not args.json:
            print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    refused = alter(admin, args, dict(targets))
    if refused:
        raise ToolError(
            "Error reassigning partition(s): "
            + "; ".join(f"{name(p)}: {why}" for p, why in sorted(refused.items()))
        )
    if args.json:
        print_json(
            {"started": [name(p) for p in sorted(targets)], "rollback": json.loads(rollback)}
        )
        return
    print(
        f"Successfully started partition reassignment{plural(list(targets))} for "
        f"{','.join(name(p) for p in sorted(targets))}"
    )


def run_verify(args: argparse.Namespace) -> None:
    targets = plan(args.reassignment_json_file)
    admin = ac.admin_client(args)
    moving = ongoing(admin, args, targets)  # the plan's partitions only, as Kafka's tool asks
    settled = {
        p: r
        for p, r in current_replicas(admin, args, {t for t, _ in targets}).items()
        if p in targets and p not in moving
    }
    states = []
    for where in sorted(targets):
        if where in moving:
            state, line = (
                "in_progress",
                f"Reassignment of partition {name(where)} is still in progress.",
            )
        elif settled.get(where) == targets[where]:
            state, line = "completed", f"Reassignment of partition {name(where)} is completed."
        else:
            now = ",".join(map(str, settled.get(where, [])))
            state = "not_started"
            line = (
                f"There is no active reassignment of partition {name(where)}, but replica "
                f"set is {now} rather than {','.join(map(str, targets[where]))}."
            )
        states.append({"partition": name(where), "state": state, "line": line})
    cleared = [] if moving or args.preserve_throttles else clear_throttles(admin, args, targets)
    if args.json:
        print_json(
            {
                "partitions": [{k: s[k] for k in ("partition", "state")} for s in states],
                "throttles_cleared": bool(cleared),
            }
        )
        return
    print("Status of partition reassignment:")
    for state in states:
        print(state["line"])
    print()
    for line in cleared:
        print(line)


def run_cancel(args: argparse.Namespace) -> None:
    targets = plan(args.reassignment_json_file)
    admin = ac.admin_client(args)
    # Kafka's tool cancels a move that removes replicas, or one that adds none.
    cancelling = sorted(
        p for p, s in ongoing(admin, args, targets).items() if not s["adding"] or s["removing"]
    )
    if cancelling:
        refused = alter(admin, args, dict.fromkeys(cancelling))
        if refused:
            raise ToolError(
                f"Error cancelling partition reassignment{plural(list(refused))} "
                "for: " + "; ".join(f"{name(p)}: {why}" for p, why in sorted(refused.items()))
            )
    cleared = [] if args.preserve_throttles else clear_throttles(admin, args, targets)
    if args.json:
        print_json({"cancelled": [name(p) for p in cancelling], "throttles_cleared": bool(cleared)})
        return
    if cancelling:
        print(
            f"Successfully cancelled partition reassignment{plural(cancelling)} for: "
            f"{','.join(map(name, cancelling))}"
        )
    else:
        print("None of the specified partition reassignments are active.")
    for line in cleared:
        print(line)


def run_list(args: argparse.Namespace) -> None:
    admin = ac.admin_client(args)
    moving = ongoing(admin, args)
    if args.json:
        print_json([{"partition": name(p), **moving[p]} for p in sorted(moving)])
        return
    if not moving:
        print("No partition reassignments found.")
        return
    print("Current partition reassignments:")
    for where in sorted(moving):
        state = moving[where]
        line = f"{name(where)}: replicas: {','.join(map(str, state['replicas']))}."
        if state["adding"]:
            line += f" adding: {','.join(map(str, state['adding']))}."
        if state["removing"]:
            line += f" removing: {','.join(map(str, state['removing']))}."
        print(line)
