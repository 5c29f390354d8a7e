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

import contextlib
import io
import os
import shutil
import signal
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


# Admin subcommands that run in the test's own process: each is a few requests and a print,
# and a child interpreter costs a third of a CPU second to start and import (hundreds of
# calls a run). The others (produce, consume: stdin, signals, long-lived clients; dump-log;
# completion) and any call with input run as a child, as a user's shell runs them.
IN_PROCESS = frozenset({
    "topics", "configs", "groups", "metadata", "users", "quotas", "transactions", "reassign",
    "elect-leaders", "acls", "schemas",
})


def run_in_process(args: tuple[str, ...], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``kafkette ARGS`` in this process, as the child would run it: stdout and stderr are
    pipes (not terminals: the tools print plain text), stdin is empty, ``env`` is set for the
    call only; the exit code is what ``main`` returns or exits with."""
    from kafkette.cli import main

    out, err = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    saved_env = {name: os.environ.get(name) for name in env}
    saved_stdin, saved_sigint = sys.stdin, signal.getsignal(signal.SIGINT)
    os.environ.update(env)
    sys.stdin = io.TextIOWrapper(io.BytesIO(b""))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = saved_stdin
        signal.signal(signal.SIGINT, saved_sigint)  # main() sets the tools' own
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8", "replace"))  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["kafkette", *args], code, texts[0], texts[1])


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        if args and args[0] in IN_PROCESS and input is None:
            return run_in_process(args, env or {})
        return subprocess.run(
            [sys.executable, "-m", "kafkette", *args],
            input=input, capture_output=True, text=True, timeout=timeout, check=False,
            env={**os.environ, **(env or {})},
        )

    return run


@pytest.fixture
def unique_topic() -> Callable[[str], str]:
    return lambda prefix="tools": f"{prefix}-{uuid.uuid4().hex[:10]}"
