"""``kafkette topics``: the CLI as a subprocess against kafkette and the reference Kafka.

Each test checks the exact partitions, offsets and JSON the tool prints, and the exit code
and one-line error a script would see.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from tests.reference_kafka import reference_script_or_skip


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """``counts[p]`` records into partition ``p``, acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, value=b"v%d" % i, partition=partition)
    assert producer.flush(30) == 0


def ok_json(done):
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def test_create_describe_alter_delete_round_trip(cli, any_bootstrap, unique_topic):
    topic = unique_topic("topics")
    b = ("-b", any_bootstrap)
    created = cli("topics", "create", topic, "--partitions", "2", "--replication-factor", "1",
                  "--config", "retention.ms=86400000", *b)
    assert created.returncode == 0, created.stderr
    assert created.stdout == f"Created topic {topic}.\n"
    produce(any_bootstrap, topic, {0: 3, 1: 1})

    [doc] = ok_json(cli("topics", "describe", topic, "--json", *b))
    assert doc["topic"] == topic
    assert doc["partition_count"] == 2 and doc["replication_factor"] == 1
    assert doc["configs"] == {"retention.ms": "86400000"}
    assert [(p["partition"], len(p["replicas"]), p["isr"] == p["replicas"],
             p["leader"] == p["replicas"][0], p["log_start_offset"], p["log_end_offset"])
            for p in doc["partitions"]] == [(0, 1, True, True, 0, 3), (1, 1, True, True, 0, 1)]

    listed = ok_json(cli("topics", "list", "--json", *b))
    assert {"topic": topic, "partitions": 2, "replication_factor": 1,
            "internal": False} in listed

    altered = cli("topics", "alter", topic, "--partitions", "4", "--config", "segment.ms=600000",
                  "--delete-config", "retention.ms", *b)
    assert altered.returncode == 0, altered.stderr
    [doc] = ok_json(cli("topics", "describe", topic, "--json", *b))
    assert [p["log_end_offset"] for p in doc["partitions"]] == [3, 1, 0, 0]
    assert doc["configs"] == {"segment.ms": "600000"}

    deleted = cli("topics", "delete", topic, *b)
    assert (deleted.returncode, deleted.stdout) == (0, f"Deleted topic {topic}.\n"), deleted.stderr
    assert topic not in [t["topic"] for t in ok_json(cli("topics", "list", "--json", *b))]


def test_plain_output_is_an_aligned_table(cli, kafkette_bootstrap, unique_topic):
    topic = unique_topic("plain")
    b = ("-b", kafkette_bootstrap)
    created = cli("topics", "create", topic, "-p", "3", "-c", "cleanup.policy=compact", *b)
    assert created.returncode == 0, created.stderr
    lines = cli("topics", "list", *b).stdout.splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITIONS", "REPLICATION-FACTOR"]
    assert [topic, "3", "1"] in [line.split() for line in lines[1:]]
    described = cli("topics", "describe", topic, *b).stdout.splitlines()
    assert described[0].split() == ["TOPIC", "TOPIC-ID", "PARTITIONS", "REPLICATION-FACTOR"]
    assert described[1].split()[0::2] == [topic, "3"] and described[2] == ""
    described = described[3:]
    assert described[0].split() == ["TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR",
                                    "LOG-START-OFFSET", "LOG-END-OFFSET"]
    assert [line.split()[:2] for line in described[1:4]] == [[topic, "0"], [topic, "1"],
                                                             [topic, "2"]]
    assert described[4] == ""
    assert described[5].split() == ["TOPIC", "CONFIG", "VALUE"]
    assert described[6].split() == [topic, "cleanup.policy", "compact"]


def test_several_topics_create_describe_delete(cli, kafkette_bootstrap, unique_topic):
    first, second = unique_topic("many"), unique_topic("many")
    b = ("-b", kafkette_bootstrap)
    assert cli("topics", "create", first, second, "-p", "1", *b).returncode == 0
    docs = ok_json(cli("topics", "describe", first, second, "--json", *b))
    assert [d["topic"] for d in docs] == [first, second]
    deleted = ok_json(cli("topics", "delete", first, second, "--json", *b))
    assert deleted == {"deleted": [first, second], "missing": []}


def test_existing_and_missing_topics_are_one_line_errors(cli, kafkette_bootstrap, unique_topic):
    topic, absent = unique_topic("errs"), unique_topic("absent")
    b = ("-b", kafkette_bootstrap)
    assert cli("topics", "create", topic, "-p", "2", *b).returncode == 0

    again = cli("topics", "create", topic, *b)
    assert again.returncode == 1
    assert again.stderr == (f"kafkette: topic '{topic}' already exists: add --if-not-exists "
                            "to accept an existing topic\n")
    tolerated = cli("topics", "create", topic, "--if-not-exists", "--json", *b)
    assert ok_json(tolerated) == {"created": [], "existing": [topic]}

    for args in (("describe", absent), ("alter", absent, "-p", "3"), ("delete", topic, absent)):
        done = cli("topics", *args, *b)
        assert done.returncode == 1, args
        assert done.stderr.count("\n") == 1 and f"topic '{absent}' does not exist" in done.stderr
    # The failed delete of [topic, absent] deleted nothing.
    assert topic in [t["topic"] for t in ok_json(cli("topics", "list", "--json", *b))]
    gone = ok_json(cli("topics", "delete", topic, absent, "--if-exists", "--json", *b))
    assert gone == {"deleted": [topic], "missing": [absent]}

    shrink = cli("topics", "create", topic, "-p", "2", *b)
    assert shrink.returncode == 0
    fewer = cli("topics", "alter", topic, "--partitions", "2", *b)
    assert fewer.returncode == 1
    assert "has 2 partitions: --partitions must be more than 2" in fewer.stderr
    bad = cli("topics", "alter", topic, "--config", "retention.ms=soon", *b)
    assert bad.returncode == 1 and "retention.ms" in bad.stderr and bad.stderr.count("\n") == 1


def test_internal_topics_are_hidden_unless_asked(cli, any_bootstrap):
    from confluent_kafka import Consumer, TopicPartition

    kafkette_bootstrap = any_bootstrap
    b = ("-b", kafkette_bootstrap)
    assert cli("topics", "create", "internal-probe", "--if-not-exists", *b).returncode == 0
    committer = Consumer({"bootstrap.servers": kafkette_bootstrap, "group.id": "internal-probe",
                          "log_level": 0})
    for attempt in range(30):  # a fresh Kafka loads __consumer_offsets first: NOT_COORDINATOR
        try:
            committer.commit(offsets=[TopicPartition("internal-probe", 0, 0)], asynchronous=False)
            break
        except KafkaException:
            if attempt == 29:
                raise
            time.sleep(0.5)
    committer.close()
    shown = [t["topic"] for t in ok_json(cli("topics", "list", "--json", *b))]
    everything = ok_json(cli("topics", "list", "--internal", "--json", *b))
    assert "__consumer_offsets" not in shown
    assert {"topic": "__consumer_offsets", "internal": True} in [
        {"topic": t["topic"], "internal": t["internal"]} for t in everything]


def test_no_broker_is_exit_3_with_one_line(cli):
    done = cli("topics", "list", "-b", "127.0.0.1:1", timeout=30)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr == ("kafkette: no broker answered at 127.0.0.1:1: start one with "
                           "`kafkette serve` or point -b (or $KAFKETTE_BOOTSTRAP) at a running "
                           "broker\n")


def test_usage_errors_and_help_examples(cli):
    helped = cli("topics", "create", "--help")
    assert helped.returncode == 0
    assert "examples:\n  kafkette topics create clicks\n" in helped.stdout
    assert "examples:" in cli("topics", "--help").stdout
    wrong = cli("topics", "create", "x", "--partitions", "many")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("usage: kafkette topics create")
    bad_x = cli("topics", "list", "-X", "nonsense", "-b", "127.0.0.1:1")
    assert bad_x.returncode == 2 and "-X 'nonsense' is not KEY=VALUE" in bad_x.stderr


def test_unknown_client_config_is_a_usage_error(cli, kafkette_bootstrap):
    done = cli("topics", "list", "-X", "no.such.property=1", "-b", kafkette_bootstrap)
    assert (done.returncode, done.stderr) == (2, 'kafkette: bad client config: No such '
                                              'configuration property: "no.such.property": '
                                              "fix or drop that -X option\n")


def test_a_broker_that_never_answers_is_exit_3_after_the_timeout(cli):
    """A listener that takes connections but says nothing: bounded by --timeout, then exit 3."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the handshakes; nobody ever reads
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        done = cli("topics", "list", "-b", address, "--timeout", "2", timeout=60)
    assert done.returncode == 3
    assert done.stdout == ""
    assert done.stderr == (f"kafkette: the broker at {address} did not answer within 2 s: "
                           "check it is up and reachable, or raise --timeout\n")


def test_registering_the_admin_tools_loads_no_client_library():
    """`kafkette --help` and `kafkette serve` build this parser: confluent-kafka and rich wait."""
    import subprocess
    import sys

    code = ("import sys, kafkette.cli as c; c.build_parser(); "
            "print(sorted(m for m in ('confluent_kafka', 'rich') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout == "[]\n"


# ---------------------------------------------------------------- topic ids, list --topic REGEX


def kafka_tool(script: str, *args: str) -> str:
    """stdout of one of Kafka's own scripts (skips without Java or the reference)."""
    kafka_ref = reference_script_or_skip(f"{script} is the yardstick")
    done = subprocess.run([str(kafka_ref), "bin", script, *args], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_topic_ids_and_the_list_regex_match_kafka_topics(cli, any_bootstrap, unique_topic):
    """kafka-topics.sh --describe --topic REGEX on the same broker: the same topics match,
    with the same topic ids, leaders, replicas and ISR."""
    prefix = unique_topic("regex")
    b = ("-b", any_bootstrap)
    for suffix, partitions in (("a", "2"), ("b", "1"), ("other", "1")):
        done = cli("topics", "create", f"{prefix}.{suffix}", "-p", partitions, *b)
        assert done.returncode == 0, done.stderr
    regex = f"{prefix}\\.[ab]"
    listed = [t["topic"] for t in ok_json(cli("topics", "list", "--topic", regex, "--json", *b))]
    assert listed == [f"{prefix}.a", f"{prefix}.b"]
    either = ok_json(cli("topics", "list", "--topic", f"{prefix}.a,{prefix}.other", "--json", *b))
    assert [t["topic"] for t in either] == [f"{prefix}.a", f"{prefix}.other"]
    assert ok_json(cli("topics", "list", "--topic", prefix, "--json", *b)) == []  # whole name

    kafkas = kafka_tool("kafka-topics.sh", "--bootstrap-server", any_bootstrap, "--describe",
                        "--topic", regex)
    theirs = {}
    for line in kafkas.splitlines():
        fields = dict(re.findall(r"(\w+): (\S*)", line))
        if "TopicId" in fields:
            theirs[fields["Topic"]] = {"topic_id": fields["TopicId"], "partitions": []}
        elif "Partition" in fields:
            theirs[fields["Topic"]]["partitions"].append(
                (int(fields["Partition"]), int(fields["Leader"]), fields["Replicas"],
                 fields["Isr"]))
    assert sorted(theirs) == listed
    docs = ok_json(cli("topics", "describe", *listed, "--json", *b))
    ours = {d["topic"]: {"topic_id": d["topic_id"], "partitions": [
        (p["partition"], p["leader"], ",".join(map(str, p["replicas"])),
         ",".join(map(str, p["isr"]))) for p in d["partitions"]]} for d in docs}
    assert ours == theirs


def test_a_bad_list_regex_is_a_usage_error(cli):
    done = cli("topics", "list", "--topic", "clicks(", "-b", "127.0.0.1:1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("kafkette: --topic 'clicks(' is not a regular expression")


# ---------------------------------------------------------------- delete-records


def earliest_offsets(bootstrap: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "log_level": 0})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[0]
                for p in range(partitions)]
    finally:
        consumer.close()


def first_offset_read(bootstrap: str, topic: str, partition: int) -> int:
    """The offset of the first record a consumer reads from the log start."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused", "log_level": 0,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, partition, -2)])  # OFFSET_BEGINNING
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message.offset()
        raise AssertionError("no record read")
    finally:
        consumer.close()


def test_delete_records_matches_kafkas_tool(cli, any_bootstrap, unique_topic, tmp_path: Path):
    topic = unique_topic("delrec")
    b = ("-b", any_bootstrap)
    assert cli("topics", "create", topic, "-p", "3", *b).returncode == 0
    now = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": any_bootstrap, "log_level": 0})
    for partition in range(3):
        for hours_ago in (5, 4, 3, 2, 1):  # offsets 0-4, an hour apart
            producer.produce(topic, value=b"v", partition=partition,
                             timestamp=now - hours_ago * 3_600_000)
    assert producer.flush(30) == 0

    # One partition to an offset: the log start moves there, the first record read is it.
    done = cli("topics", "delete-records", topic, "--partition", "0", "--offset", "2", *b)
    assert done.returncode == 0, done.stderr
    assert [line.split() for line in done.stdout.splitlines()] == [
        ["TOPIC", "PARTITION", "LOW-WATERMARK"], [topic, "0", "2"]]
    assert earliest_offsets(any_bootstrap, topic, 3) == [2, 0, 0]
    assert first_offset_read(any_bootstrap, topic, 0) == 2

    # Kafka's own tool on the same broker, with its JSON file: the same kind of answer.
    plan = tmp_path / "offsets.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 1, "offset": 3}],
                                "version": 1}))
    kafkas = kafka_tool("kafka-delete-records.sh", "--bootstrap-server", any_bootstrap,
                        "--offset-json-file", str(plan))
    assert f"partition: {topic}-1\tlow_watermark: 3" in kafkas
    assert earliest_offsets(any_bootstrap, topic, 3) == [2, 3, 0]

    # Ours reads the same file format; -1 is the high watermark (every record).
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 2, "offset": -1},
                                               {"topic": topic, "partition": 0, "offset": 3}],
                                "version": 1}))
    rows = ok_json(cli("topics", "delete-records", "--offset-json-file", str(plan), "--json",
                       *b))
    assert rows == [{"topic": topic, "partition": 0, "low_watermark": 3, "error": None},
                    {"topic": topic, "partition": 2, "low_watermark": 5, "error": None}]
    assert earliest_offsets(any_bootstrap, topic, 3) == [3, 3, 5]

    # A time: the records older than it go (ListOffsets finds the first one at or after it).
    cutoff = now - 3_600_000 - 60_000  # just before the last record of each partition
    rows = ok_json(cli("topics", "delete-records", topic, "--timestamp", str(cutoff),
                       "--json", *b))
    assert [(r["partition"], r["low_watermark"]) for r in rows] == [(0, 4), (1, 4), (2, 5)]
    assert first_offset_read(any_bootstrap, topic, 1) == 4

    # Past the high watermark: the broker's OFFSET_OUT_OF_RANGE, exit 1, nothing else moved.
    done = cli("topics", "delete-records", topic, "--offset", "9", *b)
    assert done.returncode == 1
    assert done.stderr.startswith(f"kafkette: records were not deleted from {topic}-0: ")
    assert "(OFFSET_OUT_OF_RANGE)" in done.stderr and len(done.stderr.splitlines()) == 1
    assert earliest_offsets(any_bootstrap, topic, 3) == [4, 4, 5]


def test_delete_records_checks_before_it_deletes(cli, kafkette_bootstrap, unique_topic,
                                                 tmp_path: Path):
    topic = unique_topic("delrec-check")
    b = ("-b", kafkette_bootstrap)
    assert cli("topics", "create", topic, "-p", "1", *b).returncode == 0
    produce(kafkette_bootstrap, topic, {0: 3})
    plan = tmp_path / "offsets.json"
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 1},
                                               {"topic": topic, "partition": 4, "offset": 1}],
                                "version": 1}))
    done = cli("topics", "delete-records", "--offset-json-file", str(plan), *b)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"kafkette: topic {topic!r} has no partition 4 (it has 1): see "
                           f"`kafkette topics describe {topic}`\n")
    assert earliest_offsets(kafkette_bootstrap, topic, 1) == [0]
    plan.write_text(json.dumps({"partitions": [{"topic": topic, "partition": 0, "offset": 1},
                                               {"topic": topic, "partition": 0, "offset": 2}]}))
    twice = cli("topics", "delete-records", "--offset-json-file", str(plan), *b)
    assert twice.returncode == 2 and f"names {topic}-0 twice" in twice.stderr
    usage = [cli("topics", "delete-records", topic, "--before", "soon", *b),
             cli("topics", "delete-records", "--offset", "1", *b),
             cli("topics", "delete-records", topic, *b)]
    assert [u.returncode for u in usage] == [2, 2, 2]
    assert usage[0].stderr.startswith("kafkette: --before 'soon' is not a date-time")
    assert earliest_offsets(kafkette_bootstrap, topic, 1) == [0]
