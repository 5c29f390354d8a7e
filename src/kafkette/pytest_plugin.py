"""pytest fixtures for a Kafka broker: installing kafkette is enough (the ``pytest11`` entry point).

Fixtures (see docs/testing.md):

* ``kafka_broker`` (session): kafkette in the test process on a free port, with a fresh data
  dir under pytest's temporary directory and ``group.initial.rebalance.delay.ms=0``; a
  ``kafkette.testing.KafkaBroker`` whose ``bootstrap`` goes to any client. With
  ``--kafka-bootstrap HOST:PORT`` (or ``$KAFKETTE_TEST_BOOTSTRAP``) it starts nothing and
  stands for that cluster instead, so the same tests run against Apache Kafka.
* ``kafka_topic``: a factory, ``kafka_topic(name=None, partitions=1, configs=None) -> str``,
  creating topics with unique names on ``kafka_broker`` through a real client.
* ``kafka_broker_factory``: a factory of dedicated in-process brokers for one test,
  ``kafka_broker_factory(configs={...}) -> KafkaBroker``, stopped at the test's end.

Broker configs for the session broker come from the ini option ``kafkette_broker_configs``
(``key=value`` lines). This module imports only pytest and the standard library: the broker
and the client load when a test first asks for a fixture, so projects (kafkette's own suite
among them) that have the plugin installed but do not use it pay nothing, and nothing here is
autouse.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from kafkette.testing import KafkaBroker

BOOTSTRAP_OPTION = "--kafka-bootstrap"
BOOTSTRAP_ENV = "KAFKETTE_TEST_BOOTSTRAP"
CONFIGS_INI = "kafkette_broker_configs"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafkette", "Kafka fixtures (kafkette)")
    group.addoption(
        BOOTSTRAP_OPTION,
        default=None,
        metavar="HOST:PORT[,...]",
        help="run the kafka_broker/kafka_topic fixtures against this running cluster instead "
        f"of an in-process kafkette (also ${BOOTSTRAP_ENV})",
    )
    parser.addini(
        CONFIGS_INI,
        type="linelist",
        default=[],
        help="broker configs (key=value lines, Apache Kafka's names) of the in-process "
        "kafka_broker; ignored with --kafka-bootstrap",
    )


def external_bootstrap(config: pytest.Config) -> str | None:
    """The cluster the fixtures stand for: the option, else the environment, else None."""
    given = config.getoption(BOOTSTRAP_OPTION) or os.environ.get(BOOTSTRAP_ENV, "").strip()
    return given or None


def ini_broker_configs(config: pytest.Config) -> dict[str, str]:
    """``kafkette_broker_configs`` as a dict; a line without ``=`` is a usage error."""
    configs: dict[str, str] = {}
    for line in config.getini(CONFIGS_INI):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"{CONFIGS_INI}: expected key=value, got {line!r}")
        configs[key.strip()] = value.strip()
    return configs


def pytest_report_header(config: pytest.Config) -> str | None:
    bootstrap = external_bootstrap(config)
    if bootstrap is None:
        return None
    return f"kafka fixtures: external cluster at {bootstrap}"


@pytest.fixture(scope="session")
def kafka_broker(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[KafkaBroker]:
    """The session's broker: in-process kafkette, or the ``--kafka-bootstrap`` cluster."""
    from kafkette import testing

    bootstrap = external_bootstrap(request.config)
    if bootstrap is not None:
        with testing.external(bootstrap) as cluster:
            yield cluster
        return
    data_dir = tmp_path_factory.mktemp("kafkette")
    with testing.broker(configs=ini_broker_configs(request.config), data_dir=data_dir) as running:
        yield running


@pytest.fixture
def kafka_topic(
    kafka_broker: KafkaBroker, request: pytest.FixtureRequest
) -> Iterator[Callable[..., str]]:
    """Factory: ``kafka_topic(name=None, partitions=1, configs=None) -> str``.

    Without ``name`` the topic is named after the test plus a unique suffix. Topics created
    on an external cluster are deleted when the test ends; on the in-process broker they go
    with its data dir at the end of the session.
    """
    from kafkette.testing import unique_topic_name

    created: list[str] = []

    def create(
        name: str | None = None, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> str:
        topic = kafka_broker.create_topic(
            name or unique_topic_name(request.node.name), partitions, configs
        )
        created.append(topic)
        return topic

    yield create
    if kafka_broker.external and created:
        try:
            kafka_broker.delete_topics(created)
        except Exception as exc:  # the test's outcome stands; say what was left behind
            warnings.warn(
                f"kafkette: could not delete test topics {created} on {kafka_broker.bootstrap}:"
                f" {exc}",
                stacklevel=1,
            )


@pytest.fixture
def kafka_broker_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., KafkaBroker]]:
    """Factory: ``kafka_broker_factory(configs=None) -> KafkaBroker``, a dedicated kafkette.

    For a test that needs broker configs of its own (retention, limits...) or a broker to
    itself. Always in-process, also under ``--kafka-bootstrap``: the test asked for a broker
    with these configs, which an external cluster cannot promise. ``configs`` go on top of
    ``kafkette_broker_configs``; each broker gets a fresh data dir and stops at the test's end.
    """
    from kafkette import testing

    base = ini_broker_configs(request.config)
    with ExitStack() as stack:

        def start(configs: Mapping[str, str] | None = None) -> KafkaBroker:
            data_dir = tmp_path_factory.mktemp("kafkette-dedicated")
            return stack.enter_context(
                testing.broker(configs={**base, **(configs or {})}, data_dir=data_dir)
            )

        yield start
