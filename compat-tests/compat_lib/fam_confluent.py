"""confluent-kafka (librdkafka) driver. Admin futures, delivery reports and consumer messages
are checked for errors; librdkafka's error name and code end up in the failure line."""

from __future__ import annotations

import time
from functools import partial

from compat_lib.driver_helpers import (
    LIBRDKAFKA_PRODUCER_KEYS,
    poll_until,
    producer_settings,
    two_members,
)
from compat_lib.family import (
    ALL_SCENARIOS,
    HEARTBEAT_MS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REQUEST_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    Family,
)
from compat_lib.model import Got, GroupInfo, Rec, Start, describe_exception

_OFFSET_TAIL_BASE = -2000  # librdkafka's RD_KAFKA_OFFSET_TAIL(n) == -2000 - n


class DeliveryError(Exception):
    """A delivery report carried an error."""


def _kafka_error(err) -> str:
    return f"{err.name()} (code {err.code()}): {err.str()}"


def _results(admin, method: str, *args, **kwargs) -> dict:
    """Call ``admin.<method>`` and wait for its futures. ``admin`` must stay referenced until
    they resolve: librdkafka fails pending requests with _DESTROY when the handle is freed."""
    futures = getattr(admin, method)(*args, **kwargs)
    return {key: fut.result(timeout=TIMEOUT_S) for key, fut in futures.items()}


def _group_settings(group: str) -> dict:
    """librdkafka consumer settings that join ``group`` fast."""
    return {
        "group.id": group,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_MS,
    }


def _checked(messages: list) -> list:
    """``messages`` from ``Consumer.consume``; raises on the first one carrying an error."""
    for msg in messages:
        if msg.error() is not None:
            raise DeliveryError(_kafka_error(msg.error()))
    return messages


def _camel(state_name: str) -> str:
    return "".join(part.capitalize() for part in state_name.split("_"))


class ConfluentFamily(Family):
    name = "confluent-kafka"
    scenarios = ALL_SCENARIOS - {"spark_pattern"}
    module = "confluent_kafka"
    install_hint = "pip install confluent-kafka"

    def version(self) -> str:
        import confluent_kafka

        return (
            f"confluent-kafka {confluent_kafka.__version__} "
            f"(librdkafka {confluent_kafka.libversion()[0]})"
        )

    def _common(self) -> dict:
        common = {
            "bootstrap.servers": self.bootstrap,
            "socket.timeout.ms": REQUEST_TIMEOUT_MS,
            "socket.connection.setup.timeout.ms": REQUEST_TIMEOUT_MS,
        }
        if self.security is not None:
            common |= self.security.librdkafka()
        return common

    def _admin(self):
        from confluent_kafka.admin import AdminClient

        return AdminClient(self._common())

    def _consumer(self, **extra):
        from confluent_kafka import Consumer

        conf = self._common() | {
            "group.id": "compat-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        return Consumer(conf | extra)

    def partitions_for(self, topic: str) -> int:
        from confluent_kafka import Producer

        prod = Producer(self._common())
        meta = prod.list_topics(topic, timeout=TIMEOUT_S)
        entry = meta.topics[topic]
        if entry.error is not None:
            raise DeliveryError(_kafka_error(entry.error))
        return len(entry.partitions)

    def list_topics(self) -> set[str]:
        return set(self._admin().list_topics(timeout=TIMEOUT_S).topics)

    def check_login(self) -> set[str]:
        """librdkafka reports a refused login or handshake only through the error callback
        (``_AUTHENTICATION`` with the broker's message, ``_SSL``) and keeps retrying; stop at
        the first such error."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient

        refused = {KafkaError._AUTHENTICATION, KafkaError._SSL}
        errors: list = []
        admin = AdminClient(self._common() | {"error_cb": errors.append})
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                return set(admin.list_topics(timeout=1).topics)
            except KafkaException as exc:
                admin.poll(0.2)  # serves error_cb
                if any(e.code() in refused for e in errors) or time.monotonic() > deadline:
                    seen = "; ".join(dict.fromkeys(_kafka_error(e) for e in errors))
                    raise DeliveryError(f"{_kafka_error(exc.args[0])}; errors: {seen}") from None

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None) -> None:
        from confluent_kafka.admin import NewTopic

        new = NewTopic(topic, num_partitions=partitions, replication_factor=1, config=configs or {})
        _results(self._admin(), "create_topics", [new], request_timeout=TIMEOUT_S)

    def delete_topic(self, topic: str) -> None:
        _results(self._admin(), "delete_topics", [topic], request_timeout=TIMEOUT_S)

    def create_partitions(self, topic: str, total: int) -> None:
        from confluent_kafka.admin import NewPartitions

        _results(self._admin(), "create_partitions", [NewPartitions(topic, total)])

    def describe_partition_count(self, topic: str) -> int:
        from confluent_kafka import TopicCollection

        (desc,) = _results(self._admin(), "describe_topics", TopicCollection([topic])).values()
        return len(desc.partitions)

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        from confluent_kafka import Producer

        conf = self._common() | {
            "compression.type": codec,
            "message.timeout.ms": int(TIMEOUT_S * 1000) - 2000,
        }
        conf |= producer_settings(config, LIBRDKAFKA_PRODUCER_KEYS)
        prod = Producer(conf)
        acks: list = [None] * len(recs)

        def report(i):
            def on_delivery(err, msg):
                acks[i] = err if err is not None else (msg.partition(), msg.offset())

            return on_delivery

        for i, r in enumerate(recs):
            kwargs = {"partition": r.partition} if r.partition is not None else {}
            prod.produce(
                topic,
                value=r.value,
                key=r.key,
                headers=list(r.headers) or None,
                on_delivery=report(i),
                **kwargs,
            )
        left = prod.flush(TIMEOUT_S)
        for ack in acks:
            if ack is not None and not isinstance(ack, tuple):
                raise DeliveryError(_kafka_error(ack))
        if left or None in acks:
            raise DeliveryError(f"{left} records still undelivered after {TIMEOUT_S:.0f}s")
        return acks

    @staticmethod
    def _poll(consumer, count: int) -> list[Got]:
        def fetch(wanted: int) -> list[Got]:
            messages = _checked(consumer.consume(num_messages=wanted, timeout=0.5))
            return [_got(msg) for msg in messages]

        return poll_until(count, fetch)

    def _start_offset(self, consumer, topic: str, partition: int, start: Start) -> int:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        if start.kind == "earliest":
            return OFFSET_BEGINNING
        if start.kind == "offset":
            return start.value
        if start.kind == "tail":
            return _OFFSET_TAIL_BASE - start.value
        (found,) = consumer.offsets_for_times(
            [TopicPartition(topic, partition, start.value)], timeout=TIMEOUT_S
        )
        if found.error is not None:
            raise DeliveryError(_kafka_error(found.error))
        return found.offset

    def consume(
        self,
        topic: str,
        partition: int,
        start: Start,
        count: int,
        isolation: str = READ_UNCOMMITTED,
    ) -> list[Got]:
        from confluent_kafka import TopicPartition

        consumer = self._consumer(**{"isolation.level": isolation})
        try:
            offset = self._start_offset(consumer, topic, partition, start)
            consumer.assign([TopicPartition(topic, partition, offset)])
            return self._poll(consumer, count)
        finally:
            consumer.close()

    def seek_reread(
        self, topic: str, partition: int, first: int, seek_to: int, second: int
    ) -> tuple[list[Got], list[Got]]:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        consumer = self._consumer()
        try:
            consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING)])
            one = self._poll(consumer, first)
            consumer.seek(TopicPartition(topic, partition, seek_to))
            return one, self._poll(consumer, second)
        finally:
            consumer.close()

    def list_offset(self, topic: str, partition: int, spec: str | int) -> int:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if spec == "earliest":
            wanted = OffsetSpec.earliest()
        elif spec == "latest":
            wanted = OffsetSpec.latest()
        else:
            wanted = OffsetSpec.for_timestamp(spec)
        tp = TopicPartition(topic, partition)
        (info,) = _results(self._admin(), "list_offsets", {tp: wanted}).values()
        return info.offset

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        from confluent_kafka import TopicPartition

        consumer = self._consumer(**_group_settings(group))
        try:
            consumer.subscribe([topic])
            got = self._poll(consumer, count)
            if got:
                last = got[-1]
                consumer.commit(
                    offsets=[TopicPartition(topic, last.partition, last.offset + 1)],
                    asynchronous=False,
                )
            return got
        finally:
            consumer.close()

    def group_two_members(
        self, group: str, topic: str, total: int
    ) -> tuple[list[int], list[int], set[tuple[int, int]]]:

        def poll_once(member) -> list[tuple[int, int]]:
            messages = _checked(member.consume(num_messages=100, timeout=0.2))
            return [(msg.partition(), msg.offset()) for msg in messages]

        new_member = partial(self._consumer, **_group_settings(group))
        return two_members(new_member, topic, total, poll_once)

    def list_groups(self) -> set[str]:
        admin = self._admin()
        listing = admin.list_consumer_groups(request_timeout=TIMEOUT_S).result(timeout=TIMEOUT_S)
        if listing.errors:
            raise DeliveryError("; ".join(str(e) for e in listing.errors))
        return {g.group_id for g in listing.valid}

    def describe_group(self, group: str) -> GroupInfo:
        (desc,) = _results(self._admin(), "describe_consumer_groups", [group]).values()
        return GroupInfo(
            group_id=group,
            state=_camel(desc.state.name),
            # librdkafka exposes protocol type only as "is this a simple (no-protocol) group".
            protocol_type="" if desc.is_simple_consumer_group else "consumer",
            members=len(desc.members),
        )

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        res = ConfigResource(ResourceType.TOPIC, topic)
        (entries,) = _results(self._admin(), "describe_configs", [res]).values()
        return {name: entry.value for name, entry in entries.items()}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        entries = [
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in configs.items()
        ]
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        _results(self._admin(), "incremental_alter_configs", [res])

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(topic, partition, before)
        (deleted,) = _results(self._admin(), "delete_records", [tp]).values()
        return deleted.low_watermark

    # ---- transactions -------------------------------------------------------------------
    def _txn_producer(self, transactional_id: str):
        from confluent_kafka import Producer

        prod = Producer(
            self._common()
            | {
                "transactional.id": transactional_id,
                "message.timeout.ms": int(TIMEOUT_S * 1000) - 2000,
            }
        )
        prod.init_transactions(TIMEOUT_S)
        return prod

    @staticmethod
    def _send_acked(prod, topic: str, recs: list[Rec]) -> None:
        """Send ``recs`` and wait for every delivery report (raising on an error one)."""
        acks: list = []
        for r in recs:
            kwargs = {"partition": r.partition} if r.partition is not None else {}
            prod.produce(
                topic,
                value=r.value,
                key=r.key,
                headers=list(r.headers) or None,
                on_delivery=lambda err, msg: acks.append(err),
                **kwargs,
            )
        left = prod.flush(TIMEOUT_S)
        for err in acks:
            if err is not None:
                raise DeliveryError(_kafka_error(err))
        if left or len(acks) < len(recs):
            raise DeliveryError(f"{left} records still undelivered after {TIMEOUT_S:.0f}s")

    def txn_produce(
        self, topic: str, transactional_id: str, txns: list[tuple[list[Rec], bool]]
    ) -> None:
        prod = self._txn_producer(transactional_id)
        for recs, commit in txns:
            prod.begin_transaction()
            self._send_acked(prod, topic, recs)
            if commit:
                prod.commit_transaction(TIMEOUT_S)
            else:
                prod.abort_transaction(TIMEOUT_S)

    def txn_copy(
        self,
        group: str,
        source: str,
        dest: str,
        transactional_id: str,
        count: int,
        commit: bool,
    ) -> list[Got]:
        from confluent_kafka import TopicPartition

        consumer = self._consumer(**{"group.id": group, "isolation.level": READ_COMMITTED})
        try:
            prod = self._txn_producer(transactional_id)
            consumer.assign([TopicPartition(source, 0)])
            read = self._poll(consumer, count)[:count]
            prod.begin_transaction()
            copies = [Rec(g.key, b"copied:" + (g.value or b""), partition=0) for g in read]
            self._send_acked(prod, dest, copies)
            if read:
                offsets = [TopicPartition(source, 0, read[-1].offset + 1)]
                prod.send_offsets_to_transaction(
                    offsets, consumer.consumer_group_metadata(), TIMEOUT_S
                )
            if commit:
                prod.commit_transaction(TIMEOUT_S)
            else:
                prod.abort_transaction(TIMEOUT_S)
            return read
        finally:
            consumer.close()

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])
        (result,) = _results(self._admin(), "list_consumer_group_offsets", [request]).values()
        (tp,) = result.topic_partitions
        if tp.error is not None:
            raise DeliveryError(_kafka_error(tp.error))
        return None if tp.offset < 0 else tp.offset

    def txn_fencing(
        self, topic: str, transactional_id: str, first: Rec, late: Rec | None, successor: Rec
    ) -> tuple[str, str]:
        zombie = self._txn_producer(transactional_id)
        zombie.begin_transaction()
        self._send_acked(zombie, topic, [first])
        heir = self._txn_producer(transactional_id)
        heir.begin_transaction()
        self._send_acked(heir, topic, [successor])
        heir.commit_transaction(TIMEOUT_S)
        send_error = commit_error = ""
        try:
            if late is not None:
                self._send_acked(zombie, topic, [late])
        except Exception as exc:
            # confluent-kafka 2.16.1 raises SystemError out of flush() here, caused by the
            # fatal _FENCED KafkaException pending while it runs the delivery callback.
            cause = exc.__cause__ if isinstance(exc, SystemError) and exc.__cause__ else exc
            send_error = describe_exception(cause)
        try:
            zombie.commit_transaction(TIMEOUT_S)
        except Exception as exc:
            commit_error = describe_exception(exc)
        return send_error, commit_error


def _got(msg) -> Got:
    return Got(
        partition=msg.partition(),
        offset=msg.offset(),
        key=msg.key(),
        value=msg.value(),
        headers=tuple((k, v) for k, v in (msg.headers() or ())),
        timestamp_ms=msg.timestamp()[1],
    )
