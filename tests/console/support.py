"""Helpers of the console tests: the broker with its console, a known workload, HTTP."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.raw_wire import call
from bench.harness.serve_process import ServeFailed, ServeProcess, serve_args
from kafkette.wire.apis import ApiKey
from tests.share_groups import share_helpers

CONSOLE_LINE = re.compile(r"console on (http://[^/\s]+/)")

TOPIC = "orders"
PARTITIONS = 3
GROUP = "billing"
SHARE_TOPIC = "tasks"
SHARE_GROUP = "crew"
SHARE_CLIENT = "crew-1"
# Markup a client may put in a record: must show as text, never run or render.
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'


class ConsoleBroker(ServeProcess):
    """``kafkette serve --listen 127.0.0.1:0 --data-dir <tmp>/data [ARGS]``; ``url`` is the
    console's, from its log line, once ``wait_ready`` returned."""

    def __init__(self, tmp: Path, args: list[str]) -> None:
        configs = {"group.initial.rebalance.delay.ms": "0"}
        super().__init__([*serve_args(tmp / "data", configs=configs), *args], tmp / "broker.log")
        self.url = ""

    def wait_ready(self, timeout: float = 30) -> ConsoleBroker:
        super().wait_ready(timeout)
        found = CONSOLE_LINE.search(self.log_text())
        assert found, f"no 'console on' line in the log:\n{self.log_text()}"
        self.url = found.group(1)
        return self

    def log_text(self) -> str:
        return self.stderr_text()

    def stop(self) -> None:
        """SIGTERM, and SIGKILL if the broker has not stopped within 20 s."""
        try:
            self.terminate(20)
        except ServeFailed:
            pass  # killed: the tests check the exit code where it matters


# --- HTTP -----------------------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> object:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


def http(
    url: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> Reply:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Reply(response.status, dict(response.headers.items()), response.read())
    except urllib.error.HTTPError as error:
        return Reply(error.code, dict(error.headers.items()), error.read())


# --- workload -------------------------------------------------------------------


@dataclass
class Workload:
    bootstrap: str
    records: dict[int, list[tuple[int, bytes | None, bytes | None]]]  # as a consumer reads them
    committed: dict[int, int]  # what the group committed, per partition
    members: list[Consumer] = field(default_factory=list)

    def client_view_of_lag(self) -> dict[int, tuple[int, int, int]]:
        """(committed, high watermark, lag) per partition, as the clients see them."""
        probe = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "enable.auto.commit": False}
        )
        try:
            tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
            committed = {tp.partition: tp.offset for tp in probe.committed(tps, timeout=15)}
            out = {}
            for p in range(PARTITIONS):
                _, high = probe.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=15)
                if committed[p] >= 0:
                    out[p] = (committed[p], high, high - committed[p])
            return out
        finally:
            probe.close()


def _records_for(partition: int) -> list[tuple[bytes | None, bytes | None, list]]:
    rows: list[tuple[bytes | None, bytes | None, list]] = []
    for i in range(12):
        rows.append((f"key-{partition}-{i}".encode(), f"value {partition}/{i}".encode(), []))
    rows.append((b"json", json.dumps({"order": 7, "items": ["a", "b"]}).encode(), []))
    rows.append((None, bytes(range(250, 256)) + b"\x00\x01", [("bin", b"\x00\xff")]))
    rows.append((HOSTILE.encode(), HOSTILE.encode(), [("trace", HOSTILE.encode())]))
    return rows


def produce_and_consume(bootstrap: str) -> Workload:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)]
    ).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for p in range(PARTITIONS):
        for key, value, headers in _records_for(p):
            producer.produce(TOPIC, key=key, value=value, headers=headers or None, partition=p)
    assert producer.flush(30) == 0

    # What a consumer reads, partition by partition.
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "console-test-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    records: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    reader.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    expected = len(_records_for(0)) * PARTITIONS
    deadline = time.monotonic() + 30
    while sum(map(len, records.values())) < expected and time.monotonic() < deadline:
        message = reader.poll(0.5)
        if message is None or message.error():
            continue
        records[message.partition()].append((message.offset(), message.key(), message.value()))
    reader.close()
    assert sum(map(len, records.values())) == expected

    # A group member that consumed a different amount of each partition and committed it.
    member = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "client.id": "billing-1",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    member.subscribe([TOPIC])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    assert member.assignment(), "the group member got no assignment"
    committed = {0: 3, 1: 9, 2: len(_records_for(2))}  # lag 12, 6 and 0
    member.commit(
        offsets=[TopicPartition(TOPIC, p, o) for p, o in committed.items()], asynchronous=False
    )
    return Workload(bootstrap, records, committed, [member])


# --- a share group (KIP-932) holding records -------------------------------------


@dataclass
class ShareWorkload:
    """Share group ``crew`` on ``tasks`` (one partition, 10 records): its one member
    accepted offsets 0-2 and 5, rejected 3 and 6, and holds 4, 7, 8 and 9 under their
    acquisition locks (60 s). So the start offset is 4 (0-3 are done), six offsets are in
    flight (4-9): four acquired, one acknowledged, one archived; two are delivery-complete
    and the lag is 10 - 4 - 2 = 4."""

    bootstrap: str
    member: ShareConsumer

    def client_view(self) -> dict:
        """DescribeShareGroupOffsets v1's (start offset, lag) of partition 0, and the
        member ids ShareGroupDescribe names: what an admin client sees."""
        offsets = call(self.bootstrap, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 1,
                       {"groups": [{"group_id": SHARE_GROUP, "topics": None}]})
        [row] = offsets["groups"][0]["topics"][0]["partitions"]
        described = call(self.bootstrap, ApiKey.SHARE_GROUP_DESCRIBE, 1,
                         {"group_ids": [SHARE_GROUP], "include_authorized_operations": False})
        members = [m["member_id"] for m in described["groups"][0]["members"]]
        return {"start_offset": row["start_offset"], "lag": row["lag"], "members": members}


def hold_share_records(bootstrap: str) -> ShareWorkload:
    share_helpers.create_topic(bootstrap, SHARE_TOPIC)
    share_helpers.set_group_configs(bootstrap, SHARE_GROUP, share_auto_offset_reset="earliest",
                                    share_record_lock_duration_ms="60000")
    share_helpers.produce(bootstrap, SHARE_TOPIC, [f"task {i}" for i in range(10)])
    member = share_helpers.share_consumer(bootstrap, SHARE_GROUP, SHARE_TOPIC, **{
        "share.acknowledgement.mode": "explicit", "client.id": SHARE_CLIENT})
    got = share_helpers.poll_until(member, lambda got: len(got) >= 10, timeout=30)
    assert len(got) == 10, f"the share consumer got {len(got)} of 10 records"
    verdicts = {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.ACCEPT, 2: AcknowledgeType.ACCEPT,
                3: AcknowledgeType.REJECT, 5: AcknowledgeType.ACCEPT, 6: AcknowledgeType.REJECT}
    for message in got:
        verdict = verdicts.get(message.offset())
        if verdict is not None:
            member.acknowledge(message, verdict)
    member.commit_sync()
    return ShareWorkload(bootstrap, member)
