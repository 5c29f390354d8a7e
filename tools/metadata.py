"""``kafkette metadata``: what ``kcat -L``, ``rpk cluster info`` and
``kafka-broker-api-versions.sh`` show, without a JVM.

One command, named after the Kafka request it shows (and ``kcat -L``'s "Metadata for all
topics"): it covers topics and partitions too, which ``brokers`` would misname. The cluster
view goes through confluent-kafka's AdminClient (DescribeCluster for the cluster id,
controller and brokers with their racks; DescribeTopics for topic ids, leaders, replicas and
ISR), so it works over any listener the client library speaks. The controller is what
DescribeCluster answers: kafkette's controller, but on a KRaft Kafka a random broker (its
controllers are not reachable by clients, so its brokers name one of themselves). A replica is
offline when its broker is not among the cluster's live brokers: Metadata's
``offline_replicas`` is not in librdkafka's API, and a missing broker is what makes a replica
offline in KRaft.

``--api-versions`` asks every broker directly for its ApiVersions, as Kafka's script does,
over kafkette's own wire client (librdkafka keeps the answer to itself; TLS and SASL
PLAIN/SCRAM from ``-X`` as for the other tools); "usable" is the
highest version both the broker and this client's codec speak, where Kafka's script compares
against its own Java client.
"""

from __future__ import annotations

import argparse
from typing import Any

from kafkette.tools import admin_client as ac
from kafkette.tools.common import dash, print_json, print_table, run_tool

EPILOG = """  kafkette metadata                     # cluster, brokers, topics, partitions
  kafkette metadata --topic clicks
  kafkette metadata --internal --json
  kafkette metadata --api-versions      # per broker, like kafka-broker-api-versions.sh
  kafkette metadata --json | jq -r '.topics[] | "\\(.topic) \\(.topic_id)"'

CONTROLLER is the broker DescribeCluster names: kafkette's controller, but on a KRaft Kafka
a random broker, not the active controller (clients cannot reach Kafka's controllers).
"""


def register(commands: argparse._SubParsersAction) -> None:
    parser = ac.add_action(
        commands,
        "metadata",
        "show the cluster: id, controller, brokers, topics and partitions (like kcat -L); "
        "--api-versions: what each broker serves",
        EPILOG,
    )
    parser.add_argument(
        "-t",
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC",
        help="only this topic (repeatable); a missing one is exit 1",
    )
    parser.add_argument(
        "--internal",
        action="store_true",
        help="with no --topic, include internal topics (__consumer_offsets, ...)",
    )
    parser.add_argument(
        "--api-versions",
        action="store_true",
        help="print the API versions each broker serves, in kafka-broker-api-versions.sh's format",
    )
    parser.set_defaults(run=lambda args: run_tool(run, args))


def run(args: argparse.Namespace) -> None:
    if args.api_versions:
        run_api_versions(args)
        return
    document = cluster_document(args)
    if args.json:
        print_json(document)
        return
    print_cluster(document)


# ---------------------------------------------------------------- the cluster view


def node_id(node: Any) -> int | None:
    """A client Node's id; None for no node (a partition without a leader)."""
    if node is None or getattr(node, "id", -1) < 0:
        return None
    return node.id


def cluster_document(args: argparse.Namespace) -> dict[str, Any]:
    """``metadata --json``'s document, from DescribeCluster and DescribeTopics."""
    admin = ac.admin_client(args)
    cluster = ac.result(admin.describe_cluster(request_timeout=args.timeout), args)
    if args.topic:
        names = list(dict.fromkeys(args.topic))
    else:
        listed = ac.known_topics(admin, args, args.internal)
        names = sorted(n for n in listed if args.internal or not ac.is_internal(n))
    described = ac.describe_topics(admin, args, names)
    for name in names:
        if args.topic and name not in described:
            raise ac.missing_topic(name)
    brokers = sorted(cluster.nodes, key=lambda n: n.id)
    live = {n.id for n in brokers}
    topics = []
    for name in names:
        if name not in described:
            continue  # deleted between the listing and the description
        topic = described[name]
        partitions = []
        for partition in sorted(topic.partitions, key=lambda p: p.id):
            replicas = [r.id for r in partition.replicas]
            partitions.append(
                {
                    "partition": partition.id,
                    "leader": node_id(partition.leader),
                    "replicas": replicas,
                    "isr": [r.id for r in partition.isr],
                    "offline_replicas": [r for r in replicas if r not in live],
                }
            )
        topics.append(
            {
                "topic": name,
                "topic_id": ac.kafka_topic_id(topic.topic_id),
                "internal": bool(topic.is_internal) or ac.is_internal(name),
                "partitions": partitions,
            }
        )
    return {
        "cluster_id": cluster.cluster_id,
        "controller": node_id(cluster.controller),
        "brokers": [
            {"id": n.id, "host": n.host, "port": n.port, "rack": n.rack or None} for n in brokers
        ],
        "topics": topics,
    }


def ids_text(ids: list[int]) -> str:
    return ",".join(map(str, ids)) or "-"


def print_cluster(document: dict[str, Any]) -> None:
    """Four tables, as rpk cluster info and kcat -L show them: cluster, brokers, topics,
    partitions (blank lines between, headers always, so scripts find their columns)."""
    print_table(
        ("CLUSTER-ID", "CONTROLLER", "BROKERS", "TOPICS"),
        [
            (
                dash(document["cluster_id"]),
                dash(document["controller"]),
                len(document["brokers"]),
                len(document["topics"]),
            )
        ],
    )
    print()
    print_table(
        ("BROKER", "HOST", "PORT", "RACK"),
        [(b["id"], b["host"], b["port"], dash(b["rack"])) for b in document["brokers"]],
    )
    print()
    print_table(
        ("TOPIC", "TOPIC-ID", "PARTITIONS", "REPLICATION-FACTOR"),
        [
            (
                t["topic"],
                dash(t["topic_id"]),
                len(t["partitions"]),
                len(t["partitions"][0]["replicas"]) if t["partitions"] else 0,
            )
            for t in document["topics"]
        ],
    )
    print()
    print_table(
        ("TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "OFFLINE-REPLICAS"),
        [
            (
                t["topic"],
                p["partition"],
                dash(p["leader"]),
                ids_text(p["replicas"]),
                ids_text(p["isr"]),
                ids_text(p["offline_replicas"]),
            )
            for t in document["topics"]
            for p in t["partitions"]
        ],
    )


# ---------------------------------------------------------------- --api-versions


def api_name(api_key: int) -> str | None:
    """Kafka's name of an API: the codec's, else the recorded Kafka 4.3/4.0 tables'."""
    from kafkette.wire.apis import api_spec
    from kafkette.wire.kafka40_ranges import DEFINITION_NAMES, KAFKA_40_ADVERTISED
    from kafkette.wire.kafka43_ranges import KAFKA_43_DEFINED

    spec = api_spec(api_key)
    if spec is not None:
        return spec.name
    for table in (KAFKA_43_DEFINED, KAFKA_40_ADVERTISED):
        if api_key in table:
            return table[api_key][0]
    return DEFINITION_NAMES.get(api_key)


def api_entries(served: dict[int, tuple[int, int]]) -> list[dict[str, Any]]:
    """One entry per API the broker serves or the codec knows, by key: the broker's range
    (None for an API it does not serve) and the highest version usable by this client."""
    from kafkette.wire.apis import SUPPORTED, api_spec

    entries = []
    for key in sorted(set(served) | {int(k) for k in SUPPORTED}):
        spec = api_spec(key)
        low, high = served.get(key, (None, None))
        usable = unusable = None
        if spec is not None and low is not None and high is not None:
            if spec.max_version < low:
                unusable = "node too new"
            elif high < spec.decode_min:
                unusable = "node too old"
            else:
                usable = min(spec.max_version, high)
        entries.append(
            {
                "api_key": key,
                "name": api_name(key),
                "min_version": low,
                "max_version": high,
                "usable": usable,
                "unusable": unusable,
            }
        )
    return entries


def api_line(entry: dict[str, Any]) -> str:
    """``Produce(0): 3 to 12 [usable: 12]``: Kafka's NodeApiVersions text for one API."""
    name = entry["name"] or "UNKNOWN"
    head = f"{name}({entry['api_key']}): "
    low, high = entry["min_version"], entry["max_version"]
    if low is None:
        return head + "UNSUPPORTED"
    text = head + (str(low) if low == high else f"{low} to {high}")
    if entry["usable"] is not None:
        text += f" [usable: {entry['usable']}]"
    elif entry["unusable"] is not None:
        text += f" [unusable: {entry['unusable']}]"
    return text


def run_api_versions(args: argparse.Namespace) -> None:
    from kafkette.tools.wire_client import open_client

    with open_client(args) as client:
        documents = [
            {
                "id": node.node_id,
                "host": node.host,
                "port": node.port,
                "rack": node.rack or None,
                "apis": api_entries(dict(client.node_link(node).versions)),
            }
            for node in client.brokers()
        ]
    if args.json:
        print_json(documents)
        return
    for doc in documents:
        rack = doc["rack"] if doc["rack"] is not None else "null"
        print(f"{doc['host']}:{doc['port']} (id: {doc['id']} rack: {rack} isFenced: false) -> (")
        print(",\n".join("\t" + api_line(entry) for entry in doc["apis"]))
        print(")")
