"""``kafkette consume``: the CLI as a subprocess, reading records a plain confluent-kafka
producer wrote (keys, values, headers, partitions and timestamps chosen by the test), so
each test checks the exact text or JSON printed, the offsets, and the exit code.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

RECORDS = [  # (partition, key, value, headers, timestamp ms)
    (0, b"k0", b"hello", [("h", b"1")], 1_000),
    (0, None, b"no key", None, 2_000),
    (1, b"k2", None, [("a", b"x"), ("a", b"y")], 3_000),
    (1, b"", b"", None, 4_000),
    (0, b"bin", b"\x00\xff", [("raw", b"\xfe")], 5_000),
]


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    """A topic that keeps every record: RECORDS carry 1970 timestamps, which time retention
    (7 days by default) would delete at the broker's next check, every 5 minutes."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config={"retention.ms": "-1"})
    admin.create_topics([new])[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, records: list[tuple[Any, ...]],
            **config: Any) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for partition, key, value, headers, timestamp in records:
        producer.produce(topic, value, key, partition, timestamp=timestamp, headers=headers)
    assert producer.flush(30) == 0


def fill(bootstrap: str, topic: str) -> None:
    create_topic(bootstrap, topic, partitions=2)
    produce(bootstrap, topic, RECORDS)


def test_format_tokens_exact(any_bootstrap: str, cli: Callable[..., Any],
                             unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("consume-fmt")
    fill(any_bootstrap, topic)
    done = cli("consume", topic, "-b", any_bootstrap, "-e", "-p", "1",
               "-f", "%t|%p|%o|%T|%k|%K|%s|%S|%h|100%%\\t\\x41\\n")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{topic}|1|0|3000|k2|2||-1|a=x,a=y|100%\tA\n"
        f"{topic}|1|1|4000||0||0||100%\tA\n"
    )
    done = cli("consume", topic, "-b", any_bootstrap, "-p", "0", "-c", "2", "-K", ":")
    assert (done.returncode, done.stdout, done.stderr) == (0, "k0:hello\n:no key\n", "")


def test_json_round_trip(any_bootstrap: str, cli: Callable[..., Any],
                         unique_topic: Callable[[str], str]) -> None:
    topic, copy = unique_topic("consume-json"), unique_topic("consume-copy")
    fill(any_bootstrap, topic)
    create_topic(any_bootstrap, copy, partitions=2)
    first = cli("consume", topic, "-b", any_bootstrap, "-e", "--json")
    assert (first.returncode, first.stderr) == (0, "")
    lines = [json.loads(line) for line in first.stdout.splitlines()]
    by_place = sorted(lines, key=lambda r: (r["partition"], r["offset"]))
    assert by_place[0] == {
        "topic": topic, "partition": 0, "offset": 0, "timestamp": 1000,
        "timestamp_type": "CreateTime", "key": "k0", "value": "hello", "headers": [["h", "1"]],
    }
    assert [(r["key"], r["value"], r["headers"]) for r in by_place[1:]] == [
        (None, "no key", []),
        ("bin", {"base64": "AP8="}, [["raw", {"base64": "/g=="}]]),
        ("k2", None, [["a", "x"], ["a", "y"]]),
        ("", "", []),
    ]
    produced = cli("produce", copy, "-b", any_bootstrap, "--json", input=first.stdout)
    assert (produced.returncode, produced.stderr) == (0, "")
    second = cli("consume", copy, "-b", any_bootstrap, "-e", "--json")
    again = sorted((json.loads(line) for line in second.stdout.splitlines()),
                   key=lambda r: (r["partition"], r["offset"]))
    assert [{**r, "topic": topic} for r in again] == by_place


def test_start_positions_and_count(kafkette_bootstrap: str, cli: Callable[..., Any],
                                   unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("consume-start")
    fill(kafkette_bootstrap, topic)

    def offsets(*flags: str) -> list[str]:
        done = cli("consume", topic, "-b", kafkette_bootstrap, "-e", "-p", "0",
                   "-f", "%o\\n", *flags)
        assert (done.returncode, done.stderr) == (0, ""), flags
        return done.stdout.splitlines()

    assert offsets() == ["0", "1", "2"]  # kcat's default: from the beginning
    assert offsets("--from-beginning", "-c", "1") == ["0"]
    assert offsets("--offset", "1") == ["1", "2"]
    assert offsets("--offset", "-1") == ["2"]  # the last record of each partition
    assert offsets("--from-end") == []
    assert offsets("--from-timestamp", "2000") == ["1", "2"]
    assert offsets("--from-timestamp", "1970-01-01T00:00:02.001Z") == ["2"]
    assert offsets("--from-timestamp", "2099-01-01T00:00:00+01:00") == []
    both = cli("consume", topic, "-b", kafkette_bootstrap, "-e", "-f", "%p/%o\\n")
    assert sorted(both.stdout.splitlines()) == ["0/0", "0/1", "0/2", "1/0", "1/1"]


def test_group_commits_and_resumes(any_bootstrap: str, cli: Callable[..., Any],
                                   unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("consume-group")
    create_topic(any_bootstrap, topic)
    produce(any_bootstrap, topic, [(0, None, f"r{i}".encode(), None, 1000 + i)
                                   for i in range(5)])
    group = f"group-{topic}"
    first = cli("consume", topic, "-b", any_bootstrap, "-G", group, "-c", "2")
    assert (first.returncode, first.stdout, first.stderr) == (0, "r0\nr1\n", "")
    rest = cli("consume", topic, "-b", any_bootstrap, "-G", group, "-e")
    assert (rest.returncode, rest.stdout, rest.stderr) == (0, "r2\nr3\nr4\n", "")
    again = cli("consume", topic, "-b", any_bootstrap, "-G", group, "-e")
    assert (again.returncode, again.stdout) == (0, "")


def test_read_committed_hides_aborted(kafkette_bootstrap: str, cli: Callable[..., Any],
                                      unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("consume-txn")
    create_topic(kafkette_bootstrap, topic)
    producer = Producer({"bootstrap.servers": kafkette_bootstrap, "transactional.id": topic})
    producer.init_transactions(30)
    for values, commit in ((["c1", "c2"], True), (["a1", "a2"], False), (["c3"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value.encode())
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)
    committed = cli("consume", topic, "-b", kafkette_bootstrap, "-e",
                    "--isolation-level", "read_committed")
    assert (committed.returncode, committed.stdout) == (0, "c1\nc2\nc3\n")
    everything = cli("consume", topic, "-b", kafkette_bootstrap, "-e")  # Kafka's default
    assert (everything.returncode, everything.stdout) == (0, "c1\nc2\na1\na2\nc3\n")


def test_missing_topic(kafkette_bootstrap: str, cli: Callable[..., Any],
                       unique_topic: Callable[[str], str]) -> None:
    topic = unique_topic("consume-missing")
    done = cli("consume", topic, "-b", kafkette_bootstrap, "-e")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"kafkette: topic {topic} does not exist: see `kafkette topics "
                           "list`, or leave out -e to wait for it\n")
    # following waits for the topic, then prints what arrives
    follower = subprocess.Popen(
        [sys.executable, "-m", "kafkette", "consume", topic, "-b", kafkette_bootstrap,
         "-c", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(1.5)
        assert follower.poll() is None
        produce(kafkette_bootstrap, topic, [(0, None, b"late", None, 1)])
        out, err = follower.communicate(timeout=60)
    finally:
        follower.kill()
    assert (follower.returncode, out, err) == (0, b"late\n", b"")


def test_pipe_to_head_and_ctrl_c(kafkette_bootstrap: str, unique_topic: Callable[[str], str]
                                 ) -> None:
    topic = unique_topic("consume-head")
    create_topic(kafkette_bootstrap, topic)
    produce(kafkette_bootstrap, topic, [(0, None, b"%d" % i, None, 1) for i in range(3000)])
    # following (no -e): head leaves after 3 lines; the tool must notice and exit quietly
    shell = (f"{sys.executable} -m kafkette consume {topic} -b {kafkette_bootstrap} | head -3;"
             " echo rc=${PIPESTATUS[0]}")
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60)
    assert (done.stdout, done.stderr) == ("0\n1\n2\nrc=0\n", "")

    follower = subprocess.Popen(
        [sys.executable, "-m", "kafkette", "consume", topic, "-b", kafkette_bootstrap,
         "--from-end"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(2)
        follower.send_signal(signal.SIGINT)
        out, err = follower.communicate(timeout=30)
    finally:
        follower.kill()
    assert (follower.returncode, out, err) == (130, b"", b"")


def test_usage_errors(cli: Callable[..., Any]) -> None:
    done = cli("consume", "t", "-G", "g", "-p", "0")
    assert done.returncode == 2 and done.stderr.startswith("kafkette: -p does not go with -G")
    done = cli("consume", "^t.*", "-e")
    assert done.returncode == 2 and "add -G GROUP" in done.stderr
    done = cli("consume", "t", "-f", "%q")
    assert done.returncode == 2 and done.stderr.startswith("kafkette: -f: unknown format token")
    done = cli("consume", "t", "--from-timestamp", "yesterday")
    assert done.returncode == 2 and "neither epoch milliseconds nor ISO 8601" in done.stderr
    done = cli("consume", "t", "--json", "-f", "%s")
    assert done.returncode == 2 and "usage: kafkette consume" in done.stderr
    done = cli("consume", "t", "-b", "127.0.0.1:1", "-e")
    assert done.returncode == 3 and done.stderr.count("\n") == 1


def test_invalid_regex_subscription_is_a_usage_error(kafkette_bootstrap: str,
                                                     cli: Callable[..., Any]) -> None:
    done = cli("consume", "^[", "-b", kafkette_bootstrap, "-G", "bad-regex", "-e")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("kafkette: cannot subscribe to ^[: ")
