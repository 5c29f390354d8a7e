"""Transactional consume-transform-produce, exactly once, for the nemesis schedules.

Run as ``python -m bench.harness.nemesis.txn_transform --bootstrap B --topic T --out PATH
--group G --out-topic T2 --transactional-id X [--abort-every N] [--max-batch M]``.

Reads ``T`` read_committed in group ``G``; per consumed batch (at most M records, default
100) one transaction produces
``"<v>|t"`` (key: the input value) to ``T2`` and commits the batch's offsets with
``send_offsets_to_transaction``. Every N-th transaction (default 5, 0: never) produces
``"ABORTED|<v>"`` instead, waits until those records are written, aborts, and rewinds the
consumer to the batch's first offsets, so the input comes back in a later transaction.
An abortable error aborts and rewinds to the group's committed offsets; a fatal one (fenced)
recreates producer and consumer. Lines: ``{"event": "commit", "n", "records", "offsets"}``,
``{"event": "abort", "n", "planned", "records"}``, ``{"event": "error", ...}``; ``n`` counts
the commits (aborts) of this process so far.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from bench.harness.nemesis.client_run import (
    CALL_TIMEOUT_S,
    ClientRun,
    kafka_error,
    read_committed_offsets,
)

TXN_TIMEOUT_MS = 10_000  # an open transaction of a cut client blocks the LSO this long


class _Restart(Exception):
    """A fatal client error: producer and consumer are made anew."""


class Transformer:
    def __init__(self, run: ClientRun) -> None:
        self.run = run
        self.args = run.args
        self.commits = 0
        self.aborts = 0
        self.transactions = 0
        self.producer: Producer | None = None
        self.consumer: Consumer | None = None

    # --- clients ---------------------------------------------------------------

    def _start(self) -> None:
        base = self.run.config()
        self.consumer = Consumer({
            **base, "group.id": self.args.group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "isolation.level": "read_committed",
            "session.timeout.ms": 8_000, "heartbeat.interval.ms": 1_000,
            "max.poll.interval.ms": 60_000, "fetch.wait.max.ms": 100,
        })  # fmt: skip
        self.consumer.subscribe([self.args.topic])
        self.producer = Producer({
            **base, "transactional.id": self.args.transactional_id,
            "enable.idempotence": True, "acks": "all", "linger.ms": 5,
            "transaction.timeout.ms": TXN_TIMEOUT_MS, "message.timeout.ms": TXN_TIMEOUT_MS,
            "request.timeout.ms": 5_000,
        })  # fmt: skip
        while not self.run.stopping.is_set():
            try:
                self.producer.init_transactions(CALL_TIMEOUT_S)
                return
            except KafkaException as exc:
                error = kafka_error(exc)
                self.run.log(f"init_transactions: {exc}")
                if error is not None and error.fatal():
                    raise _Restart(str(exc)) from exc
                time.sleep(0.2)

    def _stop_clients(self) -> None:
        if self.consumer is not None:
            try:
                self.consumer.close()
            except (KafkaException, RuntimeError) as exc:
                self.run.log(f"consumer close: {exc}")
        if self.producer is not None:
            try:
                self.producer.flush(1)
            except KafkaException as exc:  # a fatal producer raises its error here too
                self.run.log(f"producer flush: {exc}")
        self.consumer = self.producer = None

    # --- one batch -------------------------------------------------------------

    def _batch(self) -> list[Any]:
        assert self.consumer is not None
        try:
            messages = self.consumer.consume(self.args.max_batch, 0.5)
        except KafkaException as exc:
            self.run.log(f"consume: {exc}")
            return []
        good = []
        for message in messages:
            if message.error() is not None:
                self.run.log(f"consume: {message.error()}")
            else:
                good.append(message)
        return good

    def _transact(self, messages: list[Any]) -> None:
        assert self.producer is not None and self.consumer is not None
        starts: dict[int, int] = {}
        ends: dict[int, int] = {}
        for m in messages:
            starts.setdefault(m.partition(), m.offset())
            ends[m.partition()] = m.offset() + 1
        self.transactions += 1
        planned = self.args.abort_every > 0 and self.transactions % self.args.abort_every == 0
        self.producer.begin_transaction()
        for m in messages:
            value = m.value().decode()
            out = f"ABORTED|{value}" if planned else f"{value}|t"
            self._produce(m.value(), out.encode())
        if planned:
            self.producer.flush(CALL_TIMEOUT_S)  # the aborted records reach the log
            self._abort()
            self.aborts += 1
            self.run.write(event="abort", n=self.aborts, planned=True, records=len(messages))
            self._seek(starts)
            return
        offsets = [TopicPartition(self.args.topic, p, o) for p, o in sorted(ends.items())]
        self._retried(
            "send_offsets_to_transaction",
            lambda: self.producer.send_offsets_to_transaction(  # type: ignore[union-attr]
                offsets,
                self.consumer.consumer_group_metadata(),
                CALL_TIMEOUT_S,  # type: ignore[union-attr]
            ),
        )
        self._commit()
        self.commits += 1
        self.run.write(event="commit", n=self.commits, records=len(messages),
                       offsets={p: o for p, o in sorted(ends.items())})  # fmt: skip

    def _produce(self, key: bytes, value: bytes) -> None:
        assert self.producer is not None
        while True:
            try:
                self.producer.produce(self.args.out_topic, value=value, key=key)
                return
            except BufferError:
                self.producer.poll(0.1)

    def _retried(self, what: str, call: Any) -> None:
        """``call()`` again while its error is retriable, as librdkafka documents for the
        transactional calls (the outcome of a retriable failure is unknown: call again);
        abortable and fatal errors go to the caller."""
        while True:
            try:
                call()
                return
            except KafkaException as exc:
                error = kafka_error(exc)
                if error is None or not error.retriable() or self.run.stopping.is_set():
                    raise
                self.run.log(f"{what} (retried): {exc}")

    def _commit(self) -> None:
        assert self.producer is not None
        self._retried("commit_transaction",
                      lambda: self.producer.commit_transaction(CALL_TIMEOUT_S))  # type: ignore[union-attr]  # fmt: skip

    def _abort(self) -> None:
        assert self.producer is not None
        self._retried("abort_transaction",
                      lambda: self.producer.abort_transaction(CALL_TIMEOUT_S))  # type: ignore[union-attr]  # fmt: skip

    def _seek(self, offsets: dict[int, int]) -> None:
        assert self.consumer is not None
        for partition, offset in offsets.items():
            target = offset if offset >= 0 else OFFSET_BEGINNING
            try:
                self.consumer.seek(TopicPartition(self.args.topic, partition, target))
            except KafkaException as exc:  # revoked meanwhile: its next owner starts there
                self.run.log(f"seek {partition}@{target}: {exc}")

    def _rewind_to_committed(self) -> None:
        assert self.consumer is not None
        try:
            assigned = [tp.partition for tp in self.consumer.assignment()]
        except KafkaException:
            assigned = []
        if not assigned:
            return
        read = read_committed_offsets(self.run, self.consumer, self.args.topic, assigned)
        if read is not None:
            self._seek({p: offset for p, (offset, _meta) in read.items()})

    def _on_error(self, exc: KafkaException) -> None:
        error = kafka_error(exc)
        self.run.error("transaction", exc, fatal=bool(error and error.fatal()),
                       abortable=bool(error and error.txn_requires_abort()))  # fmt: skip
        if error is None or error.fatal():
            raise _Restart(str(exc))
        try:
            self._abort()
        except KafkaException as again:
            raise _Restart(str(again)) from again
        self.aborts += 1
        self.run.write(event="abort", n=self.aborts, planned=False, error=str(exc))
        self._rewind_to_committed()

    # --- the loop --------------------------------------------------------------

    def loop(self) -> None:
        while not self.run.stopping.is_set():
            try:
                self._start()
                while not self.run.stopping.is_set():
                    messages = self._batch()
                    if not messages:
                        continue
                    try:
                        self._transact(messages)
                    except KafkaException as exc:
                        self._on_error(exc)
            except _Restart as exc:
                self.run.write(event="restart", error=str(exc))
                self._stop_clients()
                time.sleep(0.5)
        self._stop_clients()


def _extra(parser: Any) -> None:
    parser.add_argument("--group", required=True)
    parser.add_argument("--out-topic", required=True)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--abort-every", type=int, default=5)
    parser.add_argument("--max-batch", type=int, default=100, help="records per transaction")


def main(argv: list[str] | None = None) -> int:
    run = ClientRun("txn_transform", argv, _extra, __doc__.splitlines()[0])
    try:
        Transformer(run).loop()
    finally:
        run.write(event="stopped", member=run.instance)
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
