"""Fixtures and hooks of the client compatibility suite.

* ``broker``: the broker under test (session). Starts ``kafkette serve`` on a free port with a
  fresh data dir unless ``--bootstrap HOST:PORT`` / ``KAFKETTE_BOOTSTRAP`` names another one.
  If it cannot be started or reached every test fails at once with the reason.
* ``client``: the family driver for this test (parametrized by ``pytest_generate_tests`` over
  the families whose driver declares the scenario), wrapped so client errors read as one line.
* A recorder writes one row per (family, scenario) to ``--compat-results`` (JSON) for
  ``report.py``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

# Helpers are plain imports: this folder's ``compat_lib`` and, from the repository root, what the
# suites share (``tests.broker.group_helpers``, ``bench.harness.serve_process``), as
# tests/conftest.py does for tests/ (this suite also runs alone, without that conftest).
HERE = Path(__file__).resolve().parent
for _path in (str(HERE), str(HERE.parent)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from compat_lib import broker_process  # noqa: E402
from compat_lib.family import guarded  # noqa: E402
from compat_lib.registry import BY_NAME, FAMILIES  # noqa: E402

DEFAULT_RESULTS = HERE / ".build" / "results.json"
SUITE_BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "0"}

_results: list[dict] = []
# Under pytest-xdist each worker starts its own broker: its log gets the worker's name.
_WORKER = f"-{os.environ['PYTEST_XDIST_WORKER']}" if "PYTEST_XDIST_WORKER" in os.environ else ""
_run_info: dict = {"families": {}}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compat", "client compatibility suite")
    group.addoption(
        "--bootstrap",
        default=None,
        help="HOST:PORT of a running broker to test instead of starting kafkette "
        "(also KAFKETTE_BOOTSTRAP)",
    )
    group.addoption(
        "--broker-name",
        default=None,
        help="how the report names the broker under test (default: kafkette's version, or "
        "'external broker at HOST:PORT')",
    )
    group.addoption(
        "--families",
        default=None,
        help="comma-separated client families to run (default: all): "
        + ", ".join(cls.name for cls in FAMILIES),
    )
    group.addoption(
        "--secured-broker",
        default="kafkette",
        choices=("kafkette", "kafka"),
        help="which broker test_security.py starts secured (TLS, SASL, ACLs): kafkette "
        "(default) or the reference Apache Kafka 4.0 (validates the scenarios)",
    )
    group.addoption(
        "--compat-results",
        default=str(DEFAULT_RESULTS),
        help="where to write per (family, scenario) outcomes as JSON for report.py",
    )


def pytest_configure(config: pytest.Config) -> None:
    # kafka-python loads its protocol schemas through a deprecated importlib API.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:importlib.*")
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:kafka.*")


def _scenario_name(item: pytest.Item) -> str:
    name = item.originalname if hasattr(item, "originalname") else item.name
    scenario = name.removeprefix("test_")
    params = getattr(getattr(item, "callspec", None), "params", {})
    if "codec" in params:
        scenario = f"{scenario}_{params['codec']}"
    return scenario


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "client" not in metafunc.fixturenames:
        return
    scenario = metafunc.function.__name__.removeprefix("test_")
    wanted = metafunc.config.getoption("--families")
    chosen = [c for c in FAMILIES if scenario in c.scenarios]
    if wanted:
        names = {n.strip() for n in wanted.split(",")}
        unknown = names - set(BY_NAME)
        if unknown:
            raise pytest.UsageError(f"unknown families {sorted(unknown)}; know {sorted(BY_NAME)}")
        chosen = [c for c in chosen if c.name in names]
    if not chosen:
        skip = pytest.mark.skip(reason=f"no selected client family expresses {scenario}")
        metafunc.parametrize("family", [pytest.param("none", marks=skip)], indirect=True)
        return
    metafunc.parametrize("family", [c.name for c in chosen], indirect=True, scope="session")


@pytest.fixture(scope="session")
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The bootstrap address of the broker under test, checked reachable."""
    given = request.config.getoption("--bootstrap") or broker_process.env_bootstrap()
    label = request.config.getoption("--broker-name")
    if given:
        _run_info["broker"] = label or f"external broker at {given}"
        _run_info["started_by_suite"] = False
        try:
            broker_process.check_reachable(given)
        except broker_process.BrokerUnavailable as exc:
            pytest.fail(str(exc), pytrace=False)
        yield given
        return
    _run_info["broker"] = label or broker_process.kafkette_version()
    _run_info["started_by_suite"] = True
    data_dir = tmp_path_factory.mktemp("kafkette") / "data"
    data_dir.mkdir()
    try:
        proc = broker_process.start_kafkette(
            data_dir, SUITE_BROKER_CONFIGS, HERE / ".build" / f"kafkette{_WORKER}.stderr.log"
        )
        broker_process.check_reachable(proc.bootstrap)
    except broker_process.BrokerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    _kafkette.append(proc)
    try:
        yield proc.bootstrap
    finally:
        _kafkette.remove(proc)
        _run_info["broker_exit_code"] = proc.stop()
        _run_info["broker_stderr"] = str(proc.stderr_path)


_drivers: dict[str, object] = {}
_kafkette: list[broker_process.KafketteProcess] = []  # the broker this session started, if any


def _assert_broker_alive(bootstrap: str) -> None:
    """Before each test: fail at once (not after client timeouts) if the broker is gone."""
    for proc in _kafkette:
        code = proc.proc.poll()
        if code is not None:
            tail = broker_process.tail(proc.stderr_path)
            message = f"kafkette exited (code {code}) mid-run; its log ends: {tail}"
            pytest.fail(message, pytrace=False)
    try:
        broker_process.check_reachable(bootstrap)
    except broker_process.BrokerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def family(request: pytest.FixtureRequest, broker: str) -> str:
    """The family name; creates (once per session) its driver, or skips with the reason."""
    name = request.param
    if name not in _drivers:
        driver = BY_NAME[name](broker)
        _drivers[name] = driver
        reason = driver.available()
        if reason is None:
            try:
                _run_info["families"][name] = driver.version()
            except Exception as exc:
                _run_info["families"][name] = f"{name} (version unknown: {exc})"
        else:
            _run_info["families"][name] = f"{name}: not available ({reason})"
    driver = _drivers[name]
    reason = driver.available()
    if reason is not None:
        pytest.skip(f"{name} not available: {reason}")
    request.addfinalizer(driver.close)
    return name


@pytest.fixture
def client(family: str, broker: str):
    """The family's driver; its calls raise ``ClientError('<family> <op>: <what it saw>')``."""
    _assert_broker_alive(broker)
    return guarded(_drivers[family])


@pytest.fixture
def topic(request: pytest.FixtureRequest, family: str) -> str:
    """A unique topic name per test so runs against a shared broker never collide."""
    scenario = _scenario_name(request.node).replace("_", "-")
    return f"compat-{scenario}-{family}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def group(family: str) -> str:
    return f"compat-group-{family}-{uuid.uuid4().hex[:8]}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    params = getattr(getattr(item, "callspec", None), "params", {})
    family = params.get("family")
    if family not in BY_NAME:
        return report
    failed_setup = report.when == "setup" and not report.passed
    if report.when == "call" or failed_setup:
        message = ""
        if report.skipped and isinstance(report.longrepr, tuple):
            message = report.longrepr[2].removeprefix("Skipped: ")
        elif call.excinfo is not None:
            message = _one_line(call.excinfo.exconly())
        _results.append(
            {
                "family": family,
                "scenario": _scenario_name(item),
                "outcome": "error" if failed_setup and report.failed else report.outcome,
                "message": message,
                "duration_s": round(report.duration, 2),
                "nodeid": item.nodeid,
            }
        )
    return report


def _one_line(text: str) -> str:
    text = text.removeprefix("Failed: ").removeprefix("compat_lib.model.")
    first = text.strip().splitlines()[0] if text.strip() else ""
    return " ".join(first.split())[:500]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # node: xdist's WorkerController
    """Under pytest-xdist: take a worker's rows and run info into this (controlling) process."""
    shipped = getattr(node, "workeroutput", {}).get("compat")
    if shipped:
        worker = json.loads(shipped)
        _results.extend(worker["results"])
        families = _run_info["families"] | worker["run_info"].pop("families")
        _run_info.update(worker["run_info"], families=families)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes the file
        workeroutput["compat"] = json.dumps(
            {"results": _results, "run_info": _run_info}, default=str
        )
        return
    if not _results:
        return
    from compat_lib.family import ALL_SCENARIOS
    path = Path(session.config.getoption("--compat-results"))
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "created": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "broker": _run_info.get("broker", "unknown"),
        "started_by_suite": _run_info.get("started_by_suite"),
        "broker_exit_code": _run_info.get("broker_exit_code"),
        "broker_stderr": _run_info.get("broker_stderr"),
        "families": _run_info["families"],
        "declared": {c.name: sorted(c.scenarios & ALL_SCENARIOS) for c in FAMILIES},
        "results": _results,
    }
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
