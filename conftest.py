"""How the whole suite runs in parallel: pytest-xdist workers (pyproject.toml's addopts) take
whole test files, the slowest first.

- A file is one unit of work, so its module-scoped broker starts once, on one worker.
- Files that share an expensive session fixture are one unit, on one worker: the Spark tests
  share one SparkSession (a JVM, seconds and a GiB), the tools' tests that compare with Kafka
  one reference Apache Kafka broker; spread over the workers, each would start its own.
- A file of long, CPU-bound tests that share nothing (``SPLIT_BY_FUNCTION``) is one unit per
  test function instead, so that it spreads over the workers.
- Files start in the order of ``SLOWEST_FIRST`` (folders whose files take minutes: Spark,
  Kafka Streams, clusters), so that the last minutes are spent on short files that fill the
  gaps, not on one long file while the other workers wait. The order only decides when a file
  starts; no test depends on it.

``pytest -n 0`` runs everything in one process, in the same order.

Every worker collects every test file, and on a clean clone each would rewrite the asserts of
all ~200 of them (pytest caches the result in ``__pycache__``; ~8 s of CPU a worker, four
times over on two cores). So when most of that cache is missing, the controller first has two
``--collect-only`` processes fill it, each for half the files, before the workers start.

The suite starts hundreds of child processes (``kafkette serve``, the CLI, Kafka's tools), so
what each start costs is set here, for every child:

- Python children keep their bytecode (``__pycache__``): with ``PYTHONDONTWRITEBYTECODE`` set,
  as on the machines CI runs on, every child start compiles the package again (half a second
  of CPU each).
- Kafka's tools and the reference broker run on a JVM tuned for short runs
  (``KAFKA_JVM_PERFORMANCE_OPTS``: the client compiler only, the serial collector), unless the
  caller set that variable: these JVMs live seconds and do little work, and Kafka's default
  options (server compiler, G1) spend more CPU starting than running.
- They also map Kafka's classes from one class-data-sharing archive (AppCDS) instead of
  loading and verifying them again in each of a run's ~150 tool JVMs: about 1.1 s of CPU less
  per tool run here (2.8 -> 1.7 s user for ``kafka-topics.sh --list``). The archive is dumped
  once per Java and Kafka build, by one admin tool run against a throwaway kafkette, in the
  background while the first tests run (a JVM that starts before it exists, or finds one that
  does not match its classpath, just loads its classes as usual; ``-Xlog:cds*=off`` keeps the
  JVM's note about that off the tools' stdout, which tests read).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what the code does, never how fast: hypothesis' default per-example
# deadline (200 ms) and its too-slow health check fail a correct test whenever a busy machine
# deschedules the worker (seen: a uint16 round-trip on a 2-core machine running the suite).
# Speed is bench/'s business. Tests that set their own deadline (a hang guard) keep it.
settings.register_profile("kafkette", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kafkette")

REPO = Path(__file__).resolve().parent
if str(REPO) not in sys.path:  # tests' helpers, as tests/conftest.py reaches them
    sys.path.insert(0, str(REPO))
from tests.jvm_options import SHORT_RUN_JVM  # noqa: E402
from tests.reference_kafka import reference_script  # noqa: E402

TOOL_JVM_OPTS = " ".join((*SHORT_RUN_JVM, "-Djava.awt.headless=true"))


def _class_archive_path() -> Path | None:
    """Where this Java's archive of the reference Kafka's classes lives, or None (no Java,
    no reference Kafka). Named after the java binary and Kafka's libs, so a new build of
    either gets a new archive."""
    java = shutil.which("java")
    if java is None or reference_script() is None:
        return None
    java_real = Path(java).resolve()
    base = Path(os.environ.get("KAFKA_REF_DIR", Path.home() / ".cache" / "kafkette-ref"))
    libs = base / "kafka_2.13-4.0.0" / "libs"
    stamp = f"{java_real}:{java_real.stat().st_mtime_ns}"
    if libs.is_dir():
        stamp += f":{libs.stat().st_mtime_ns}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    return base / f"tool-classes-{key}.jsa"


def _dump_class_archive(archive: Path) -> None:
    """Run one admin tool against a throwaway kafkette with ``ArchiveClassesAtExit``, then
    move the archive into place (JVMs starting meanwhile never see half a file)."""
    ref = reference_script()
    assert ref is not None
    home = subprocess.run([ref, "home"], capture_output=True, text=True, timeout=300)
    if home.returncode != 0:
        return
    kafka_home = Path(home.stdout.strip())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="kafkette-cds-") as work:
        serve = subprocess.Popen(
            [sys.executable, "-c", "from kafkette.cli import main; main()", "serve",
             "--listen", f"127.0.0.1:{port}", "--data-dir", f"{work}/data",
             "--log-level", "ERROR"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        try:
            if not (serve.stdout and serve.stdout.readline().startswith("kafkette ready")):
                return
            partial = Path(work) / "tools.jsa"
            env = dict(os.environ, KAFKA_JVM_PERFORMANCE_OPTS=TOOL_JVM_OPTS,
                       KAFKA_OPTS=f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds*=off")  # fmt: skip
            subprocess.run(
                [kafka_home / "bin" / "kafka-topics.sh", "--bootstrap-server",
                 f"127.0.0.1:{port}", "--list"],
                env=env, capture_output=True, timeout=120,
            )  # fmt: skip
            if partial.is_file() and partial.stat().st_size > 0:
                archive.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(partial, archive.with_suffix(".partial"))
                os.replace(archive.with_suffix(".partial"), archive)
        finally:
            serve.terminate()
            serve.wait(timeout=30)


os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
if "KAFKA_JVM_PERFORMANCE_OPTS" not in os.environ:
    _archive = _class_archive_path()
    os.environ["KAFKA_JVM_PERFORMANCE_OPTS"] = (
        TOOL_JVM_OPTS
        if _archive is None
        else f"{TOOL_JVM_OPTS} -XX:SharedArchiveFile={_archive} -Xlog:cds*=off"
    )
    # The controller (or the only process, -n 0) dumps it once; xdist's workers inherit the
    # variable and find the archive once it is there.
    if _archive is not None and not _archive.exists() and "PYTEST_XDIST_WORKER" not in os.environ:
        threading.Thread(target=_dump_class_archive, args=(_archive,), daemon=True).start()

# Warm the assertion-rewrite cache first when at least this many test modules lack it.
COLD_MODULES_WORTH_WARMING = 40
WARMING_TIMEOUT_S = 120.0


def _rewrite_cache_missing(module: Path) -> bool:
    """No cached rewrite of ``module`` (pytest's own name for it: ``<stem>.<cache tag>-pytest-
    <version>.pyc`` in ``__pycache__``); a stale one pytest redoes itself."""
    tag = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}"
    return not (module.parent / "__pycache__" / f"{module.stem}.{tag}.pyc").exists()


def _test_modules(config: pytest.Config) -> list[Path]:
    """The test modules under this run's paths (``testpaths`` or the arguments)."""
    found: set[Path] = set()
    for arg in config.args:
        path = Path(arg.split("::", 1)[0])
        if path.is_file():
            found.add(path.resolve())
        elif path.is_dir():
            for pattern in ("test_*.py", "*_test.py"):
                found.update(p.resolve() for p in path.rglob(pattern) if ".venv" not in p.parts)
    return sorted(found)


def _warm_rewrite_cache(config: pytest.Config) -> None:
    """Fill the assertion-rewrite cache in two processes before the workers start (see the
    module's docstring); a warm cache, or a run of a few files, skips this."""
    cold = [module for module in _test_modules(config) if _rewrite_cache_missing(module)]
    if len(cold) < COLD_MODULES_WORTH_WARMING:
        return
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0",
               "-p", "no:cacheprovider", "--rootdir", str(config.rootpath)]  # fmt: skip
    warmers = [
        subprocess.Popen(
            [*command, *map(str, half)],
            cwd=config.rootpath,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for half in (cold[0::2], cold[1::2])
    ]
    for warmer in warmers:
        try:
            warmer.wait(timeout=WARMING_TIMEOUT_S)
        except subprocess.TimeoutExpired:  # only a head start: the workers rewrite what is left
            warmer.kill()
            warmer.wait()


def pytest_configure(config: pytest.Config) -> None:
    """The xdist controller (``-n`` > 0; workers have ``workerinput``) warms the cache."""
    numprocesses = config.getoption("numprocesses", None)
    if numprocesses and not hasattr(config, "workerinput") and not config.option.collectonly:
        _warm_rewrite_cache(config)


# Folder prefixes (from the repository root), slowest first; what matches none comes last,
# in collection order.
SLOWEST_FIRST = (
    "tests/cluster/test_partitions.py",  # one file of three long schedules: start it first
    "spark-examples/",
    "compat-tests/test_streams",
    "tests/tools/",
    "compat-tests/",
    "tests/cluster/",
    "tests/wire/test_codec.py",
    "tests/share_groups/",
    "tests/security/",
    "tests/broker/",
    "tests/console/",
    "tests/observability/",
    "tests/plugin/",
    "tests/log/",
    "tests/",
)
# Folders run as one unit of work (see the module's docstring).
SHARED_SESSION_UNITS = ("spark-examples/",)
# The tools' test files that use the session's reference Kafka (its ``reference_kafka``
# fixture, directly or through ``any_bootstrap``) are one unit: one broker JVM for all of them.
# The folder's other files are units of their own, so they spread over the workers instead of
# queueing behind that unit (which takes minutes).
REFERENCE_KAFKA_UNIT = "tests/tools/ (reference Kafka)"
_USES_REFERENCE_KAFKA = re.compile(r"(?<!tests\.)\breference_kafka\b|\bany_bootstrap\b")


def _reference_kafka_files() -> frozenset[str]:
    return frozenset(
        f"tests/tools/{path.name}"
        for path in (REPO / "tests" / "tools").glob("test_*.py")
        if _USES_REFERENCE_KAFKA.search(path.read_text(encoding="utf-8"))
    )


REFERENCE_KAFKA_FILES = _reference_kafka_files()
# Files run as one unit per test function: the codec's oracle tests are half a minute of CPU
# in four functions (a minute and a half with hypothesis drawing every value); as one unit,
# started last among the quick files, they were the run's last minute, other workers done.
SPLIT_BY_FUNCTION = ("tests/wire/test_codec.py",)


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
    """Whole files to a worker, the shared-session folders whole, the split files by
    function (see the module's docstring and SPLIT_BY_FUNCTION)."""
    from xdist.scheduler import LoadFileScheduling

    class FilesAndSharedFolders(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            for folder in SHARED_SESSION_UNITS:
                if nodeid.startswith(folder):
                    return folder
            if nodeid.split("::", 1)[0] in REFERENCE_KAFKA_FILES:
                return REFERENCE_KAFKA_UNIT
            if nodeid.startswith(SPLIT_BY_FUNCTION):
                return nodeid.split("[", 1)[0]
            return super()._split_scope(nodeid)

    # xdist would otherwise queue the files by how many tests they hold (--loadscope-reorder):
    # a file of a thousand quick codec cases before a cluster test that takes minutes.
    config.option.loadscopereorder = False
    return FilesAndSharedFolders(config, log)
