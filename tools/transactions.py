"""``kafkette transactions list|describe|describe-producers|find-hanging|abort``: the jobs of
``kafka-transactions.sh``, without a JVM.

confluent-kafka has no call for any of these APIs, so the questions go over kafkette's own
client codec (``wire_client.py``), asked as Kafka's AdminClient asks them:

* ``list``: ListTransactions to every broker (each lists the transactional ids it
  coordinates), with its state, producer id and duration filters.
* ``describe``: FindCoordinator (key type TRANSACTION) then DescribeTransactions there.
* ``describe-producers``: DescribeProducers to the partition's leader (or ``--broker-id``).
* ``find-hanging``: Kafka's own test for a hanging transaction. A partition holds an open
  transaction (DescribeProducers: a current transaction start offset) whose producer last
  wrote longer ago than ``--max-transaction-timeout`` minutes, and the coordinator does not
  expect to finish it: no transactional id maps to the producer id (ListTransactions with a
  producer id filter), the id is gone (DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND),
  or the transaction the coordinator knows does not include that partition. Such a
  transaction holds the partition's last stable offset for ever: read_committed consumers
  stop there.
* ``abort``: WriteTxnMarkers (an ABORT marker) to the partition's leader with the producer's
  id, epoch and coordinator epoch, as AdminClient.abortTransaction sends it. ``--start-offset``
  finds those with DescribeProducers (a coordinator epoch of -1, a producer that never saw a
  marker, becomes 0, as Kafka's tool does).

The wire client connects as ``-X`` says (TLS, SASL PLAIN/SCRAM), as the other tools do.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterable

from kafkette.tools import admin_client as ac
from kafkette.tools.common import (
    ToolError,
    dash,
    int16,
    int32,
    int64,
    partition_name,
    print_json,
    print_table,
    run_tool,
)
from kafkette.tools.wire_client import (
    KEY_TYPE_TRANSACTION,
    RETRIABLE,
    Link,
    Node,
    WireClient,
    by_topic,
    error_text,
    open_client,
)

EPILOG = """examples:
  kafkette transactions list
  kafkette transactions list --state Ongoing --duration-filter 60000
  kafkette transactions find-hanging --broker-id 1
  kafkette transactions find-hanging --topic clicks --max-transaction-timeout 0
  kafkette transactions describe-producers --topic clicks --partition 0
"""

# Kafka's transaction states, as ListTransactions and DescribeTransactions name them.
STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)
TRANSACTIONAL_ID_NOT_FOUND = 105


def register(commands: argparse._SubParsersAction) -> None:
    actions = ac.add_tool(
        commands,
        "transactions",
        help="list, describe, find hanging and abort transactions",
        description="List and describe transactions, find hanging ones and abort them "
        "(like kafka-transactions.sh).",
        epilog=EPILOG,
    )

    def action(name: str, help: str, examples: str) -> argparse.ArgumentParser:
        return ac.add_action(actions, name, help, examples)

    sub = action(
        "list",
        "list transactional ids with their coordinator, producer id and state",
        "  kafkette transactions list\n"
        "  kafkette transactions list --state Ongoing --state PrepareCommit\n"
        "  kafkette transactions list --duration-filter 60000   # open over a minute\n",
    )
    sub.add_argument(
        "--state",
        action="append",
        default=[],
        metavar="STATE",
        help=f"only this state (repeatable): {', '.join(STATES[:-1])}",
    )
    sub.add_argument(
        "--producer-id",
        action="append",
        type=int64,
        default=[],
        metavar="ID",
        help="only this producer id (repeatable)",
    )
    sub.add_argument(
        "--duration-filter",
        type=int64,
        default=-1,
        metavar="MS",
        help="only transactions running longer than this many milliseconds",
    )
    sub.set_defaults(run=lambda args: run_tool(run_list, args))

    sub = action(
        "describe",
        "show a transactional id's state, producer and partitions",
        "  kafkette transactions describe --transactional-id my-txn\n",
    )
    sub.add_argument(
        "--transactional-id",
        required=True,
        action="append",
        metavar="ID",
        help="the transactional id (repeatable)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_describe, args))

    sub = action(
        "describe-producers",
        "show a partition's active producers and open transactions",
        "  kafkette transactions describe-producers --topic clicks --partition 0\n",
    )
    partition_options(sub, required=True)
    sub.add_argument(
        "--broker-id", type=int32, metavar="ID", help="ask this replica instead of the leader"
    )
    sub.set_defaults(run=lambda args: run_tool(run_describe_producers, args))

    sub = action(
        "find-hanging",
        "find open transactions their coordinator will never finish",
        "  kafkette transactions find-hanging --broker-id 1\n"
        "  kafkette transactions find-hanging --topic clicks --partition 0\n",
    )
    sub.add_argument(
        "--broker-id",
        type=int32,
        metavar="ID",
        help="search the partitions this broker holds a replica of",
    )
    partition_options(sub, required=False)
    sub.add_argument(
        "--max-transaction-timeout",
        type=int64,
        default=15,
        metavar="MINUTES",
        help="only transactions whose producer last wrote longer ago than this "
        "(the cluster's transaction.max.timeout.ms; default 15)",
    )
    sub.set_defaults(run=lambda args: run_tool(run_find_hanging, args))

    sub = action(
        "abort",
        "abort a hanging transaction (writes an ABORT marker to the partition)",
        "  kafkette transactions abort --topic clicks --partition 0 --start-offset 42\n"
        "  kafkette transactions abort --topic clicks --partition 0 --producer-id 7 "
        "--producer-epoch 0 --coordinator-epoch 3\n",
    )
    partition_options(sub, required=True)
    sub.add_argument(
        "--start-offset",
        type=int64,
        metavar="OFFSET",
        help="the first offset of the transaction to abort (find-hanging's START-OFFSET)",
    )
    sub.add_argument(
        "--producer-id",
        type=int64,
        metavar="ID",
        help="or name the producer: its id, with --producer-epoch and --coordinator-epoch",
    )
    sub.add_argument("--producer-epoch", type=int16, metavar="EPOCH")
    sub.add_argument("--coordinator-epoch", type=int32, metavar="EPOCH")
    sub.set_defaults(run=lambda args: run_tool(run_abort, args))


def partition_options(sub: argparse.ArgumentParser, required: bool) -> None:
    sub.add_argument("--topic", required=required, metavar="TOPIC", help="the topic")
    sub.add_argument(
        "--partition", required=required, type=int32, metavar="N", help="the partition number"
    )


# ---------------------------------------------------------------- over the wire


def ask(link: Link, api: str, body: dict, lowest: int = 0, highest: int | None = None) -> dict:
    from kafkette.wire.apis import ApiKey

    return link.request(ApiKey[api], body, lowest=lowest, highest=highest)


def topic_layout(client: WireClient, topics: list[str] | None) -> dict[str, dict[int, dict]]:
    """``{topic: {partition: {"leader", "replicas"}}}`` from Metadata (every topic for None);
    a topic that does not exist is one line, as the other tools word it."""
    body = ask(
        client.bootstrap(),
        "METADATA",
        {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        },
        lowest=1,
    )
    layout: dict[str, dict[int, dict]] = {}
    for topic in body["topics"]:
        if topic["error_code"] == 3:  # UNKNOWN_TOPIC_OR_PARTITION
            raise ToolError(f"topic {topic['name']!r} does not exist: see `kafkette topics list`")
        if topic["error_code"]:
            raise ToolError(
                f"could not describe topic {topic['name']!r}: {error_text(topic['error_code'])}"
            )
        layout[topic["name"]] = {
            p["partition_index"]: {"leader": p["leader_id"], "replicas": list(p["replica_nodes"])}
            for p in topic["partitions"]
        }
    return layout


def node_link(client: WireClient, nodes: dict[int, Node], node_id: int, what: str) -> Link:
    node = nodes.get(node_id)
    if node is None:
        raise ToolError(
            f"broker {node_id} ({what}) is not in the cluster: see `kafkette topics describe`"
        )
    return client.node_link(node)


def list_transactions(
    client: WireClient, states: list[str], producer_ids: Iterable[int], duration_ms: int = -1
) -> list[dict]:
    """Every broker's ListTransactions answer, as rows with the broker as coordinator."""
    rows = []
    body_in = {
        "state_filters": states,
        "producer_id_filters": sorted(set(producer_ids)),
        "duration_filter": duration_ms,
    }
    for node in client.brokers():
        body = ask(
            client.node_link(node),
            "LIST_TRANSACTIONS",
            body_in,
            lowest=1 if duration_ms >= 0 else 0,
        )
        if body["error_code"]:
            raise ToolError(
                f"broker {node.node_id} did not list its transactions: "
                f"{error_text(body['error_code'])}"
            )
        rows += [
            {
                "transactional_id": t["transactional_id"],
                "coordinator": node.node_id,
                "producer_id": t["producer_id"],
                "state": t["transaction_state"],
            }
            for t in body["transaction_states"]
        ]
    return sorted(rows, key=lambda r: (r["transactional_id"], r["coordinator"]))


def describe_transactions(client: WireClient, ids: list[str]) -> dict[str, dict | None]:
    """DescribeTransactions of each id at its coordinator (FindCoordinator, key type
    TRANSACTION); None for an id the coordinator does not know (TRANSACTIONAL_ID_NOT_FOUND:
    expired, or never used). An id whose coordinator is loading or moved is asked again."""
    described: dict[str, dict | None] = {}

    def attempt() -> bool:
        pending = [i for i in ids if i not in described]
        coordinators = client.coordinators(pending, KEY_TYPE_TRANSACTION)
        for node in set(coordinators.values()):
            mine = [i for i in pending if coordinators[i] == node]
            body = ask(client.node_link(node), "DESCRIBE_TRANSACTIONS", {"transactional_ids": mine})
            for state in body["transaction_states"]:
                code, txn_id = state["error_code"], state["transactional_id"]
                if code == TRANSACTIONAL_ID_NOT_FOUND:
                    described[txn_id] = None
                elif code == 0:
                    described[txn_id] = transaction_document(node, state)
                elif code not in RETRIABLE:
                    raise ToolError(
                        f"could not describe transactional id {txn_id!r}: {error_text(code)}"
                    )
        return len(described) < len(set(ids))

    if ids:
        client.retry(attempt, bool)
    return described


def transaction_document(node: Node, state: dict) -> dict:
    start = state["transaction_start_time_ms"]
    return {
        "coordinator": node.node_id,
        "transactional_id": state["transactional_id"],
        "producer_id": state["producer_id"],
        "producer_epoch": state["producer_epoch"],
        "state": state["transaction_state"],
        "timeout_ms": state["transaction_timeout_ms"],
        "start_time_ms": start if start >= 0 else None,
        "duration_ms": int(time.time() * 1000) - start if start >= 0 else None,
        "partitions": sorted((t["topic"], p) for t in state["topics"] for p in t["partitions"]),
    }


def describe_producers(
    client: WireClient, nodes: dict[int, Node], by_broker: dict[int, list[tuple[str, int]]]
) -> dict[tuple, list[dict]]:
    """``{(topic, partition): [producer state]}``: DescribeProducers to each broker for the
    partitions listed under it."""
    found: dict[tuple, list[dict]] = {}
    for broker_id, partitions in sorted(by_broker.items()):
        body = ask(
            node_link(client, nodes, broker_id, "a replica"),
            "DESCRIBE_PRODUCERS",
            {
                "topics": [
                    {"name": t, "partition_indexes": ps} for t, ps in by_topic(partitions).items()
                ]
            },
        )
        for topic in body["topics"]:
            for part in topic["partitions"]:
                where = partition_name(topic["name"], part["partition_index"])
                if part["error_code"]:
                    reason = error_text(part["error_code"], part["error_message"])
                    raise ToolError(
                        f"broker {broker_id} did not describe the producers of {where}: {reason}"
                    )
                found[(topic["name"], part["partition_index"])] = [
                    producer_document(topic["name"], part["partition_index"], p)
                    for p in part["active_producers"]
                ]
    return found


def producer_document(topic: str, partition: int, state: dict) -> dict:
    start = state["current_txn_start_offset"]
    return {
        "topic": topic,
        "partition": partition,
        "producer_id": state["producer_id"],
        "producer_epoch": state["producer_epoch"],
        "coordinator_epoch": state["coordinator_epoch"],
        "last_sequence": state["last_sequence"],
        "last_timestamp": state["last_timestamp"],
        "start_offset": start if start >= 0 else None,
    }


def leaders_of(
    layout: dict[str, dict[int, dict]], partitions: Iterable[tuple[str, int]]
) -> dict[int, list[tuple[str, int]]]:
    partitions = list(partitions)
    ac.check_partitions(layout, partitions)
    by_broker: dict[int, list[tuple[str, int]]] = {}
    for topic, partition in partitions:
        info = layout[topic][partition]
        if info["leader"] < 0:
            raise ToolError(
                f"{partition_name(topic, partition)} has no leader now: retry once one is elected"
            )
        by_broker.setdefault(info["leader"], []).append((topic, partition))
    return by_broker


# ---------------------------------------------------------------- actions


def run_list(args: argparse.Namespace) -> None:
    states = [canonical_state(s) for s in args.state]
    with open_client(args) as client:
        rows = list_transactions(client, states, args.producer_id, args.duration_filter)
    if args.json:
        print_json(rows)
        return
    print_table(
        ("TRANSACTIONAL-ID", "COORDINATOR", "PRODUCER-ID", "STATE"),
        [(r["transactional_id"], r["coordinator"], r["producer_id"], r["state"]) for r in rows],
    )


def canonical_state(text: str) -> str:
    """``ongoing`` or ``ONGOING`` as Kafka spells it, ``Ongoing``; a usage error otherwise."""
    for state in STATES:
        if text.replace("_", "").lower() == state.lower():
            return state
    raise ToolError(
        f"--state {text!r} is not a transaction state: use one of {', '.join(STATES[:-1])}", 2
    )


def run_describe(args: argparse.Namespace) -> None:
    ids = list(dict.fromkeys(args.transactional_id))
    with open_client(args) as client:
        described = describe_transactions(client, ids)
    missing = [i for i in ids if described[i] is None]
    if missing:
        raise ToolError(
            f"transactional id {missing[0]!r} is not known to its coordinator "
            "(never used, or expired): see `kafkette transactions list`"
        )
    documents = [described[i] for i in ids]
    if args.json:
        print_json(documents)
        return
    print_table(
        (
            "COORDINATOR",
            "TRANSACTIONAL-ID",
            "PRODUCER-ID",
            "PRODUCER-EPOCH",
            "STATE",
            "TIMEOUT-MS",
            "START-TIME-MS",
            "DURATION-MS",
            "PARTITIONS",
        ),
        [
            (
                d["coordinator"],
                d["transactional_id"],
                d["producer_id"],
                d["producer_epoch"],
                d["state"],
                d["timeout_ms"],
                dash(d["start_time_ms"]),
                dash(d["duration_ms"]),
                ",".join(partition_name(t, p) for t, p in d["partitions"]) or "-",
            )
            for d in documents
            if d is not None
        ],
    )


def run_describe_producers(args: argparse.Namespace) -> None:
    where = (args.topic, args.partition)
    with open_client(args) as client:
        nodes = {n.node_id: n for n in client.brokers()}
        layout = topic_layout(client, [args.topic])
        by_broker = leaders_of(layout, [where])
        if args.broker_id is not None:
            by_broker = {args.broker_id: [where]}
        producers = describe_producers(client, nodes, by_broker)[where]
    if args.json:
        print_json(producers)
        return
    print_table(
        (
            "PRODUCER-ID",
            "PRODUCER-EPOCH",
            "COORDINATOR-EPOCH",
            "LAST-SEQUENCE",
            "LAST-TIMESTAMP",
            "TXN-START-OFFSET",
        ),
        [
            (
                p["producer_id"],
                p["producer_epoch"],
                p["coordinator_epoch"],
                p["last_sequence"],
                p["last_timestamp"],
                dash(p["start_offset"]),
            )
            for p in producers
        ],
    )


def search_scope(client: WireClient, args: argparse.Namespace) -> list[tuple[str, int]]:
    """find-hanging's partitions: the one named, the topic's, or every topic's, internal
    ones included as in Kafka's tool (``__consumer_offsets`` holds transactional offset
    commits, which can hang too); with ``--broker-id``, those it holds."""
    if args.topic is not None and args.partition is not None:
        return [(args.topic, args.partition)]
    layout = topic_layout(client, [args.topic] if args.topic is not None else None)
    return sorted(
        (topic, partition)
        for topic, partitions in layout.items()
        for partition, info in partitions.items()
        if args.broker_id is None or args.broker_id in info["replicas"]
    )


def find_hanging(client: WireClient, args: argparse.Namespace) -> list[dict]:
    nodes = {n.node_id: n for n in client.brokers()}
    scope = search_scope(client, args)
    if not scope:
        return []
    if args.broker_id is not None:
        by_broker = {args.broker_id: scope}
    else:
        by_broker = leaders_of(topic_layout(client, sorted({t for t, _ in scope})), scope)
    now_ms = int(time.time() * 1000)
    limit_ms = args.max_transaction_timeout * 60_000
    candidates = [
        p
        for states in describe_producers(client, nodes, by_broker).values()
        for p in states
        if p["start_offset"] is not None and now_ms - p["last_timestamp"] > limit_ms
    ]
    if not candidates:
        return []
    listing = list_transactions(client, [], {p["producer_id"] for p in candidates})
    ids_by_producer = {row["producer_id"]: row["transactional_id"] for row in listing}
    described = describe_transactions(client, sorted(set(ids_by_producer.values())))
    hanging = []
    for candidate in candidates:
        txn_id = ids_by_producer.get(candidate["producer_id"])
        known = described.get(txn_id) if txn_id is not None else None
        # Still in the coordinator's transaction: it will write the marker itself.
        where = (candidate["topic"], candidate["partition"])
        if known is not None and where in known["partitions"]:
            continue
        hanging.append(
            {
                **candidate,
                "transactional_id": txn_id,
                "duration_min": (now_ms - candidate["last_timestamp"]) // 60_000,
            }
        )
    return sorted(hanging, key=lambda h: (h["topic"], h["partition"], h["producer_id"]))


def run_find_hanging(args: argparse.Namespace) -> None:
    if args.topic is None and args.broker_id is None:
        raise ToolError(
            "find-hanging needs --broker-id or --topic to limit the search, e.g. --broker-id 1", 2
        )
    if args.partition is not None and args.topic is None:
        raise ToolError("--partition needs --topic, e.g. --topic clicks --partition 0", 2)
    with open_client(args) as client:
        hanging = find_hanging(client, args)
    if args.json:
        print_json(hanging)
        return
    print_table(
        (
            "TOPIC",
            "PARTITION",
            "PRODUCER-ID",
            "PRODUCER-EPOCH",
            "COORDINATOR-EPOCH",
            "START-OFFSET",
            "LAST-TIMESTAMP",
            "DURATION(MIN)",
        ),
        [
            (
                h["topic"],
                h["partition"],
                h["producer_id"],
                h["producer_epoch"],
                h["coordinator_epoch"],
                h["start_offset"],
                h["last_timestamp"],
                h["duration_min"],
            )
            for h in hanging
        ],
    )


def abort_spec(
    client: WireClient, nodes: dict[int, Node], leader: int, args: argparse.Namespace
) -> dict:
    """The producer id, epoch and coordinator epoch of the transaction to abort."""
    where = partition_name(args.topic, args.partition)
    if args.start_offset is None:
        if args.producer_id is None:
            raise ToolError(
                "name the transaction to abort: --start-offset, or --producer-id "
                "with --producer-epoch and --coordinator-epoch",
                2,
            )
        for option in ("producer_epoch", "coordinator_epoch"):
            if getattr(args, option) is None:
                raise ToolError(f"--producer-id needs --{option.replace('_', '-')} too", 2)
        return {
            "producer_id": args.producer_id,
            "producer_epoch": args.producer_epoch,
            "coordinator_epoch": max(args.coordinator_epoch, 0),
        }
    producers = describe_producers(client, nodes, {leader: [(args.topic, args.partition)]})
    for producer in producers[(args.topic, args.partition)]:
        if producer["start_offset"] == args.start_offset:
            return {
                "producer_id": producer["producer_id"],
                "producer_epoch": producer["producer_epoch"],
                "coordinator_epoch": max(producer["coordinator_epoch"], 0),
            }
    raise ToolError(
        f"no open transaction starts at offset {args.start_offset} of {where}: "
        f"see `kafkette transactions find-hanging --topic {args.topic}`"
    )


def run_abort(args: argparse.Namespace) -> None:
    with open_client(args) as client:
        nodes = {n.node_id: n for n in client.brokers()}
        ((leader, _),) = leaders_of(
            topic_layout(client, [args.topic]), [(args.topic, args.partition)]
        ).items()
        spec = abort_spec(client, nodes, leader, args)
        body = ask(
            node_link(client, nodes, leader, "the partition's leader"),
            "WRITE_TXN_MARKERS",
            {
                "markers": [
                    {
                        **spec,
                        "transaction_result": False,
                        "topics": [{"name": args.topic, "partition_indexes": [args.partition]}],
                    }
                ]
            },
        )
    codes = [
        p["error_code"]
        for marker in body["markers"]
        for topic in marker["topics"]
        for p in topic["partitions"]
    ]
    where = partition_name(args.topic, args.partition)
    if codes != [0]:
        reason = error_text(codes[0]) if codes else "no answer for the partition"
        raise ToolError(
            f"the transaction of producer {spec['producer_id']} on {where} was not "
            f"aborted: {reason}"
        )
    if args.json:
        print_json({"topic": args.topic, "partition": args.partition, "aborted": True, **spec})
        return
    print(
        f"Aborted the transaction of producer {spec['producer_id']} (epoch "
        f"{spec['producer_epoch']}) on {where}."
    )
