"""Fixtures of the client-tool tests: a kafkette, the reference Kafka, and the CLI as a subprocess.

* ``kafkette_bootstrap`` (session): an in-process kafkette on a free port with a fresh data
  dir and ``group.initial.rebalance.delay.ms=0``.
* ``reference_kafka`` (session): Apache Kafka 4.0 from ``../shared/reference-kafka`` (or
  ``KAFKETTE_KAFKA_REF``) on a free port; skips with the reason where Java or the reference is
  missing. One JVM for the whole session.
* ``any_bootstrap``: parametrized over both, for tests that must pass against either.
* ``cli``: runs ``python -m kafkette ARGS`` (what a user's shell runs) and returns the
  ``CompletedProcess``; stdout is a pipe, so tools print their plain (non-terminal) output.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest

from bench.harness.raw_wire import free_port
from kafkette.broker.embedded import EmbeddedBroker
from tests.reference_kafka import reference_script

CLI_TIMEOUT_S = 120


@pytest.fixture(scope="session")
def kafkette_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("tools-kafkette")
    configs = {"group.initial.rebalance.delay.ms": "0", "num.partitions": "1"}
    with EmbeddedBroker.start(data_dir=data_dir, configs=configs) as broker:
        yield broker.bootstrap


def _free_port_pair() -> int:
    """A port P with P and P+1 free a moment ago (kafka-ref puts its controller on P+1)."""
    for _ in range(50):
        port = free_port()
        with socket.socket() as other:
            try:
                other.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no free pair of ports")


@pytest.fixture(scope="session")
def reference_kafka() -> Iterator[str]:
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the reference Kafka runs on the JVM")
    script = reference_script()
    if script is None:
        pytest.skip("reference Kafka not found: set KAFKETTE_KAFKA_REF to shared/reference-kafka")
    port = _free_port_pair()
    failure = ""
    for _ in range(2):  # a generated cluster id that begins with '-' fails the format step
        done = subprocess.run([str(script), "start", str(port)], capture_output=True, text=True,
                              timeout=300, check=False)
        if done.returncode == 0:
            break
        failure = done.stderr.strip()[-300:]
    else:
        pytest.skip(f"the reference Kafka did not start: {failure}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(script), "stop", str(port)], capture_output=True, timeout=120,
                       check=False)


@pytest.fixture(params=["kafkette", "kafka"])
def any_bootstrap(request: pytest.FixtureRequest) -> str:
    """The bootstrap address of kafkette, then of the reference Kafka (skipped without Java)."""
    name = "kafkette_bootstrap" if request.param == "kafkette" else "reference_kafka"
    return request.getfixturevalue(name)


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kafkette", *args],
            input=input, capture_output=True, text=True, timeout=timeout, check=False,
            env={**os.environ, **(env or {})},
        )

    return run


@pytest.fixture
def unique_topic() -> Callable[[str], str]:
    return lambda prefix="tools": f"{prefix}-{uuid.uuid4().hex[:10]}"
