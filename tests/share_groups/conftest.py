"""A broker for the share-group tests: short acquisition locks allowed (the lock bound
``group.share.min.record.lock.duration.ms`` lowered to Kafka's validator minimum), so a
test can wait one out; each test uses its own topic and group."""

from __future__ import annotations

import gc
import uuid
from collections.abc import Iterator

import pytest

from kafkette.broker.embedded import EmbeddedBroker

SHARE_TEST_CONFIGS = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "1000",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path_factory.mktemp("share-broker"), configs=SHARE_TEST_CONFIGS
    )
    try:
        yield embedded
    finally:
        gc.collect()  # librdkafka handles the tests left behind close their sockets
        embedded.stop(timeout=30)


@pytest.fixture
def names() -> tuple[str, str]:
    """A fresh (topic, group) pair."""
    tag = uuid.uuid4().hex[:8]
    return f"jobs-{tag}", f"workers-{tag}"
