"""A Kafka broker for tests and notebooks, in one ``with`` statement.

::

    import kafkette.testing

    with kafkette.testing.broker(configs={"num.partitions": "3"}) as kafka:
        topic = kafka.create_topic(partitions=3)
        Producer({"bootstrap.servers": kafka.bootstrap}).produce(topic, b"hello")

``broker()`` starts kafkette in this process (a background thread, see
``kafkette.broker.embedded``) on a free port with a fresh temporary data dir that is removed
at exit, and ``group.initial.rebalance.delay.ms=0``: Kafka's default (3 s) makes a test's first
group consumer wait three seconds for members that never come. ``external(bootstrap)`` wraps a
cluster that is already running (kafkette or Apache Kafka) in the same ``KafkaBroker`` type, so
code written against one runs against the other. The pytest plugin
(``kafkette.pytest_plugin``) builds its fixtures on these two.

Importing this module is cheap: the broker (trio, the codec) loads when ``broker()`` starts
one and confluent-kafka when a topic is first created, so a test suite pays nothing for
fixtures it does not use.
"""

from __future__ import annotations

import gc
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkette.broker.embedded import EmbeddedBroker

__all__ = ["DEFAULT_TEST_CONFIGS", "KafkaBroker", "broker", "external", "unique_topic_name"]

DEFAULT_TEST_CONFIGS: Mapping[str, str] = {"group.initial.rebalance.delay.ms": "0"}
"""What a test broker changes from Kafka's defaults (the caller's ``configs`` win)."""

_TOPIC_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9._-]+")


def unique_topic_name(prefix: str = "test") -> str:
    """``<prefix>-<12 hex digits>``, with characters Kafka refuses in topic names replaced.

    Unique per call, so tests sharing a broker (or re-run against the same external cluster)
    never see each other's records.
    """
    cleaned = _TOPIC_NAME_UNSAFE.sub("-", prefix).strip("-.")[:200] or "test"
    return f"{cleaned}-{uuid.uuid4().hex[:12]}"


class KafkaBroker:
    """A broker that tests talk to: kafkette in this process, or an external cluster.

    ``bootstrap`` is the ``bootstrap.servers`` string for any client. ``embedded`` is the
    in-process ``EmbeddedBroker`` (None for an external cluster), ``data_dir`` its data
    directory, ``configs`` the broker configs it was started with. ``schema_registry_url``
    is the ``schema.registry.url`` of its schema registry (None when there is none).
    """

    def __init__(
        self,
        bootstrap: str,
        *,
        embedded: EmbeddedBroker | None = None,
        data_dir: Path | None = None,
        configs: Mapping[str, str] | None = None,
        schema_registry_url: str | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.embedded = embedded
        self.data_dir = data_dir
        self.configs: dict[str, str] = dict(configs or {})
        self.schema_registry_url = schema_registry_url
        self._admin: Any = None

    @property
    def external(self) -> bool:
        """True when this wraps a cluster that something else started (and will stop)."""
        return self.embedded is None

    def admin(self) -> Any:
        """A confluent-kafka ``AdminClient`` on this broker (one, made on first use)."""
        if self._admin is None:
            from confluent_kafka.admin import AdminClient

            self._admin = AdminClient({"bootstrap.servers": self.bootstrap})
        return self._admin

    def create_topic(
        self,
        name: str | None = None,
        partitions: int = 1,
        configs: Mapping[str, str] | None = None,
        *,
        timeout: float = 30.0,
    ) -> str:
        """Create a topic (a unique name unless ``name`` is given) and return its name.

        Returns once Metadata shows every partition with a leader, so a producer or consumer
        made next finds the topic at once, on a multi-broker cluster too. The replication
        factor is the cluster's default (``default.replication.factor``, KIP-464's -1).
        """
        from confluent_kafka.admin import NewTopic

        topic = name or unique_topic_name()
        request = NewTopic(
            topic,
            num_partitions=partitions,
            replication_factor=-1,
            config={key: str(value) for key, value in (configs or {}).items()},
        )
        futures = self.admin().create_topics([request], request_timeout=timeout)
        futures[topic].result(timeout=timeout)
        self._wait_for_leaders(topic, partitions, time.monotonic() + timeout)
        return topic

    def delete_topics(self, names: Iterable[str], *, timeout: float = 30.0) -> None:
        """Delete topics; raises the first failure (after asking for all of them)."""
        names = list(names)
        if not names:
            return
        futures = self.admin().delete_topics(names, request_timeout=timeout)
        for future in futures.values():
            future.result(timeout=timeout)

    def _wait_for_leaders(self, topic: str, partitions: int, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"topic {topic!r} has no leader for every partition yet")
            metadata = self.admin().list_topics(topic, timeout=remaining)
            described = metadata.topics.get(topic)
            if (
                described is not None
                and described.error is None
                and len(described.partitions) == partitions
                and all(p.leader >= 0 for p in described.partitions.values())
            ):
                return
            time.sleep(0.05)

    def check_reachable(self, timeout: float = 10.0) -> None:
        """Raise ``ConnectionError`` naming the address unless a broker answers Metadata."""
        from confluent_kafka import KafkaException

        try:
            self.admin().list_topics(timeout=timeout)
        except KafkaException as exc:
            raise ConnectionError(
                f"no Kafka broker answered at {self.bootstrap} within {timeout:g}s: {exc}"
            ) from None

    def close(self) -> None:
        """Drop the admin client: librdkafka closes its sockets when the handle goes."""
        self._admin = None
        gc.collect()

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        kind = "external" if self.external else "kafkette in-process"
        return f"<KafkaBroker {self.bootstrap} ({kind})>"


@contextmanager
def broker(
    configs: Mapping[str, str] | None = None,
    data_dir: Path | str | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 30.0,
    schema_registry: bool = False,
) -> Iterator[KafkaBroker]:
    """Run kafkette in this process for the ``with`` block; yields its ``KafkaBroker``.

    ``configs`` are Apache Kafka broker configs (names and string values as in
    ``server.properties``) on top of ``DEFAULT_TEST_CONFIGS``; an unknown name fails the
    start. Without ``data_dir`` a fresh temporary directory is used and removed at exit; a
    given ``data_dir`` is kept (reopen it to see what a restart recovers). ``port=0`` takes a
    free port. The broker stops gracefully at exit (flush, clean-shutdown marker).
    ``schema_registry=True`` also serves a schema registry (Confluent's REST API) on ``host``
    and a free port: ``KafkaBroker.schema_registry_url``.
    """
    from kafkette.broker.embedded import EmbeddedBroker

    merged = {**DEFAULT_TEST_CONFIGS, **{k: str(v) for k, v in (configs or {}).items()}}
    owned = data_dir is None
    directory = Path(tempfile.mkdtemp(prefix="kafkette-")) if owned else Path(data_dir)
    try:
        embedded = EmbeddedBroker.start(
            data_dir=directory, configs=merged, host=host, port=port, timeout=timeout,
            schema_registry=schema_registry,
        )  # fmt: skip
        try:
            with KafkaBroker(
                embedded.bootstrap, embedded=embedded, data_dir=directory, configs=merged,
                schema_registry_url=embedded.schema_registry_url,
            ) as running:  # fmt: skip
                yield running
        finally:
            embedded.stop(timeout=timeout)
    finally:
        if owned:
            shutil.rmtree(directory, ignore_errors=True)


def external(bootstrap: str, *, check: bool = True, timeout: float = 10.0) -> KafkaBroker:
    """A ``KafkaBroker`` for a running cluster at ``bootstrap`` (nothing is started).

    With ``check`` (the default) a broker must answer Metadata within ``timeout`` seconds,
    else ``ConnectionError``: one clear failure instead of every test timing out on its own.
    """
    wrapped = KafkaBroker(bootstrap)
    if check:
        wrapped.check_reachable(timeout)
    return wrapped
