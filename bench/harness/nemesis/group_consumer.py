"""A consumer-group member that processes each record exactly once as its group's committed
offsets say, for the nemesis schedules.

Run as ``python -m bench.harness.nemesis.group_consumer --bootstrap B --topic T --out PATH
--group G [--protocol classic|consumer]``; two copies with one group make rebalances.

Every record is committed alone, synchronously (offset + 1, metadata ``<instance>:<offset>``)
and written ``{"p", "o", "v", "committed": true}`` only once the commit is known to have
landed. A failed or unanswered commit is settled by reading the group's committed offset back
(retried until the coordinator answers): the metadata tells this member's commit from
another's. Exactly ``offset + 1`` with our metadata: processed. Below: not processed, seek back
to it. Another member's ``offset + 1``: not ours. Beyond ``offset + 1``: whether ours landed
first cannot be told, written ``"committed": "unknown"`` (the check counts it at most once).
Each assignment is written ``{"event": "assigned", "partitions", "committed"}`` with the
committed offsets read then, and consumption starts exactly there. Lines carry ``member`` and
``t0``/``t`` (wall clock before / after the call) so the check can order them across copies.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

from bench.harness.nemesis.client_run import (
    ClientRun,
    kafka_error,
    read_committed_offsets,
    run_member,
)


class GroupMember:
    def __init__(self, run: ClientRun) -> None:
        self.run = run
        self.topic: str = run.args.topic
        self.protocol: str = run.args.protocol
        config = {
            **run.config(),
            "group.id": run.args.group,
            "group.protocol": self.protocol,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_uncommitted",
            "fetch.wait.max.ms": 100,
        }
        if self.protocol == "classic":  # the consumer protocol takes these from the broker
            config.update({"session.timeout.ms": 8_000, "heartbeat.interval.ms": 1_000,
                           "max.poll.interval.ms": 60_000,
                           "partition.assignment.strategy": "range"})  # fmt: skip
        self.consumer = Consumer(config)
        self.consumer.subscribe([self.topic], on_assign=self._on_assign,
                                on_revoke=self._on_revoke, on_lost=self._on_revoke)  # fmt: skip

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        ids = sorted(tp.partition for tp in partitions)
        t0 = time.time()
        committed = read_committed_offsets(self.run, consumer, self.topic, ids) if ids else {}
        if committed is not None:
            self.run.write(event="assigned", member=self.run.instance, partitions=ids,
                           committed={p: c for p, (c, _m) in committed.items()},
                           t0=t0, t=time.time())  # fmt: skip
            for tp in partitions:  # start exactly at what was read (none yet: the beginning)
                offset = committed[tp.partition][0]
                tp.offset = offset if offset >= 0 else OFFSET_BEGINNING
        if self.protocol == "classic":  # eager ("range"): the whole assignment at once
            consumer.assign(partitions)
        else:
            consumer.incremental_assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        ids = sorted(tp.partition for tp in partitions)
        self.run.write(event="revoked", member=self.run.instance, partitions=ids, t=time.time())

    def process(self, partition: int, offset: int, value: str) -> None:
        metadata = f"{self.run.instance}:{offset}"
        record = {"p": partition, "o": offset, "v": value, "member": self.run.instance}
        t0 = time.time()
        try:
            answer = self.consumer.commit(
                offsets=[TopicPartition(self.topic, partition, offset + 1, metadata)],
                asynchronous=False,
            )
            error: object = answer[0].error if answer else "no answer"
        except KafkaException as exc:
            error = kafka_error(exc) or exc
        if error is None:
            self.run.write(**record, committed=True, t0=t0, t=time.time())
            return
        self.run.error("commit", error, at=[partition, offset])
        read = read_committed_offsets(self.run, self.consumer, self.topic, [partition])
        if read is None:  # stopping before the coordinator answered
            self.run.write(**record, committed="unknown", t0=t0, t=time.time())
            return
        committed, their_metadata = read[partition]
        if committed == offset + 1 and their_metadata == metadata:
            self.run.write(**record, committed=True, t0=t0, t=time.time())
        elif committed > offset + 1:
            self.run.write(**record, committed="unknown", t0=t0, t=time.time(),
                           read=committed)  # fmt: skip
        elif committed < offset + 1:
            self._seek(partition, committed)

    def _seek(self, partition: int, offset: int) -> None:
        target = offset if offset >= 0 else OFFSET_BEGINNING
        try:
            self.consumer.seek(TopicPartition(self.topic, partition, target))
        except KafkaException as exc:  # no longer assigned: its next owner starts there
            self.run.log(f"seek {partition}@{target}: {exc}")

    def loop(self) -> None:
        while not self.run.stopping.is_set():
            try:
                message = self.consumer.poll(0.5)
            except KafkaException as exc:
                self.run.log(f"poll: {exc}")
                continue
            if message is None:
                continue
            if message.error() is not None:
                self.run.log(f"poll: {message.error()}")
                continue
            self.process(message.partition(), message.offset(), message.value().decode())

    def close(self) -> None:
        try:
            self.consumer.close()
        except (KafkaException, RuntimeError) as exc:
            self.run.log(f"close: {exc}")


def _extra(parser: Any) -> None:
    parser.add_argument("--group", required=True)
    parser.add_argument("--protocol", default="classic", choices=("classic", "consumer"))


def main(argv: list[str] | None = None) -> int:
    run = ClientRun("group_consumer", argv, _extra, __doc__.splitlines()[0])
    return run_member(run, GroupMember(run))


if __name__ == "__main__":
    sys.exit(main())
