"""``kafka-reassign-partitions.sh`` (Apache Kafka 4.0's own tool) against a kafkette cluster.

``--generate`` proposes a move, ``--execute`` starts it (the tool lists ongoing
reassignments, describes the topics and cluster, then sends
AlterPartitionReassignments to the controller), ``--verify`` reports it complete
(and clears throttles), ``--list`` shows ongoing moves and ``--cancel`` reverts one,
each printing what it prints against Kafka. Skipped with the reason when java or the
reference Kafka (``../shared/reference-kafka``, or ``$KAFKETTE_KAFKA_REF``) is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster import zk_wire
from tests.reference_kafka import reference_script_or_skip

TOOL_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def reassign_tool() -> list[str]:
    """The command that runs Kafka 4.0's kafka-reassign-partitions.sh."""
    script = reference_script_or_skip()
    done = subprocess.run([str(script), "home"], capture_output=True, text=True,
                          timeout=180, check=False)
    if done.returncode != 0:
        pytest.skip(f"kafka-ref home failed: {done.stderr.strip()[-300:]}")
    return [str(Path(done.stdout.strip()) / "bin" / "kafka-reassign-partitions.sh")]


def _run(tool: list[str], *args: str) -> str:
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    done = subprocess.run([*tool, *args], capture_output=True, text=True, env=env,
                          timeout=TOOL_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _partition(built, topic: str) -> dict | None:
    """Partition 0 as every running broker describes it, once they all agree; None before (a
    broker may not have seen a topic the controller has just created)."""
    views = [zk_wire.metadata(b.address, [topic])["topics"][topic]["partitions"].get(0)
             for b in built.brokers.values() if b.running and not b.frozen]
    return views[0] if views[0] is not None and all(v == views[0] for v in views) else None


def test_kafka_reassign_partitions_tool(cluster, wait_until, reassign_tool, tmp_path) -> None:
    built = cluster(3, configs={"auto.leader.rebalance.enable": "false"})
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    for future in admin.create_topics(
        [NewTopic("tool", num_partitions=1, replica_assignment=[[1, 2]])], request_timeout=60,
    ).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": built.bootstrap, "acks": "all"})
    for i in range(100):
        producer.produce("tool", value=b"v%d" % i, partition=0)
    assert producer.flush(60) == 0
    wait_until(lambda: (p := _partition(built, "tool")) and p["isr"] == [1, 2])
    server = ["--bootstrap-server", built.bootstrap]

    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": "tool"}]}))
    generated = _run(reassign_tool, *server, "--generate", "--broker-list", "2,3",
                     "--topics-to-move-json-file", str(topics_file))
    assert "Current partition replica assignment" in generated
    current_line, proposed_line = [
        line for line in generated.splitlines() if line.startswith("{")
    ]
    assert json.loads(current_line)["partitions"][0]["replicas"] == [1, 2]
    proposed = json.loads(proposed_line)["partitions"][0]
    assert sorted(proposed["replicas"]) == [2, 3]

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "tool", "partition": 0, "replicas": [2, 3]}]}))
    executed = _run(reassign_tool, *server, "--execute", "--reassignment-json-file", str(plan))
    assert "Successfully started partition reassignment for tool-0" in executed

    def verified() -> str | None:
        out = _run(reassign_tool, *server, "--verify", "--reassignment-json-file", str(plan))
        return out if "Reassignment of partition tool-0 is completed." in out else None

    out = wait_until(verified, timeout=40, interval=1.0, what="--verify reporting completion")
    assert "Clearing broker-level throttles" in out
    assert _partition(built, "tool")["replicas"] == [2, 3]
    listed = _run(reassign_tool, *server, "--list")
    assert "No partition reassignments found." in listed


def test_kafka_reassign_partitions_list_and_cancel(
    cluster, wait_until, reassign_tool, tmp_path
) -> None:
    """An in-flight move (its new replica frozen, so it cannot catch up) shows in
    ``--list`` and ``--verify``; ``--cancel`` reverts it."""
    # The frozen broker stays registered (its ZooKeeper session outlives the test's tools):
    # Kafka's tool refuses a plan that names a broker the cluster does not list, and its JVM
    # starts can take longer than the default test session on a busy machine.
    built = cluster(3, configs={"auto.leader.rebalance.enable": "false",
                                "zookeeper.session.timeout.ms": "60000"})
    controller = zk_wire.metadata(built.bootstrap_of(1), [])["controller_id"]
    frozen = max(i for i in (1, 2, 3) if i != controller)
    first, second = sorted(i for i in (1, 2, 3) if i != frozen)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    for future in admin.create_topics(
        [NewTopic("held", num_partitions=1, replica_assignment=[[first, second]])],
        request_timeout=60,
    ).values():
        future.result(timeout=60)
    wait_until(lambda: (p := _partition(built, "held")) and p["isr"] == [first, second])
    # Only the brokers that answer: the tool's admin client never needs the frozen one. But
    # a request it sends to the frozen one (the metadata names it) waits out the admin's
    # request.timeout.ms, 30 s by default, before going elsewhere: 5 s is plenty here.
    client_config = tmp_path / "admin.properties"
    client_config.write_text("request.timeout.ms=5000\n")
    server = ["--bootstrap-server", built.bootstrap_of(first, second),
              "--command-config", str(client_config)]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "held", "partition": 0, "replicas": [second, frozen]}]}))

    built.freeze(frozen)
    try:
        executed = _run(reassign_tool, *server, "--execute", "--reassignment-json-file",
                        str(plan))
        assert "Successfully started partition reassignment for held-0" in executed
        listed = _run(reassign_tool, *server, "--list")
        assert "Current partition reassignments:" in listed
        assert (f"held-0: replicas: {second},{frozen},{first}. adding: {frozen}."
                f" removing: {first}.") in listed
        topics_tool = [str(Path(reassign_tool[0]).with_name("kafka-topics.sh"))]
        described = _run(topics_tool, *server, "--describe", "--topic", "held")
        assert f"Replicas: {second},{frozen},{first}" in described
        assert f"Adding Replicas: {frozen}" in described
        assert f"Removing Replicas: {first}" in described
        verify = _run(reassign_tool, *server, "--verify", "--preserve-throttles",
                      "--reassignment-json-file", str(plan))
        assert "Reassignment of partition held-0 is still in progress." in verify
        cancelled = _run(reassign_tool, *server, "--cancel", "--preserve-throttles",
                         "--reassignment-json-file", str(plan))
        assert "Successfully cancelled partition reassignment for: held-0" in cancelled
        wait_until(lambda: (p := _partition(built, "held"))
                   and sorted(p["replicas"]) == [first, second], what="the move reverted")
        assert "No partition reassignments found." in _run(reassign_tool, *server, "--list")
    finally:
        built.thaw(frozen)
