"""``kafkette transactions``: a hanging transaction found, compared with what Kafka's own
``kafka-transactions.sh`` finds on the same broker, aborted, and read past; ``list`` and
``describe`` beside Kafka's tool; against kafkette and the reference Kafka 4.0.

A hanging transaction made the way they arose in Kafka before KIP-890's partition
verification: a producer gets its id and epoch from its coordinator (InitProducerId) and
writes a transactional batch to a partition it never added to a transaction. The
coordinator knows no transaction there, so nothing will ever write its marker, and the
partition's last stable offset stays at the batch. Both brokers verify such writes by
default; here they run with ``transaction.partition.verification.enable=false`` (a module
kafkette started so, and a dynamic broker config on the reference, removed afterwards).
The batch's records carry timestamps an hour old (Kafka's DescribeProducers reports the last
batch's max timestamp; kafkette's the append time), and the searches use
``--max-transaction-timeout 0``, so both brokers show it at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from bench.harness.raw_wire import WireConnection
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.apis import ApiKey
from tests.reference_kafka import reference_script_or_skip

TOOL_TIMEOUT_S = 120
VERIFICATION = "transaction.partition.verification.enable"
HOUR_MS = 3_600_000
HANGING_RECORDS = 3


@pytest.fixture(scope="module")
def unverified_kafkette(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    configs = {
        VERIFICATION: "false",
        "num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    with EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("txn-tool"), configs=configs
    ) as broker:
        yield broker.bootstrap


@pytest.fixture(scope="module")
def unverified_kafka(request: pytest.FixtureRequest) -> Iterator[str]:
    """The reference Kafka with partition verification off on its broker (node 1) for this
    module: a dynamic broker config, deleted again at the end."""
    bootstrap = request.getfixturevalue("reference_kafka")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def alter(op: AlterConfigOpType, value: str | None) -> None:
        entry = ConfigEntry(VERIFICATION, value, incremental_operation=op)
        resource = ConfigResource(ResourceType.BROKER, "1", incremental_configs=[entry])
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(30)

    alter(AlterConfigOpType.SET, "false")
    try:
        yield bootstrap
    finally:
        alter(AlterConfigOpType.DELETE, None)


@pytest.fixture(params=["kafkette", "kafka"])
def broker(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue(f"unverified_{request.param}")


def kafka_script(bootstrap: str, script: str, *args: str) -> str:
    """One of the reference's scripts with ``--bootstrap-server BOOTSTRAP ARGS``: its stdout
    (it must exit 0)."""
    home = reference_script_or_skip("to compare with Kafka's own scripts")
    env = {**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"}
    done = subprocess.run(
        [str(home), "bin", script, "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{script} {args}: exit {done.returncode}\n{done.stdout}"
    return done.stdout


def kafka_tool(bootstrap: str, *args: str) -> str:
    """``kafka-transactions.sh --bootstrap-server BOOTSTRAP ARGS``: its stdout."""
    return kafka_script(bootstrap, "kafka-transactions.sh", *args)


def kafka_table(output: str) -> list[dict[str, str]]:
    """kafka-transactions.sh's table (tab-separated, padded; header first) as dicts."""
    lines = [
        [cell.strip() for cell in line.rstrip("\t").split("\t")]
        for line in output.splitlines()
        if "\t" in line
    ]
    header, rows = lines[0], lines[1:]
    return [dict(zip(header, row, strict=True)) for row in rows]


def ok_json(done: subprocess.CompletedProcess[str]) -> object:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def retried(
    connection: WireConnection,
    api: int,
    version: int,
    body: dict,
    codes: list[str],
    deadline: float,
) -> dict:
    """One request asked again while ``codes(answer)`` names a retriable error (the
    coordinator still loading, a config not yet applied): the answer once they are 0."""
    while True:
        answer = connection.request(api, version, body)
        errors = [code for code in codes_of(answer, codes) if code]
        if not errors:
            return answer
        assert time.monotonic() < deadline, f"still {errors} from api {api}: {answer}"
        time.sleep(0.2)


def codes_of(answer: dict, paths: list[str]) -> list[int]:
    found = []
    for path in paths:
        values = [answer]
        for key in path.split("."):
            values = [
                v
                for value in values
                for v in (value[key] if isinstance(value[key], list) else [value[key]])
            ]
        found += values
    return found


def init_producer(connection: WireConnection, txn_id: str, deadline: float) -> dict:
    """InitProducerId for ``txn_id`` (a new producer id, epoch 0), retried like a client."""
    return retried(
        connection,
        ApiKey.INIT_PRODUCER_ID,
        4,
        {
            "transactional_id": txn_id,
            "transaction_timeout_ms": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
        ["error_code"],
        deadline,
    )


def make_hanging(bootstrap: str, topic: str, txn_id: str) -> tuple[int, int]:
    """Write a transactional batch (records an hour old) that no coordinator knows about;
    its producer id and epoch."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    deadline = time.monotonic() + 60
    with WireConnection(bootstrap, "hanging-maker", timeout=30) as connection:
        # FindCoordinator first, as clients do: Kafka creates __transaction_state on it.
        retried(
            connection,
            ApiKey.FIND_COORDINATOR,
            4,
            {"key_type": 1, "coordinator_keys": [txn_id]},
            ["coordinators.error_code"],
            deadline,
        )
        init = init_producer(connection, txn_id, deadline)
        producer_id, epoch = init["producer_id"], init["producer_epoch"]
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=0,
            is_transactional=True,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=0,
            batch_size=1 << 20,
        )
        stamp = int(time.time() * 1000) - HOUR_MS
        for i in range(HANGING_RECORDS):
            builder.append(i, timestamp=stamp, key=None, value=b"hanging %d" % i, headers=[])
        # Produce 9: below TV2's implicit AddPartitionsToTxn (Produce 12).
        retried(
            connection,
            ApiKey.PRODUCE,
            9,
            {
                "transactional_id": txn_id,
                "acks": -1,
                "timeout_ms": 10000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [{"index": 0, "records": bytes(builder.build())}],
                    }
                ],
            },
            ["responses.partition_responses.error_code"],
            deadline,
        )
    return producer_id, epoch


def stable_offset(bootstrap: str, topic: str) -> tuple[int, int]:
    """(last stable offset, log end offset) of partition 0 (ListOffsets latest, read_committed
    and read_uncommitted)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = []
    for level in (IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED):
        futures = admin.list_offsets(
            {TopicPartition(topic, 0): OffsetSpec.latest()},
            isolation_level=level,
            request_timeout=30,
        )
        found.append(next(iter(futures.values())).result(30).offset)
    return found[0], found[1]


def committed_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_a_hanging_transaction_is_found_like_kafkas_tool_aborted_and_read_past(
    cli, broker: str, unique_topic
) -> None:
    topic = unique_topic("hang")
    b = ("-b", broker)
    admin = AdminClient({"bootstrap.servers": broker})
    for future in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        future.result(30)
    hanging_id, ongoing_id = f"{topic}-lost", f"{topic}-live"
    producer_id, epoch = make_hanging(broker, topic, hanging_id)
    # A live transaction in the same partition: open, but its coordinator will end it.
    live = Producer(
        {
            "bootstrap.servers": broker,
            "transactional.id": ongoing_id,
            "transaction.timeout.ms": 600000,
        }
    )
    live.init_transactions(30)
    live.begin_transaction()
    live.produce(topic, value=b"live", partition=0)
    assert live.flush(30) == 0
    assert stable_offset(broker, topic) == (0, HANGING_RECORDS + 1)  # held by the hanging one

    search = ("--broker-id", "1", "--max-transaction-timeout", "0")
    found = [
        row
        for row in ok_json(cli("transactions", "find-hanging", *search, "--json", *b))
        if row["topic"] == topic
    ]
    assert [
        (r["partition"], r["producer_id"], r["producer_epoch"], r["start_offset"]) for r in found
    ] == [(0, producer_id, epoch, 0)]
    theirs = [
        row
        for row in kafka_table(kafka_tool(broker, "find-hanging", *search))
        if row["Topic"] == topic
    ]
    assert [
        {
            "Partition": str(r["partition"]),
            "ProducerId": str(r["producer_id"]),
            "ProducerEpoch": str(r["producer_epoch"]),
            "CoordinatorEpoch": str(r["coordinator_epoch"]),
            "StartOffset": str(r["start_offset"]),
            "LastTimestamp": str(r["last_timestamp"]),
        }
        for r in found
    ] == [{k: v for k, v in r.items() if k not in ("Topic", "Duration(min)")} for r in theirs]
    # The text output is the same table, for a person.
    text = cli(
        "transactions",
        "find-hanging",
        "--topic",
        topic,
        "--partition",
        "0",
        "--max-transaction-timeout",
        "0",
        *b,
    )
    assert text.stdout.split("\n")[0].split() == [
        "TOPIC",
        "PARTITION",
        "PRODUCER-ID",
        "PRODUCER-EPOCH",
        "COORDINATOR-EPOCH",
        "START-OFFSET",
        "LAST-TIMESTAMP",
        "DURATION(MIN)",
    ]
    assert text.stdout.split("\n")[1].split()[:6] == [
        topic,
        "0",
        str(producer_id),
        str(epoch),
        str(found[0]["coordinator_epoch"]),
        "0",
    ]

    # list and describe show the live transaction as kafka-transactions.sh does.
    listed = ok_json(cli("transactions", "list", "--state", "ongoing", "--json", *b))
    mine = [r for r in listed if r["transactional_id"] == ongoing_id]
    assert len(mine) == 1 and mine[0]["state"] == "Ongoing"
    kafka_rows = {r["TransactionalId"]: r for r in kafka_table(kafka_tool(broker, "list"))}
    assert {
        k: kafka_rows[ongoing_id][k] for k in ("Coordinator", "ProducerId", "TransactionState")
    } == {
        "Coordinator": str(mine[0]["coordinator"]),
        "ProducerId": str(mine[0]["producer_id"]),
        "TransactionState": "Ongoing",
    }
    assert kafka_rows[hanging_id]["TransactionState"] == "Empty"
    others = ok_json(cli("transactions", "list", "--producer-id", str(producer_id), "--json", *b))
    assert [r["transactional_id"] for r in others] == [hanging_id]
    assert ongoing_id not in {
        r["transactional_id"]
        for r in ok_json(
            cli("transactions", "list", "--duration-filter", str(HOUR_MS), "--json", *b)
        )
    }

    (described,) = ok_json(
        cli("transactions", "describe", "--transactional-id", ongoing_id, "--json", *b)
    )
    (kafka_described,) = kafka_table(
        kafka_tool(broker, "describe", "--transactional-id", ongoing_id)
    )
    assert {
        "CoordinatorId": str(described["coordinator"]),
        "TransactionalId": ongoing_id,
        "ProducerId": str(described["producer_id"]),
        "ProducerEpoch": str(described["producer_epoch"]),
        "TransactionState": described["state"],
        "TransactionTimeoutMs": str(described["timeout_ms"]),
        "CurrentTransactionStartTimeMs": str(described["start_time_ms"]),
        "TopicPartitions": ",".join(f"{t}-{p}" for t, p in described["partitions"]),
    } == {k: v for k, v in kafka_described.items() if k != "TransactionDurationMs"}
    assert described["state"] == "Ongoing" and described["partitions"] == [[topic, 0]]

    aborted = cli(
        "transactions", "abort", "--topic", topic, "--partition", "0", "--start-offset", "0", *b
    )
    assert (aborted.returncode, aborted.stdout) == (
        0,
        f"Aborted the transaction of producer {producer_id} (epoch {epoch}) on {topic}-0.\n",
    ), aborted.stderr
    left = ok_json(
        cli(
            "transactions",
            "find-hanging",
            "--topic",
            topic,
            "--max-transaction-timeout",
            "0",
            "--json",
            *b,
        )
    )
    assert left == []
    # The live transaction now holds the partition's stable offset; it commits.
    lso, end = stable_offset(broker, topic)
    assert (lso, end) == (HANGING_RECORDS, HANGING_RECORDS + 2)  # the marker at the end
    live.commit_transaction(30)
    plain = Producer({"bootstrap.servers": broker})
    plain.produce(topic, value=b"after", partition=0)
    assert plain.flush(30) == 0
    assert committed_values(broker, topic, 2) == [b"live", b"after"]
    lso, end = stable_offset(broker, topic)
    assert lso == end


def test_usage_and_refusals_are_one_line(cli, unverified_kafkette: str, unique_topic) -> None:
    b = ("-b", unverified_kafkette)
    topic = unique_topic("txn-errors")
    assert cli("topics", "create", topic, *b).returncode == 0
    cases = [
        (("find-hanging",), 2, "kafkette: find-hanging needs --broker-id or --topic"),
        (
            ("find-hanging", "--broker-id", "1", "--partition", "0"),
            2,
            "kafkette: --partition needs --topic",
        ),
        (
            ("abort", "--topic", topic, "--partition", "0"),
            2,
            "kafkette: name the transaction to abort",
        ),
        (
            ("abort", "--topic", topic, "--partition", "0", "--producer-id", "5"),
            2,
            "kafkette: --producer-id needs --producer-epoch too",
        ),
        (
            ("abort", "--topic", topic, "--partition", "0", "--start-offset", "7"),
            1,
            f"kafkette: no open transaction starts at offset 7 of {topic}-0",
        ),
        (
            ("abort", "--topic", topic, "--partition", "4", "--start-offset", "7"),
            1,
            f"kafkette: topic '{topic}' has no partition 4",
        ),
        (
            ("describe", "--transactional-id", "never-used"),
            1,
            "kafkette: transactional id 'never-used' is not known to its coordinator",
        ),
        (("list", "--state", "Sleeping"), 2, "kafkette: --state 'Sleeping' is not a"),
        (
            ("describe-producers", "--topic", "no-such-topic", "--partition", "0"),
            1,
            "kafkette: topic 'no-such-topic' does not exist",
        ),
    ]
    for args, code, start in cases:
        done = cli("transactions", *args, *b)
        assert (done.returncode, done.stderr.startswith(start), done.stdout) == (code, True, ""), (
            args,
            done.stderr,
        )
        assert done.stderr.count("\n") == 1, done.stderr
    gssapi = ("-X", "security.protocol=sasl_plaintext", "-X", "sasl.mechanism=GSSAPI")
    unsupported = cli("transactions", "list", *gssapi, *b)
    assert unsupported.returncode == 1
    assert "cannot log in with sasl.mechanism=GSSAPI" in unsupported.stderr


def test_describe_producers_shows_the_open_transaction(
    cli, unverified_kafkette: str, unique_topic
) -> None:
    topic = unique_topic("producers")
    b = ("-b", unverified_kafkette)
    assert cli("topics", "create", topic, *b).returncode == 0
    producer_id, epoch = make_hanging(unverified_kafkette, topic, f"{topic}-id")
    rows = ok_json(
        cli(
            "transactions", "describe-producers", "--topic", topic, "--partition", "0", "--json", *b
        )
    )
    assert [
        (r["producer_id"], r["producer_epoch"], r["last_sequence"], r["start_offset"]) for r in rows
    ] == [(producer_id, epoch, HANGING_RECORDS - 1, 0)]
    by_id = ok_json(
        cli(
            "transactions",
            "abort",
            "--topic",
            topic,
            "--partition",
            "0",
            "--producer-id",
            str(producer_id),
            "--producer-epoch",
            str(epoch),
            "--coordinator-epoch",
            "-1",
            "--json",
            *b,
        )
    )
    assert by_id == {
        "topic": topic,
        "partition": 0,
        "aborted": True,
        "producer_id": producer_id,
        "producer_epoch": epoch,
        "coordinator_epoch": 0,
    }
    rows = ok_json(
        cli(
            "transactions",
            "describe-producers",
            "--topic",
            topic,
            "--partition",
            "0",
            "--broker-id",
            "1",
            "--json",
            *b,
        )
    )
    assert [r["start_offset"] for r in rows] == [None]


# --- partition placement on one broker (the 3-broker case: tests/cluster) ----------------------


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = next(iter(admin.describe_configs([resource]).values())).result(30)
    return {k: e.value for k, e in entries.items() if "throttled" in k and e.value}


def test_reassign_and_elect_leaders_on_one_broker(
    cli, broker: str, unique_topic, tmp_path, request: pytest.FixtureRequest
) -> None:
    """generate/execute/verify/cancel/list and elect-leaders where every replica is broker 1.
    On the reference, Kafka's --verify and kafka-leader-election.sh print the same lines, and
    ``--throttle`` sets (and verify clears) Kafka's replication throttles; kafkette has no
    replication throttles and refuses them in one line, starting nothing."""
    on_kafka = request.node.callspec.params["broker"] == "kafka"
    topic = unique_topic("placed")
    b = ("-b", broker)
    assert cli("topics", "create", topic, "--partitions", "2", *b).returncode == 0
    generated = cli(
        "reassign",
        "generate",
        "--topics-to-move-json-file",
        "-",
        "--broker-list",
        "1",
        *b,
        input=json.dumps({"topics": [{"topic": topic}]}),
    )
    assert generated.returncode == 0, generated.stderr
    both = [{"topic": topic, "partition": p, "replicas": [1], "log_dirs": ["any"]} for p in (0, 1)]
    lines = generated.stdout.splitlines()
    assert (json.loads(lines[1]), json.loads(lines[4])) == (
        {"version": 1, "partitions": both},
        {"version": 1, "partitions": both},
    )

    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"version": 1, "partitions": both}))
    plan_args = ("--reassignment-json-file", str(plan_file))
    throttled = cli("reassign", "execute", *plan_args, "--throttle", "1000000", *b)
    if on_kafka:
        assert throttled.returncode == 0, throttled.stderr
        assert "The inter-broker throttle limit was set to 1000000 B/s" in throttled.stdout
        assert topic_configs(broker, topic) == {"leader.replication.throttled.replicas": "0:1,1:1"}
    else:
        assert throttled.returncode == 1
        assert "run without --throttle" in throttled.stderr
        executed = cli("reassign", "execute", *plan_args, *b)
        assert executed.returncode == 0, executed.stderr
    assert throttled.stdout.startswith("Current partition replica assignment\n\n")
    started = f"Successfully started partition reassignments for {topic}-0,{topic}-1"
    verified = cli("reassign", "verify", *plan_args, *b)
    assert verified.stdout == (
        f"Status of partition reassignment:\nReassignment of partition {topic}-0 is completed."
        f"\nReassignment of partition {topic}-1 is completed.\n\nClearing broker-level "
        f"throttles on broker 1\nClearing topic-level throttles on topic {topic}\n"
    ), verified.stderr
    if on_kafka:
        assert started in throttled.stdout
        assert topic_configs(broker, topic) == {}
        assert (
            kafka_script(broker, "kafka-reassign-partitions.sh", "--verify", *plan_args)
            == verified.stdout
        )
    cancelled = cli("reassign", "cancel", *plan_args, "--preserve-throttles", *b)
    assert cancelled.stdout == "None of the specified partition reassignments are active.\n"
    assert cli("reassign", "list", *b).stdout == "No partition reassignments found.\n"

    elected = cli(
        "elect-leaders", "--election-type", "PREFERRED", "--topic", topic, "--partition", "1", *b
    )
    assert elected.stdout == f"Valid replica already elected for partitions {topic}-1\n"
    if on_kafka:
        assert (
            kafka_script(
                broker,
                "kafka-leader-election.sh",
                "--election-type",
                "PREFERRED",
                "--topic",
                topic,
                "--partition",
                "1",
            )
            == elected.stdout
        )
    wrong = cli(
        "reassign",
        "execute",
        "--reassignment-json-file",
        "-",
        *b,
        input=json.dumps({"partitions": [{"topic": topic, "partition": 0, "replicas": [1, 1]}]}),
    )
    assert (wrong.returncode, wrong.stderr) == (
        2,
        (
            "kafkette: Partition replica lists may not contain duplicate entries: "
            f"{topic}-0 contains multiple entries for 1\n"
        ),
    )
    unknown = cli(
        "reassign",
        "execute",
        "--reassignment-json-file",
        "-",
        *b,
        input=json.dumps({"partitions": [{"topic": topic, "partition": 0, "replicas": [7]}]}),
    )
    assert (unknown.returncode, unknown.stderr.split(":")[:2]) == (
        1,
        ["kafkette", " Unknown broker id 7"],
    )


def make_hanging_offsets(bootstrap: str, topic: str, group: str, txn_id: str) -> int:
    """A transactional offset commit that no coordinator knows about (TxnOffsetCommit v3
    without AddOffsetsToTxn, which the unverified broker takes): it hangs in the group's
    ``__consumer_offsets`` partition. Its producer id."""
    deadline = time.monotonic() + 60
    with WireConnection(bootstrap, "hanging-offsets", timeout=30) as connection:
        for key_type, key in ((1, txn_id), (0, group)):
            retried(
                connection,
                ApiKey.FIND_COORDINATOR,
                4,
                {"key_type": key_type, "coordinator_keys": [key]},
                ["coordinators.error_code"],
                deadline,
            )
        init = init_producer(connection, txn_id, deadline)
        partition = {
            "partition_index": 0,
            "committed_offset": 1,
            "committed_leader_epoch": -1,
            "committed_metadata": None,
        }
        retried(
            connection,
            ApiKey.TXN_OFFSET_COMMIT,
            3,
            {
                "transactional_id": txn_id,
                "group_id": group,
                "producer_id": init["producer_id"],
                "producer_epoch": init["producer_epoch"],
                "generation_id": -1,
                "member_id": "",
                "group_instance_id": None,
                "topics": [{"name": topic, "partitions": [partition]}],
            },
            ["topics.partitions.error_code"],
            deadline,
        )
    return init["producer_id"]


def test_find_hanging_searches_internal_topics_too(
    cli, unverified_kafkette: str, unique_topic
) -> None:
    """Kafka's find-hanging searches every topic a broker holds, ``__consumer_offsets``
    included: a transactional offset commit hangs there like a produce does elsewhere."""
    topic = unique_topic("offsets-hang")
    b = ("-b", unverified_kafkette)
    assert cli("topics", "create", topic, *b).returncode == 0
    producer_id = make_hanging_offsets(unverified_kafkette, topic, f"{topic}-g", f"{topic}-id")
    search = ("--broker-id", "1", "--max-transaction-timeout", "0", "--json", *b)
    found = [
        row
        for row in ok_json(cli("transactions", "find-hanging", *search))
        if row["producer_id"] == producer_id
    ]
    # Its id's transaction (Empty) does not include the partition: nothing will end it.
    assert [(r["topic"], r["transactional_id"]) for r in found] == [
        ("__consumer_offsets", f"{topic}-id")
    ]
    where = ("--topic", "__consumer_offsets", "--partition", str(found[0]["partition"]))
    aborted = cli(
        "transactions", "abort", *where, "--start-offset", str(found[0]["start_offset"]), *b
    )
    assert aborted.returncode == 0, aborted.stderr
    left = ok_json(cli("transactions", "find-hanging", *search))
    assert [r for r in left if r["producer_id"] == producer_id] == []
