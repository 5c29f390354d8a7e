"""Fixtures of the console tests: ``kafkette serve --ui-listen`` as a real process, a known
workload written and consumed by real clients, and small HTTP helpers.

* ``start_console``: factory starting ``kafkette serve --listen 127.0.0.1:0
  --ui-listen 127.0.0.1:0 [ARGS]``; returns a ``ConsoleBroker`` (bootstrap, console URL)
  once the ready line is printed. Killed at the end of the module.
* ``workload``: on a given broker, topic ``orders`` (3 partitions) with known records
  (text, JSON, binary, markup in key/value/headers) and a consumer group ``billing``
  that consumed and committed part of it and is still a member.

Every wait is bounded; a test hitting one fails, it never hangs.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

import pytest


def load_support():
    name = "kafkette_console_test_support"
    if name not in sys.modules:
        spec = spec_from_file_location(name, Path(__file__).with_name("support.py"))
        module = module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


support = load_support()
ConsoleBroker = support.ConsoleBroker
Workload = support.Workload


@pytest.fixture(scope="module")
def start_console(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., ConsoleBroker]]:
    started: list[ConsoleBroker] = []

    def start(*args: str) -> ConsoleBroker:
        tmp = tmp_path_factory.mktemp("console-broker")
        broker = ConsoleBroker(tmp, ["--ui-listen", "127.0.0.1:0", *args])
        started.append(broker)
        return broker.wait_ready()

    yield start
    for broker in started:
        broker.stop()


@pytest.fixture(scope="module")
def console(start_console: Callable[..., ConsoleBroker]) -> ConsoleBroker:
    """A read-only console (the default) over a broker with the workload."""
    return start_console()


@pytest.fixture(scope="module")
def workload(console: ConsoleBroker) -> Iterator[Workload]:
    done = support.produce_and_consume(console.bootstrap)
    yield done
    for member in done.members:
        member.close()
