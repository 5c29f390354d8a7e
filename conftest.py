"""How the whole suite runs in parallel: pytest-xdist workers (pyproject.toml's addopts) take
whole test files, the slowest first.

- A file is one unit of work, so its module-scoped broker starts once, on one worker.
- Folders whose files share an expensive session fixture are one unit each, on one worker:
  the Spark tests share one SparkSession (a JVM, seconds and a GiB), the tools' tests one
  reference Apache Kafka broker; spread over the workers, each would start its own.
- Files start in the order of ``SLOWEST_FIRST`` (folders whose files take minutes: Spark,
  Kafka Streams, clusters), so that the last minutes are spent on short files that fill the
  gaps, not on one long file while the other workers wait. The order only decides when a file
  starts; no test depends on it.

``pytest -n 0`` runs everything in one process, in the same order.

The suite starts hundreds of child processes (``kafkette serve``, the CLI, Kafka's tools), so
what each start costs is set here, for every child:

- Python children keep their bytecode (``__pycache__``): with ``PYTHONDONTWRITEBYTECODE`` set,
  as on the machines CI runs on, every child start compiles the package again (half a second
  of CPU each).
- Kafka's tools and the reference broker run on a JVM tuned for short runs
  (``KAFKA_JVM_PERFORMANCE_OPTS``: the client compiler only, the serial collector), unless the
  caller set that variable: these JVMs live seconds and do little work, and Kafka's default
  options (server compiler, G1) spend more CPU starting than running.
"""

from __future__ import annotations

import os

import pytest

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault(
    "KAFKA_JVM_PERFORMANCE_OPTS",
    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true",
)

# Folder prefixes (from the repository root), slowest first; what matches none comes last,
# in collection order.
SLOWEST_FIRST = (
    "spark-examples/",
    "compat-tests/test_streams",
    "tests/tools/",
    "compat-tests/",
    "tests/cluster/",
    "tests/security/",
    "tests/broker/",
    "tests/console/",
    "tests/observability/",
    "tests/plugin/",
    "tests/log/",
    "tests/",
)
# Folders run as one unit of work (see the module's docstring).
SHARED_SESSION_UNITS = ("spark-examples/", "tests/tools/")


def _rank(nodeid: str) -> int:
    for rank, prefix in enumerate(SLOWEST_FIRST):
        if nodeid.startswith(prefix):
            return rank
    return len(SLOWEST_FIRST)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slowest folders first; a file's tests stay together and in their own order."""
    items.sort(key=lambda item: _rank(item.nodeid))  # sort is stable


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # log: xdist's Producer
    """Whole files to a worker, the shared-session folders whole (see the module's docstring)."""
    from xdist.scheduler import LoadFileScheduling

    class FilesAndSharedFolders(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for folder in SHARED_SESSION_UNITS:
                if nodeid.startswith(folder):
                    return folder
            return super()._split_scope(nodeid)

    # xdist would otherwise queue the files by how many tests they hold (--loadscope-reorder):
    # a file of a thousand quick codec cases before a cluster test that takes minutes.
    config.option.loadscopereorder = False
    return FilesAndSharedFolders(config, log)
