"""``kafkette reassign`` and ``kafkette elect-leaders`` on a 3-broker kafkette cluster, beside
Kafka 4.0's own kafka-reassign-partitions.sh and kafka-leader-election.sh on the same cluster.

One cluster, one test (a cluster start is the expensive part), in steps:

* generate: the current assignment as it is, a proposal on the listed brokers that keeps
  each topic's replication factor;
* execute then verify until "is completed": the partitions end on their new replicas, and
  Kafka's ``--verify`` says the same words;
* an in-flight move (its new replica's broker frozen, so it cannot catch up): ``list`` and
  ``verify`` show it as Kafka's ``--list`` does, ``cancel`` reverts it;
* elect-leaders: a reordered replica list makes another broker the preferred leader; a
  PREFERRED election moves leadership there ("Successfully completed ..."), a second one has
  nothing to do ("Valid replica already elected ..."), as kafka-leader-election.sh says.

The single-broker check against the reference Kafka is in
``tests/tools/test_transactions_tool.py`` (beside that module's reference broker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.cluster import zk_wire
from tests.reference_kafka import reference_script_or_skip

TOOL_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def kafka_bin() -> Path:
    script = reference_script_or_skip("to compare with Kafka's own scripts")
    done = subprocess.run(
        [str(script), "home"], capture_output=True, text=True, timeout=180, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"kafka-ref home failed: {done.stderr.strip()[-300:]}")
    return Path(done.stdout.strip()) / "bin"


def kafka_tool(bin_dir: Path, script: str, *args: str) -> str:
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    done = subprocess.run(
        [str(bin_dir / script), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, (
        f"{script} {args}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    )
    return done.stdout


def kafkette(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkette", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )


def ok(*args: str, stdin: str | None = None) -> str:
    done = kafkette(*args, stdin=stdin)
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def plan(moves: dict[tuple[str, int], list[int]]) -> str:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()
            ],
        }
    )


def partition_view(built, topic: str, partition: int) -> dict | None:
    """The partition as every running, unfrozen broker describes it, once they agree."""
    views = [
        zk_wire.metadata(b.address, [topic])["topics"][topic]["partitions"].get(partition)
        for b in built.brokers.values()
        if b.running and not b.frozen
    ]
    return views[0] if views[0] is not None and all(v == views[0] for v in views) else None


def test_reassign_and_elect_leaders_on_a_cluster(cluster, wait_until, kafka_bin, tmp_path):
    # The frozen broker stays registered while frozen (the cancel step): a 60 s session.
    built = cluster(
        3,
        configs={"auto.leader.rebalance.enable": "false", "zookeeper.session.timeout.ms": "60000"},
    )
    controller = zk_wire.metadata(built.bootstrap_of(1), [])["controller_id"]
    frozen = max(i for i in (1, 2, 3) if i != controller)
    first, second = sorted(i for i in (1, 2, 3) if i != frozen)
    admin = AdminClient({"bootstrap.servers": built.bootstrap})
    topics = [
        NewTopic("moves", num_partitions=2, replica_assignment=[[1, 2], [2, 1]]),
        NewTopic("held", num_partitions=1, replica_assignment=[[first, second]]),
        NewTopic("lead", num_partitions=1, replica_assignment=[[first, second]]),
    ]
    for future in admin.create_topics(topics, request_timeout=60).values():
        future.result(timeout=60)
    producer = Producer({"bootstrap.servers": built.bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce("moves", value=b"v%d" % i, partition=i % 2)
    assert producer.flush(60) == 0
    for topic, partition in (("moves", 0), ("moves", 1), ("held", 0), ("lead", 0)):
        wait_until(
            lambda t=topic, p=partition: (v := partition_view(built, t, p)) and len(v["isr"]) == 2,
            what=f"{topic}-{partition} in sync",
        )
    # Bootstrap from the brokers that stay up: the frozen one never answers a connection.
    b = ("-b", built.bootstrap_of(first, second))
    server = ("--bootstrap-server", built.bootstrap_of(first, second))

    # generate: the current assignment, and a proposal on brokers 2 and 3.
    generated = ok(
        "reassign",
        "generate",
        "--topics-to-move-json-file",
        "-",
        "--broker-list",
        "2,3",
        *b,
        stdin='{"topics":[{"topic":"moves"}]}',
    )
    lines = generated.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": "moves", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": "moves", "partition": 1, "replicas": [2, 1], "log_dirs": ["any", "any"]},
        ],
    }
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[4])["partitions"]
    assert [sorted(p["replicas"]) for p in proposed] == [[2, 3], [2, 3]]
    assert {p["replicas"][0] for p in proposed} == {2, 3}  # leaders spread

    # execute, then verify until done: Kafka's --verify says the same.
    target = plan({("moves", 0): [3, 2], ("moves", 1): [2, 3]})
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(target)
    executed = ok("reassign", "execute", "--reassignment-json-file", str(plan_file), *b)
    assert executed.splitlines() == [
        "Current partition replica assignment",
        "",
        '{"version":1,"partitions":[{"topic":"moves","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","any"]},{"topic":"moves","partition":1,"replicas":[2,1],'
        '"log_dirs":["any","any"]}]}',
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Successfully started partition reassignments for moves-0,moves-1",
    ]

    def verified() -> str | None:
        out = ok("reassign", "verify", "--reassignment-json-file", str(plan_file), *b)
        return out if "moves-1 is completed." in out and "moves-0 is completed." in out else None

    ours = wait_until(verified, timeout=60, interval=0.5, what="verify reporting completion")
    assert ours.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition moves-0 is completed.",
        "Reassignment of partition moves-1 is completed.",
        "",
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic moves",
    ]
    theirs = kafka_tool(
        kafka_bin,
        "kafka-reassign-partitions.sh",
        *server,
        "--verify",
        "--reassignment-json-file",
        str(plan_file),
    )
    assert theirs == ours
    assert partition_view(built, "moves", 0)["replicas"] == [3, 2]
    assert partition_view(built, "moves", 1)["replicas"] == [2, 3]

    # An in-flight move (to the frozen broker): list, verify, cancel.
    held = plan({("held", 0): [second, frozen]})
    built.freeze(frozen)
    try:
        started = ok("reassign", "execute", "--reassignment-json-file", "-", *b, stdin=held)
        assert started.endswith("Successfully started partition reassignment for held-0\n")
        again = kafkette("reassign", "execute", "--reassignment-json-file", "-", *b, stdin=held)
        assert again.returncode == 1
        assert again.stderr.startswith("kafkette: Cannot execute because there is an existing")
        listed = ok("reassign", "list", *b)
        assert listed == (
            "Current partition reassignments:\n"
            f"held-0: replicas: {second},{frozen},{first}. adding: {frozen}. "
            f"removing: {first}.\n"
        )
        assert kafka_tool(kafka_bin, "kafka-reassign-partitions.sh", *server, "--list") == listed
        verify = ok("reassign", "verify", "--reassignment-json-file", "-", *b, stdin=held)
        assert verify == (
            "Status of partition reassignment:\n"
            "Reassignment of partition held-0 is still in progress.\n\n"
        )
        # The finished plan's verify is not held back by held-0, which is not in it: it goes on
        # to clear the throttles of every broker, as Kafka's --verify does (the frozen broker
        # cannot answer that, so here it ends at --timeout, milliseconds as in Kafka's tool).
        finished = kafkette(
            "reassign", "verify", "--reassignment-json-file", str(plan_file), "--timeout", "2000",
            *b,
        )  # fmt: skip
        assert (finished.returncode, finished.stdout) == (3, ""), finished.stdout
        assert "did not answer within 2 s" in finished.stderr, finished.stderr
        cancelled = ok(
            "reassign",
            "cancel",
            "--reassignment-json-file",
            "-",
            "--preserve-throttles",
            *b,
            stdin=held,
        )
        assert cancelled == "Successfully cancelled partition reassignment for: held-0\n"
        wait_until(
            lambda: (
                (v := partition_view(built, "held", 0)) and sorted(v["replicas"]) == [first, second]
            ),
            what="the move reverted",
        )
        assert ok("reassign", "list", *b) == "No partition reassignments found.\n"
    finally:
        built.thaw(frozen)

    # elect-leaders: reorder lead-0's replicas so that the other broker is preferred.
    assert partition_view(built, "lead", 0)["leader"] == first
    ok(
        "reassign",
        "execute",
        "--reassignment-json-file",
        "-",
        *b,
        stdin=plan({("lead", 0): [second, first]}),
    )
    wait_until(
        lambda: (v := partition_view(built, "lead", 0)) and v["replicas"] == [second, first],
        what="lead-0 reordered",
    )
    assert ok("reassign", "list", *b) == "No partition reassignments found.\n"
    assert partition_view(built, "lead", 0)["leader"] == first  # not the preferred one now
    elected = ok(
        "elect-leaders", "--election-type", "preferred", "--topic", "lead", "--partition", "0", *b
    )
    assert elected == "Successfully completed leader election (PREFERRED) for partitions lead-0\n"
    wait_until(
        lambda: (v := partition_view(built, "lead", 0)) and v["leader"] == second,
        what="the preferred leader elected",
    )
    election_file = tmp_path / "election.json"
    election_file.write_text('{"partitions":[{"topic":"lead","partition":0}]}')
    needless = ok(
        "elect-leaders",
        "--election-type",
        "PREFERRED",
        "--path-to-json-file",
        str(election_file),
        *b,
    )
    assert needless == "Valid replica already elected for partitions lead-0\n"
    assert (
        kafka_tool(
            kafka_bin,
            "kafka-leader-election.sh",
            *server,
            "--election-type",
            "PREFERRED",
            "--path-to-json-file",
            str(election_file),
        )
        == needless
    )
    unclean = ok(
        "elect-leaders",
        "--election-type",
        "UNCLEAN",
        "--topic",
        "lead",
        "--partition",
        "0",
        "--json",
        *b,
    )
    assert json.loads(unclean) == {
        "election_type": "UNCLEAN",
        "elected": [],
        "not_needed": ["lead-0"],
        "failed": [],
    }
    missing = kafkette(
        "elect-leaders", "--election-type", "PREFERRED", "--topic", "lead", "--partition", "5", *b
    )
    assert missing.returncode == 1
    assert missing.stderr.startswith("kafkette: 1 replica(s) could not be elected: lead-5: ")
