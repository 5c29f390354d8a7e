"""aiokafka driver: each operation runs its own event loop (``asyncio.run``) with fresh
clients. aiokafka's admin client returns raw responses, so :func:`_check` raises on any
non-zero ``error_code`` in them, naming the Kafka error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from compat_lib.driver_helpers import (
    KAFKA_PYTHON_PRODUCER_KEYS,
    TWO_MEMBERS_SETTLE_S,
    assignments_settled,
    got_from_consumer_record,
    kafka_python_group_settings,
    producer_settings,
    with_client_log,
)
from compat_lib.family import (
    ALL_SCENARIOS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REQUEST_TIMEOUT_MS,
    TIMEOUT_S,
    Family,
)
from compat_lib.model import Got, GroupInfo, Rec, Start, describe_exception


class BrokerError(Exception):
    """A non-zero error code inside an admin response."""


def _check(response: Any) -> Any:
    obj = response.to_object() if hasattr(response, "to_object") else response
    _walk(obj)
    return obj


def _walk(obj: Any) -> None:
    if isinstance(obj, dict):
        code = obj.get("error_code")
        if code:
            from aiokafka.errors import for_code

            name = for_code(code).__name__
            raise BrokerError(f"{name} (error {code}): {obj.get('error_message')}")
        for value in obj.values():
            _walk(value)
    elif isinstance(obj, list | tuple):
        for value in obj:
            _walk(value)


def _run(coro_fn, *args):
    async def bounded():
        try:
            return await asyncio.wait_for(coro_fn(*args), TIMEOUT_S + 5)
        except TimeoutError:
            raise TimeoutError(f"no result within {TIMEOUT_S + 5:.0f}s (cancelled)") from None

    return asyncio.run(bounded())


@asynccontextmanager
async def _started(client: Any) -> AsyncIterator[Any]:
    """A started aiokafka producer or consumer, stopped on the way out (not if start fails)."""
    await client.start()
    try:
        yield client
    finally:
        await client.stop()


class AiokafkaFamily(Family):
    name = "aiokafka"
    scenarios = ALL_SCENARIOS - {"spark_pattern"}
    module = "aiokafka"
    install_hint = "pip install aiokafka"

    def version(self) -> str:
        import aiokafka

        return f"aiokafka {aiokafka.__version__}"

    def _common(self) -> dict:
        common = {"bootstrap_servers": self.bootstrap, "request_timeout_ms": REQUEST_TIMEOUT_MS}
        if self.security is not None:
            common |= self.security.aiokafka()
        return common

    async def _with_admin(self, fn):
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(**self._common())
        await admin.start()
        try:
            return await fn(admin)
        finally:
            await admin.close()

    def _admin(self, fn):
        return _run(self._with_admin, fn)

    def partitions_for(self, topic: str) -> int:
        from aiokafka import AIOKafkaProducer

        async def go():
            async with _started(AIOKafkaProducer(**self._common())) as prod:
                return len(await prod.partitions_for(topic) or ())

        return _run(go)

    def list_topics(self) -> set[str]:
        return set(self._admin(lambda a: a.list_topics()))

    def check_login(self) -> set[str]:
        with with_client_log("aiokafka"):
            return self.list_topics()

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None) -> None:
        from aiokafka.admin import NewTopic

        new = NewTopic(topic, partitions, 1, topic_configs=configs or {})

        async def go(admin):
            _check(await admin.create_topics([new]))

        self._admin(go)

    def delete_topic(self, topic: str) -> None:
        async def go(admin):
            _check(await admin.delete_topics([topic]))

        self._admin(go)

    def create_partitions(self, topic: str, total: int) -> None:
        from aiokafka.admin import NewPartitions

        async def go(admin):
            _check(await admin.create_partitions({topic: NewPartitions(total)}))

        self._admin(go)

    def describe_partition_count(self, topic: str) -> int:
        async def go(admin):
            (desc,) = await admin.describe_topics([topic])
            _walk(desc)
            return len(desc["partitions"])

        return self._admin(go)

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        from aiokafka import AIOKafkaProducer

        conf = self._common() | {"compression_type": None if codec == "none" else codec}
        conf |= producer_settings(config, KAFKA_PYTHON_PRODUCER_KEYS)

        async def go():
            async with _started(AIOKafkaProducer(**conf)) as prod:
                futures = [
                    await prod.send(
                        topic,
                        value=r.value,
                        key=r.key,
                        partition=r.partition,
                        headers=list(r.headers) or None,
                    )
                    for r in recs
                ]
                metas = [await f for f in futures]
            return [(m.partition, m.offset) for m in metas]

        return _run(go)

    @staticmethod
    async def _position(consumer, tp, start: Start) -> None:
        if start.kind == "earliest":
            await consumer.seek_to_beginning(tp)
        elif start.kind == "offset":
            consumer.seek(tp, start.value)
        elif start.kind == "tail":
            await consumer.seek_to_end(tp)
            consumer.seek(tp, max(0, await consumer.position(tp) - start.value))
        elif start.kind == "timestamp":
            found = (await consumer.offsets_for_times({tp: start.value}))[tp]
            if found is None:
                await consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, found.offset)

    @staticmethod
    async def _poll(consumer, count: int) -> list[Got]:
        got: list[Got] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=count - len(got))
            for records in batch.values():
                got.extend(got_from_consumer_record(m) for m in records)
        return got

    def _consumer(self, **extra):
        from aiokafka import AIOKafkaConsumer

        conf = self._common() | {"enable_auto_commit": False, "auto_offset_reset": "earliest"}
        return AIOKafkaConsumer(**(conf | extra))

    def consume(
        self,
        topic: str,
        partition: int,
        start: Start,
        count: int,
        isolation: str = READ_UNCOMMITTED,
    ) -> list[Got]:
        from aiokafka import TopicPartition

        async def go():
            tp = TopicPartition(topic, partition)
            async with _started(self._consumer(isolation_level=isolation)) as consumer:
                consumer.assign([tp])
                await self._position(consumer, tp, start)
                return await self._poll(consumer, count)

        return _run(go)

    def seek_reread(
        self, topic: str, partition: int, first: int, seek_to: int, second: int
    ) -> tuple[list[Got], list[Got]]:
        from aiokafka import TopicPartition

        async def go():
            tp = TopicPartition(topic, partition)
            async with _started(self._consumer()) as consumer:
                consumer.assign([tp])
                await consumer.seek_to_beginning(tp)
                one = await self._poll(consumer, first)
                consumer.seek(tp, seek_to)
                return one, await self._poll(consumer, second)

        return _run(go)

    def list_offset(self, topic: str, partition: int, spec: str | int) -> int:
        """Through the consumer (aiokafka's admin client has no list_offsets)."""
        from aiokafka import TopicPartition

        async def go():
            tp = TopicPartition(topic, partition)
            async with _started(self._consumer()) as consumer:
                if spec == "earliest":
                    return (await consumer.beginning_offsets([tp]))[tp]
                if spec == "latest":
                    return (await consumer.end_offsets([tp]))[tp]
                found = (await consumer.offsets_for_times({tp: spec}))[tp]
                return -1 if found is None else found.offset

        return _run(go)

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        from aiokafka import TopicPartition

        async def go():
            async with _started(self._consumer(**kafka_python_group_settings(group))) as consumer:
                consumer.subscribe([topic])
                got = await self._poll(consumer, count)
                if got:
                    last = got[-1]
                    await consumer.commit({TopicPartition(topic, last.partition): last.offset + 1})
                return got

        return _run(go)

    def group_two_members(
        self, group: str, topic: str, total: int
    ) -> tuple[list[int], list[int], set[tuple[int, int]]]:
        async def go():
            members = [self._consumer(**kafka_python_group_settings(group)) for _ in range(2)]
            try:
                for member in members:
                    await member.start()
                    member.subscribe([topic])
                seen: set[tuple[int, int]] = set()
                deadline = time.monotonic() + TWO_MEMBERS_SETTLE_S
                while time.monotonic() < deadline:
                    for member in members:
                        batch = await member.getmany(timeout_ms=200)
                        for records in batch.values():
                            seen.update((m.partition, m.offset) for m in records)
                    if len(seen) >= total and assignments_settled(
                        m.assignment() for m in members
                    ):
                        break
                one, two = (sorted(tp.partition for tp in m.assignment()) for m in members)
                return one, two, seen
            finally:
                for member in members:
                    await member.stop()

        return _run(go)

    def list_groups(self) -> set[str]:
        return {g[0] for g in self._admin(lambda a: a.list_consumer_groups())}

    def describe_group(self, group: str) -> GroupInfo:
        async def go(admin):
            (resp,) = await admin.describe_consumer_groups([group])
            obj = _check(resp)
            (desc,) = obj["groups"]
            return GroupInfo(
                group_id=group,
                state=desc["state"],
                protocol_type=desc["protocol_type"],
                members=len(desc["members"]),
            )

        return self._admin(go)

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go(admin):
            out: dict[str, str | None] = {}
            res = ConfigResource(ConfigResourceType.TOPIC, topic)
            for resp in await admin.describe_configs([res]):
                for resource in _check(resp)["resources"]:
                    for entry in resource["config_entries"]:
                        out[entry["config_names"]] = entry["config_value"]
            return out

        return self._admin(go)

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        """AlterConfigs (non-incremental: aiokafka has no IncrementalAlterConfigs)."""
        from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

        async def go(admin):
            res = ConfigResource(ConfigResourceType.TOPIC, topic, dict(configs))
            for resp in await admin.alter_configs([res]):
                _check(resp)

        self._admin(go)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        from aiokafka import TopicPartition
        from aiokafka.admin import RecordsToDelete

        async def go(admin):
            tp = TopicPartition(topic, partition)
            return (await admin.delete_records({tp: RecordsToDelete(before)}))[tp]

        return self._admin(go)

    # ---- transactions -------------------------------------------------------------------
    def _txn_producer(self, transactional_id: str):
        from aiokafka import AIOKafkaProducer

        return AIOKafkaProducer(**self._common(), transactional_id=transactional_id)

    @staticmethod
    async def _send_acked(prod, topic: str, recs: list[Rec]) -> None:
        futures = [
            await prod.send(
                topic,
                value=r.value,
                key=r.key,
                partition=r.partition,
                headers=list(r.headers) or None,
            )
            for r in recs
        ]
        for f in futures:
            await f

    def txn_produce(
        self, topic: str, transactional_id: str, txns: list[tuple[list[Rec], bool]]
    ) -> None:
        async def go():
            async with _started(self._txn_producer(transactional_id)) as prod:
                for recs, commit in txns:
                    await prod.begin_transaction()
                    await self._send_acked(prod, topic, recs)
                    if commit:
                        await prod.commit_transaction()
                    else:
                        await prod.abort_transaction()

        _run(go)

    def txn_copy(
        self,
        group: str,
        source: str,
        dest: str,
        transactional_id: str,
        count: int,
        commit: bool,
    ) -> list[Got]:
        from aiokafka import TopicPartition

        async def go():
            tp = TopicPartition(source, 0)
            consumer = self._consumer(group_id=group, isolation_level=READ_COMMITTED)
            async with (
                _started(consumer),
                _started(self._txn_producer(transactional_id)) as prod,
            ):
                consumer.assign([tp])
                read = (await self._poll(consumer, count))[:count]
                await prod.begin_transaction()
                copies = [Rec(g.key, b"copied:" + (g.value or b""), partition=0) for g in read]
                await self._send_acked(prod, dest, copies)
                if read:
                    # aiokafka sends TxnOffsetCommit v0: the group id only (no generation).
                    await prod.send_offsets_to_transaction({tp: read[-1].offset + 1}, group)
                if commit:
                    await prod.commit_transaction()
                else:
                    await prod.abort_transaction()
                return read

        return _run(go)

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)

        async def go(admin):
            found = await admin.list_consumer_group_offsets(group, partitions=[tp])
            meta = found.get(tp)
            return None if meta is None or meta.offset < 0 else meta.offset

        return self._admin(go)

    def txn_fencing(
        self, topic: str, transactional_id: str, first: Rec, late: Rec | None, successor: Rec
    ) -> tuple[str, str]:
        async def go():
            zombie = self._txn_producer(transactional_id)
            await zombie.start()
            try:
                await zombie.begin_transaction()
                await self._send_acked(zombie, topic, [first])
                async with _started(self._txn_producer(transactional_id)) as heir:
                    await heir.begin_transaction()
                    await self._send_acked(heir, topic, [successor])
                    await heir.commit_transaction()
                send_error = commit_error = ""
                try:
                    if late is not None:
                        sending = self._send_acked(zombie, topic, [late])
                        await asyncio.wait_for(sending, TIMEOUT_S / 3)
                except Exception as exc:
                    send_error = describe_exception(exc)
                try:
                    await asyncio.wait_for(zombie.commit_transaction(), TIMEOUT_S / 3)
                except Exception as exc:
                    commit_error = describe_exception(exc)
                return send_error, commit_error
            finally:
                await zombie.stop()

        return _run(go)
