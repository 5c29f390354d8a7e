"""``kafkette produce``: the CLI as a subprocess; what it wrote is read back with a plain
confluent-kafka consumer (not ``kafkette consume``), record by record, so each test checks
exact keys, values, headers, partitions, offsets and timestamps.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.partitioner.default import murmur2

from kafkette.broker.embedded import EmbeddedBroker


def create_topic(bootstrap: str, topic: str, partitions: int = 1,
                 configs: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1, config=configs or {})])
    futures[topic].result(timeout=30)


def read_records(bootstrap: str, topic: str, partitions: int = 1,
                 expected: int | None = None) -> list[dict[str, Any]]:
    """Every record of ``topic`` (partition by partition, offset order), via confluent-kafka."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "isolation.level": "read_uncommitted"})
    try:
        consumer.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
        records: list[dict[str, Any]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        while len(at_end) < partitions or (expected is not None and len(records) < expected):
            assert time.monotonic() < deadline, f"only {len(records)} records of {topic}"
            message = consumer.poll(0.5)
            if message is None:
                continue
            if message.error():
                at_end.add(message.partition())
                continue
            records.append({
                "partition": message.partition(), "offset": message.offset(),
                "key": message.key(), "value": message.value(),
                "headers": message.headers() or [], "timestamp": message.timestamp()[1],
            })
        return sorted(records, key=lambda r: (r["partition"], r["offset"]))
    finally:
        consumer.close()


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a key (murmur2, positive, modulo)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def test_lines_keys_headers_exact(any_bootstrap: str, cli: Callable[..., Any],
                                  unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-lines")
    text = "a:1\nb:2\n:3\nno-key\n\nc:\nd:x:y"  # the last line has no newline
    done = cli("produce", topic, "-b", any_bootstrap, "-K:", "-H", "h1=x", "-H", "h2=",
               input=text)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    records = read_records(any_bootstrap, topic, expected=6)
    headers = [("h1", b"x"), ("h2", b"")]
    assert [(r["offset"], r["key"], r["value"], r["headers"]) for r in records] == [
        (0, b"a", b"1", headers),
        (1, b"b", b"2", headers),
        (2, b"", b"3", headers),  # an empty key stays empty (kcat's -K)
        (3, None, b"no-key", headers),  # no separator: null key, the whole line is the value
        (4, b"c", b"", headers),  # the empty line before it was skipped, as kcat does
        (5, b"d", b"x:y", headers),  # split at the first separator only
    ]


def test_null_empty_fixed_key_file_and_delimiter(kafkette_bootstrap: str,
                                                 cli: Callable[..., Any],
                                                 unique_topic: Callable[[str], str],
                                                 tmp_path: Path) -> None:
    topic = unique_topic("produce-z")
    done = cli("produce", topic, "-b", kafkette_bootstrap, "-K:", "-Z", input="k:\n\n:v\n")
    assert done.returncode == 0, done.stderr
    records = read_records(kafkette_bootstrap, topic, expected=3)
    assert [(r["key"], r["value"]) for r in records] == [
        (b"k", None), (None, None), (None, b"v")]  # -Z: empty -> null (a tombstone)

    path = tmp_path / "records.txt"
    path.write_bytes(b"one;two;;three")
    other = unique_topic("produce-file")
    done = cli("produce", other, "-b", kafkette_bootstrap, "--file", str(path), "-D", ";",
               "-k", "fixed")
    assert done.returncode == 0, done.stderr
    records = read_records(kafkette_bootstrap, other, expected=3)
    assert [(r["key"], r["value"]) for r in records] == [
        (b"fixed", b"one"), (b"fixed", b"two"), (b"fixed", b"three")]


def test_partitions_by_key_as_java_and_by_flag(kafkette_bootstrap: str,
                                               cli: Callable[..., Any],
                                               unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-parts")
    create_topic(kafkette_bootstrap, topic, partitions=3)
    keys = [f"user-{i}".encode() for i in range(12)]
    lines = "".join(f"{key.decode()}:v{i}\n" for i, key in enumerate(keys))
    done = cli("produce", topic, "-b", kafkette_bootstrap, "-K:", "-z", "zstd", input=lines)
    assert done.returncode == 0, done.stderr
    records = read_records(kafkette_bootstrap, topic, partitions=3, expected=12)
    placed = {r["key"]: r["partition"] for r in records}
    assert placed == {key: java_partition(key, 3) for key in keys}
    assert len(set(placed.values())) > 1

    done = cli("produce", topic, "-b", kafkette_bootstrap, "-p", "2", "-z", "gzip",
               "--acks", "1", input="p1\np2\n")
    assert done.returncode == 0, done.stderr
    records = read_records(kafkette_bootstrap, topic, partitions=3, expected=14)
    assert [r["value"] for r in records if r["partition"] == 2][-2:] == [b"p1", b"p2"]

    done = cli("produce", topic, "-b", kafkette_bootstrap, "-p", "3", input="x\n")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "no partition 3" in done.stderr


def test_json_input_exact(any_bootstrap: str, cli: Callable[..., Any],
                          unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-json")
    create_topic(any_bootstrap, topic, partitions=2)
    lines = [
        {"key": "k1", "value": "v1", "headers": [["a", "1"], ["a", "2"]], "timestamp": 1000},
        {"key": None, "value": {"base64": "AP8="}, "partition": 1, "timestamp": 2000},
        {"value": {"n": 1, "list": [1, 2]}, "headers": {"h": None}, "partition": 0,
         "timestamp": 3000},
        {"key": "k4", "value": None, "partition": 1, "timestamp": 4000,
         "topic": "ignored", "offset": 99},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n"
    done = cli("produce", topic, "-b", any_bootstrap, "--json", "-p", "0", input=text)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    records = read_records(any_bootstrap, topic, partitions=2, expected=4)
    assert [(r["partition"], r["offset"], r["key"], r["value"], r["headers"], r["timestamp"])
            for r in records] == [
        (0, 0, b"k1", b"v1", [("a", b"1"), ("a", b"2")], 1000),  # -p 0: the default
        (0, 1, None, b'{"n":1,"list":[1,2]}', [("h", None)], 3000),
        (1, 0, None, b"\x00\xff", [], 2000),
        (1, 1, b"k4", None, [], 4000),
    ]


def test_bad_json_line_stops_there(kafkette_bootstrap: str, cli: Callable[..., Any],
                                   unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-badjson")
    done = cli("produce", topic, "-b", kafkette_bootstrap, "--json",
               input='{"value": "ok"}\n{"value": \n{"value": "never"}\n')
    assert done.returncode == 1
    assert done.stderr.startswith("kafkette: input line 2: not JSON")
    assert done.stderr.count("\n") == 1
    assert [r["value"] for r in read_records(kafkette_bootstrap, topic, expected=1)] == [b"ok"]


def test_failed_deliveries_exit_1_with_one_line(kafkette_bootstrap: str,
                                                cli: Callable[..., Any],
                                                unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-toolarge")
    create_topic(kafkette_bootstrap, topic, configs={"max.message.bytes": "2000"})
    done = cli("produce", topic, "-b", kafkette_bootstrap, input="x" * 5000 + "\n")
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"kafkette: 1 of 1 records were not delivered to {topic}: ")
    assert "too large" in done.stderr


def test_rate_paces_records(kafkette_bootstrap: str, cli: Callable[..., Any],
                            unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-rate")
    started = time.monotonic()
    done = cli("produce", topic, "-b", kafkette_bootstrap, "--rate", "20",
               input="".join(f"r{i}\n" for i in range(11)))
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert elapsed >= 0.5  # 11 records at 20/s: the last one leaves 0.5 s after the first
    assert len(read_records(kafkette_bootstrap, topic, expected=11)) == 11


def test_transactional_id_commits_all_at_the_end(kafkette_bootstrap: str,
                                                 cli: Callable[..., Any],
                                                 unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-txn")
    done = cli("produce", topic, "-b", kafkette_bootstrap, "-X",
               f"transactional.id={topic}", input="t1\nt2\n")
    assert done.returncode == 0, done.stderr
    records = read_records(kafkette_bootstrap, topic, expected=2)
    assert [r["value"] for r in records] == [b"t1", b"t2"]  # offset 2 is the commit marker


def test_missing_topic_without_auto_create(cli: Callable[..., Any], tmp_path: Path) -> None:
    configs = {"auto.create.topics.enable": "false"}
    with EmbeddedBroker.start(data_dir=tmp_path, configs=configs) as broker:
        done = cli("produce", "nowhere", "-b", broker.bootstrap, input="x\n")
    assert done.returncode == 1
    assert done.stderr == ("kafkette: topic nowhere does not exist and the broker does not "
                           "create topics on produce (auto.create.topics.enable=false): "
                           "create it with `kafkette topics create nowhere`\n")


def test_unreachable_and_usage_errors(cli: Callable[..., Any]) -> None:
    done = cli("produce", "t", "-b", "127.0.0.1:1", input="x\n")
    assert done.returncode == 3
    assert done.stderr.startswith("kafkette: no broker answered at 127.0.0.1:1")
    assert done.stderr.count("\n") == 1
    done = cli("produce", "t", "-b", "127.0.0.1:1", "-H", "novalue", input="x\n")
    assert done.returncode == 2 and "-H 'novalue' is not NAME=VALUE" in done.stderr
    done = cli("produce", "t", "--acks", "2")
    assert done.returncode == 2 and "usage: kafkette produce" in done.stderr


def test_help_lists_examples(cli: Callable[..., Any]) -> None:
    done = cli("produce", "--help")
    assert done.returncode == 0
    assert "examples:" in done.stdout and "kafkette produce clicks -K:" in done.stdout


BIG_RECORD_INPUT = "a\nb\n" + "x" * 1_100_000 + "\nc\n"  # line 3 is over message.max.bytes


def test_record_over_message_max_bytes_stops_there(kafkette_bootstrap: str,
                                                   cli: Callable[..., Any],
                                                   unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-hugeline")
    done = cli("produce", topic, "-b", kafkette_bootstrap, input=BIG_RECORD_INPUT)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("kafkette: input line 3: ")
    assert "too large" in done.stderr
    assert done.stderr.endswith("; the 2 records before it were produced\n")
    assert [r["value"] for r in read_records(kafkette_bootstrap, topic, expected=2)] == [
        b"a", b"b"]


def assert_no_open_transaction(bootstrap: str, topic: str, cli: Callable[..., Any]) -> None:
    """A record produced after the tool ended is visible to read_committed at once: no
    transaction left open holds the last stable offset back."""
    assert cli("produce", topic, "-b", bootstrap, input="after\n").returncode == 0
    committed = cli("consume", topic, "-b", bootstrap, "-e",
                    "--isolation-level", "read_committed")
    assert (committed.returncode, committed.stdout) == (0, "after\n"), committed.stderr


def test_record_over_message_max_bytes_aborts_the_transaction(
        kafkette_bootstrap: str, cli: Callable[..., Any],
        unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-hugeline-txn")
    done = cli("produce", topic, "-b", kafkette_bootstrap, "-X", f"transactional.id={topic}",
               input=BIG_RECORD_INPUT)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("kafkette: input line 3: ")
    assert done.stderr.endswith(
        "; the transaction of the 2 records before it was aborted\n")
    assert_no_open_transaction(kafkette_bootstrap, topic, cli)


def test_bad_json_line_in_a_transaction_says_aborted(kafkette_bootstrap: str,
                                                     cli: Callable[..., Any],
                                                     unique_topic: Callable[[str], str]
                                                     ) -> None:
    topic = unique_topic("produce-badjson-txn")
    done = cli("produce", topic, "-b", kafkette_bootstrap, "--json", "-X",
               f"transactional.id={topic}",
               input='{"value": "ok1"}\n{"value": "ok2"}\n{"value": \n')
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("kafkette: input line 3: not JSON")
    assert done.stderr.endswith("; the transaction of the 2 records before it was aborted\n")
    assert_no_open_transaction(kafkette_bootstrap, topic, cli)


def test_missing_file_is_a_usage_error_before_any_broker(cli: Callable[..., Any],
                                                         tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.txt"
    done = cli("produce", "t", "-b", "127.0.0.1:1", "--file", str(missing))
    assert done.returncode == 2
    assert done.stderr == f"kafkette: --file {missing}: No such file or directory\n"


def test_refused_init_transactions_is_one_line(kafkette_bootstrap: str,
                                               cli: Callable[..., Any],
                                               unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("produce-txn-refused")
    # over the broker's transaction.max.timeout.ms (900000): InitProducerId is refused
    done = cli("produce", topic, "-b", kafkette_bootstrap, "-X", f"transactional.id={topic}",
               "-X", "transaction.timeout.ms=1000000", input="x\n")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"kafkette: transactional.id={topic}: ")
    assert "INVALID_TRANSACTION_TIMEOUT" in done.stderr
