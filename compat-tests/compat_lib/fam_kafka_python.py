"""kafka-python driver: producer, consumer and KafkaAdminClient, each opened per operation."""

from __future__ import annotations

import time
from contextlib import closing

from compat_lib.driver_helpers import (
    KAFKA_PYTHON_PRODUCER_KEYS,
    ClientLog,
    got_from_consumer_record,
    kafka_python_group_settings,
    poll_until,
    producer_settings,
    two_members,
)
from compat_lib.family import (
    ALL_SCENARIOS,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    REQUEST_TIMEOUT_MS,
    TIMEOUT_S,
    Family,
)
from compat_lib.model import Got, GroupInfo, Rec, Received, Start, describe_exception


class KafkaPythonFamily(Family):
    name = "kafka-python"
    scenarios = ALL_SCENARIOS - {"spark_pattern"}
    module = "kafka"
    install_hint = "pip install kafka-python==3.0.12"

    def version(self) -> str:
        import kafka

        return f"kafka-python {kafka.__version__}"

    def _common(self) -> dict:
        common = {
            "bootstrap_servers": self.bootstrap,
            "request_timeout_ms": REQUEST_TIMEOUT_MS,
        }
        if self.security is not None:
            common |= self.security.kafka_python()
        return common

    def _admin(self):
        from kafka import KafkaAdminClient

        return KafkaAdminClient(**self._common())

    def _consumer(self, **extra):
        from kafka import KafkaConsumer

        conf = self._common() | {"enable_auto_commit": False, "auto_offset_reset": "earliest"}
        return KafkaConsumer(**(conf | extra))

    def partitions_for(self, topic: str) -> int:
        from kafka import KafkaProducer

        with closing(KafkaProducer(**self._common(), max_block_ms=REQUEST_TIMEOUT_MS)) as prod:
            return len(prod.partitions_for(topic) or ())

    def list_topics(self) -> set[str]:
        with closing(self._admin()) as admin:
            return set(admin.list_topics())

    def check_login(self) -> set[str]:
        """kafka-python 3.0.12 over TLS sometimes sees only "socket disconnected" when the
        broker answers a failed login and closes (Kafka 4.0 too): it retries the bootstrap,
        and its log names the error on most attempts. Up to three short bootstraps, until
        one logs a Kafka error code."""
        from kafka import KafkaAdminClient

        for _ in range(3):
            with ClientLog("kafka") as log:
                try:
                    admin = KafkaAdminClient(**self._common(), bootstrap_timeout_ms=4_000)
                    with closing(admin):
                        return set(admin.list_topics())
                except Exception as exc:
                    failure = log.error(exc)
                    if log.names_error_code():
                        break
        raise failure

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None) -> None:
        from kafka.admin import NewTopic

        with closing(self._admin()) as admin:
            admin.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs or {})])

    def delete_topic(self, topic: str) -> None:
        with closing(self._admin()) as admin:
            admin.delete_topics([topic])

    def create_partitions(self, topic: str, total: int) -> None:
        with closing(self._admin()) as admin:
            admin.create_partitions({topic: total})

    def describe_partition_count(self, topic: str) -> int:
        with closing(self._admin()) as admin:
            (desc,) = admin.describe_topics([topic])
            return len(desc["partitions"])

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        from kafka import KafkaProducer

        conf = self._common() | {"max_block_ms": REQUEST_TIMEOUT_MS}
        conf["compression_type"] = None if codec == "none" else codec
        conf |= producer_settings(config, KAFKA_PYTHON_PRODUCER_KEYS)
        with closing(KafkaProducer(**conf)) as prod:
            futures = [
                prod.send(
                    topic,
                    value=r.value,
                    key=r.key,
                    headers=list(r.headers),
                    partition=r.partition,
                )
                for r in recs
            ]
            prod.flush(timeout=TIMEOUT_S)
            metas = [f.get(timeout=TIMEOUT_S) for f in futures]
        return [(m.partition, m.offset) for m in metas]

    def _position(self, consumer, tp, start: Start) -> None:
        if start.kind == "earliest":
            consumer.seek_to_beginning(tp)
        elif start.kind == "offset":
            consumer.seek(tp, start.value)
        elif start.kind == "tail":
            consumer.seek_to_end(tp)
            consumer.seek(tp, max(0, consumer.position(tp) - start.value))
        elif start.kind == "timestamp":
            found = consumer.offsets_for_times({tp: start.value})[tp]
            if found is None:
                consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, found.offset)

    @staticmethod
    def _poll(consumer, count: int) -> list[Got]:
        def fetch(wanted: int) -> list[Got]:
            batch = consumer.poll(timeout_ms=500, max_records=wanted)
            return [got_from_consumer_record(m) for records in batch.values() for m in records]

        return poll_until(count, fetch)

    def consume(
        self,
        topic: str,
        partition: int,
        start: Start,
        count: int,
        isolation: str = READ_UNCOMMITTED,
    ) -> list[Got]:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        with closing(self._consumer(isolation_level=isolation)) as consumer:
            consumer.assign([tp])
            self._position(consumer, tp, start)
            return self._poll(consumer, count)

    def seek_reread(
        self, topic: str, partition: int, first: int, seek_to: int, second: int
    ) -> tuple[list[Got], list[Got]]:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        with closing(self._consumer()) as consumer:
            consumer.assign([tp])
            consumer.seek_to_beginning(tp)
            one = self._poll(consumer, first)
            consumer.seek(tp, seek_to)
            return one, self._poll(consumer, second)

    def list_offset(self, topic: str, partition: int, spec: str | int) -> int:
        from kafka import TopicPartition
        from kafka.admin import OffsetSpec

        tp = TopicPartition(topic, partition)
        wire = {"earliest": OffsetSpec.EARLIEST, "latest": OffsetSpec.LATEST}.get(spec, spec)
        with closing(self._admin()) as admin:
            return admin.list_partition_offsets({tp: wire})[tp].offset

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        from kafka import OffsetAndMetadata, TopicPartition

        with closing(self._consumer(**kafka_python_group_settings(group))) as consumer:
            _subscribe(consumer, topic)
            got = Received(self._poll(consumer, count))
            if len(got) < count:
                got.note = self._group_member_state(consumer, group, topic)
            if got:
                last = got[-1]
                tp = TopicPartition(topic, last.partition)
                consumer.commit({tp: OffsetAndMetadata(last.offset + 1, "", -1)})
            return got

    def _group_member_state(self, consumer, group: str, topic: str) -> str:
        """One line: what this still-joined consumer and the broker say about ``group``.

        Reads kafka-python's internal state (coordinator, subscription, cluster metadata)
        without network calls, then asks the broker to describe the group while the member
        is still in it. Best effort: a part that cannot be read says why."""
        parts = []
        try:
            coordinator = consumer._coordinator
            task = coordinator._join_task
            join = "none" if task is None else "done" if task.is_done else "in flight"
            parts.append(
                f"member state {coordinator.state}, {coordinator._generation}, "
                f"rejoin needed {coordinator.need_rejoin()}, join task {join}, "
                f"coordinator {coordinator.coordinator_id}"
            )
        except Exception as exc:
            parts.append(f"member state unreadable ({describe_exception(exc)})")
        try:
            metadata = consumer._client.cluster.partitions_for_topic(topic)
            parts.append(f"metadata partitions {sorted(metadata) if metadata else metadata}")
        except Exception as exc:
            parts.append(f"metadata unreadable ({describe_exception(exc)})")
        try:
            states = consumer._subscription.assignment
            parts.append(
                "assignment "
                + (
                    ", ".join(
                        f"{tp.topic}-{tp.partition}: position "
                        f"{st.position.offset if st.position else None}, "
                        f"reset {st.reset_strategy}, paused {st.paused}"
                        for tp, st in states.items()
                    )
                    or "empty"
                )
            )
        except Exception as exc:
            parts.append(f"assignment unreadable ({describe_exception(exc)})")
        try:
            parts.append(f"broker: {self.describe_group(group)}")
        except Exception as exc:
            parts.append(f"broker: describe failed ({describe_exception(exc)})")
        return "; ".join(parts)

    def group_two_members(
        self, group: str, topic: str, total: int
    ) -> tuple[list[int], list[int], set[tuple[int, int]]]:

        def poll_once(member) -> list[tuple[int, int]]:
            batch = member.poll(timeout_ms=200)
            return [(m.partition, m.offset) for records in batch.values() for m in records]

        def new_member():
            return self._consumer(**kafka_python_group_settings(group))

        return two_members(
            new_member, topic, total, poll_once, subscribe=_subscribe, own_threads=True
        )

    def list_groups(self) -> set[str]:
        with closing(self._admin()) as admin:
            return {g["group_id"] for g in admin.list_groups()}

    def describe_group(self, group: str) -> GroupInfo:
        with closing(self._admin()) as admin:
            desc = admin.describe_groups([group])[group]
        return GroupInfo(
            group_id=group,
            state=desc["group_state"],
            protocol_type=desc["protocol_type"],
            members=len(desc["members"]),
        )

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        from kafka.admin import ConfigResource

        with closing(self._admin()) as admin:
            res = admin.describe_configs([ConfigResource("TOPIC", topic)], config_filter="all")
        (by_name,) = res.values()
        return {k: v["value"] for k, v in by_name[topic].items()}

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        from kafka.admin import ConfigResource

        with closing(self._admin()) as admin:
            answer = admin.alter_configs([ConfigResource("TOPIC", topic, dict(configs))])
        # kafka-python returns each resource's error as text instead of raising it.
        result = answer.get("topic", {}).get(topic)
        if result != "OK":
            raise RuntimeError(f"AlterConfigs {topic}: {result}")

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        with closing(self._admin()) as admin:
            res = admin.delete_records({tp: before})
        meta = res[tp]
        return meta["low_watermark"] if isinstance(meta, dict) else meta.low_watermark

    # ---- transactions -------------------------------------------------------------------
    def _txn_producer(self, transactional_id: str):
        from kafka import KafkaProducer

        prod = KafkaProducer(
            **self._common(), max_block_ms=REQUEST_TIMEOUT_MS, transactional_id=transactional_id
        )
        prod.init_transactions()
        return prod

    @staticmethod
    def _send_acked(prod, topic: str, recs: list[Rec]) -> None:
        futures = [
            prod.send(
                topic, value=r.value, key=r.key, headers=list(r.headers), partition=r.partition
            )
            for r in recs
        ]
        prod.flush(timeout=TIMEOUT_S)
        for f in futures:
            f.get(timeout=TIMEOUT_S)

    def txn_produce(
        self, topic: str, transactional_id: str, txns: list[tuple[list[Rec], bool]]
    ) -> None:
        with closing(self._txn_producer(transactional_id)) as prod:
            for recs, commit in txns:
                prod.begin_transaction()
                self._send_acked(prod, topic, recs)
                if commit:
                    prod.commit_transaction()
                else:
                    prod.abort_transaction()

    def txn_copy(
        self,
        group: str,
        source: str,
        dest: str,
        transactional_id: str,
        count: int,
        commit: bool,
    ) -> list[Got]:
        from kafka import OffsetAndMetadata, TopicPartition

        tp = TopicPartition(source, 0)
        consumer = self._consumer(group_id=group, isolation_level=READ_COMMITTED)
        with closing(consumer), closing(self._txn_producer(transactional_id)) as prod:
            consumer.assign([tp])
            read = self._poll(consumer, count)[:count]
            prod.begin_transaction()
            copies = [Rec(g.key, b"copied:" + (g.value or b""), partition=0) for g in read]
            self._send_acked(prod, dest, copies)
            if read:
                offsets = {tp: OffsetAndMetadata(read[-1].offset + 1, "", -1)}
                prod.send_offsets_to_transaction(offsets, consumer.group_metadata())
            if commit:
                prod.commit_transaction()
            else:
                prod.abort_transaction()
            return read

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        with closing(self._admin()) as admin:
            found = admin.list_group_offsets({group: [tp]})
        meta = found.get(group, {}).get(tp)
        return None if meta is None or meta.offset < 0 else meta.offset

    def txn_fencing(
        self, topic: str, transactional_id: str, first: Rec, late: Rec | None, successor: Rec
    ) -> tuple[str, str]:
        with closing(self._txn_producer(transactional_id)) as zombie:
            zombie.begin_transaction()
            self._send_acked(zombie, topic, [first])
            with closing(self._txn_producer(transactional_id)) as heir:
                heir.begin_transaction()
                self._send_acked(heir, topic, [successor])
                heir.commit_transaction()
            send_error = commit_error = ""
            try:
                if late is not None:
                    self._send_acked(zombie, topic, [late])
            except Exception as exc:
                send_error = describe_exception(exc)
            try:
                zombie.commit_transaction()
            except Exception as exc:
                commit_error = describe_exception(exc)
            return send_error, commit_error


def _subscribe(consumer, topic: str) -> None:
    """Subscribe, then wait (at most ``TIMEOUT_S``) until the group coordinator's metadata
    snapshot has ``topic``'s partitions, before the first poll joins the group.

    Works around a kafka-python 3.0.12 bug that left a group consumer with no partitions
    for good (compat ``list_describe_groups`` reading 0 of 1 records under load).
    Without metadata for the topic at the first JoinGroup, the leader assigns nothing;
    the metadata that arrives next makes the consumer rejoin. That rejoin is driven only
    by the coordinator's metadata snapshot, which ``_perform_assignment`` itself brings
    up to date in the middle of the join. If ``poll(timeout_ms=500)`` gives up while the
    JoinGroup/SyncGroup round trip is still in flight (a slow SyncGroup is enough), the
    join task finishes in the background, but the next poll sees nothing left to rejoin
    and never collects the task: the new assignment is never applied, heartbeats stay
    off, the broker expires the member after session.timeout.ms, and the consumer polls
    an empty assignment until the test's deadline. The broker answered every request
    correctly and promptly (a first join that the client retries because
    ``rejoin_needed`` is still set is harmless). With the partitions in the snapshot
    before the first poll, the first generation already assigns them and no
    snapshot-driven rejoin follows. The snapshot (not just the cluster cache) is what
    must be current, so this waits on it, through kafka-python internals that 3.0.12
    (the pinned version) has; only this topic's metadata is requested.
    """
    from kafka.errors import KafkaTimeoutError

    consumer.subscribe([topic])
    coordinator, cluster = consumer._coordinator, consumer._cluster
    deadline = time.monotonic() + TIMEOUT_S
    while not coordinator._metadata_snapshot.get(topic) and time.monotonic() < deadline:
        try:
            consumer._net.run(consumer._manager.wait_for, cluster.request_update(), 1000)
        except KafkaTimeoutError:
            pass
