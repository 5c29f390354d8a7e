"""Fixtures of the console tests: ``kafkette serve --ui-listen`` as a real process, a known
workload written and consumed by real clients, and small HTTP helpers.

* ``start_console``: factory starting ``kafkette serve --listen 127.0.0.1:0
  --ui-listen 127.0.0.1:0 [ARGS]``; returns a ``ConsoleBroker`` (bootstrap, console URL)
  once the ready line is printed. Killed at the end of the module.
* ``workload``: on a given broker, topic ``orders`` (3 partitions) with known records
  (text, JSON, binary, markup in key/value/headers) and a consumer group ``billing``
  that consumed and committed part of it and is still a member.
* ``share_workload``: on the same broker, share group ``crew`` whose member holds records
  in several delivery states (``support.ShareWorkload`` says which).

Every wait is bounded; a test hitting one fails, it never hangs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.console import support
from tests.console.support import ConsoleBroker, ShareWorkload, Workload


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


@pytest.fixture(scope="module")
def share_workload(console: ConsoleBroker) -> Iterator[ShareWorkload]:
    done = support.hold_share_records(console.bootstrap)
    yield done
    done.member.close()
