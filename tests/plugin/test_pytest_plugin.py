"""The pytest plugin as a user meets it: a project with no conftest, only the installed plugin.

The main inner runs are ``pytester.runpytest_subprocess``: a fresh ``python -m pytest`` that
finds the fixtures through kafkette's ``pytest11`` entry point, as in a user's project (the
cheaper variations run in this process, where the entry point is loaded the same way). The
same inner tests run against the plugin's in-process broker and, with ``--kafka-bootstrap``
(or its environment variable), against a kafkette this test starts, standing for an external
cluster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import kafkette.testing

# pytester from the test module, not this folder's conftest: pytest refuses ``pytest_plugins``
# in a conftest below the rootdir once collection has begun (a whole-suite run).
pytest_plugins = ["pytester"]

INI_CONFIGS = {"log.retention.ms": "123456789"}

INI = """
[pytest]
kafkette_broker_configs =
    # comments and blank lines are skipped

    log.retention.ms = 123456789
"""

USER_TESTS = '''
import json
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import ConfigResource, ResourceType

REPORTS = Path(__file__).parent / "reports"


def report(name, **fields):
    REPORTS.mkdir(exist_ok=True)
    (REPORTS / f"{name}.json").write_text(json.dumps(fields))


def broker_config(kafka, name):
    node = str(next(iter(kafka.admin().list_topics(timeout=10).brokers)))
    resource = ConfigResource(ResourceType.BROKER, node)
    return kafka.admin().describe_configs([resource])[resource].result(timeout=10)[name].value


def test_produce_then_a_group_consumer_reads_everything(kafka_broker, kafka_topic):
    topic = kafka_topic(partitions=3)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    sent = {f"value-{i}".encode() for i in range(30)}
    for i, value in enumerate(sorted(sent)):
        producer.produce(topic, key=f"key-{i % 7}".encode(), value=value)
    assert producer.flush(20) == 0

    consumer = Consumer({
        "bootstrap.servers": kafka_broker.bootstrap,
        "group.id": f"app-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
    })
    started = time.monotonic()
    first_record_s = None
    received = []
    try:
        consumer.subscribe([topic])
        while len(received) < len(sent) and time.monotonic() - started < 30:
            message = consumer.poll(0.1)
            if message is None:
                continue
            assert message.error() is None, message.error()
            if first_record_s is None:
                first_record_s = time.monotonic() - started
            received.append(message.value())
    finally:
        consumer.close()
    assert sorted(received) == sorted(sent)
    report("produce", bootstrap=kafka_broker.bootstrap, external=kafka_broker.external,
           topic=topic, first_record_s=first_record_s)


def test_broker_configs_come_from_the_ini_option(kafka_broker):
    assert broker_config(kafka_broker, "log.retention.ms") == "123456789"
    assert broker_config(kafka_broker, "group.initial.rebalance.delay.ms") == "0"


def test_topic_factory_unique_names_partitions_and_configs(kafka_broker, kafka_topic):
    first = kafka_topic(partitions=3, configs={"cleanup.policy": "compact"})
    second = kafka_topic()
    assert first != second
    assert first.startswith("test_topic_factory_unique_names")
    topics = kafka_broker.admin().list_topics(timeout=10).topics
    assert len(topics[first].partitions) == 3
    assert len(topics[second].partitions) == 1
    resource = ConfigResource(ResourceType.TOPIC, first)
    entries = kafka_broker.admin().describe_configs([resource])[resource].result(timeout=10)
    assert entries["cleanup.policy"].value == "compact"
    report("factory", topics=[first, second])


def test_a_dedicated_broker_with_its_own_configs(kafka_broker, kafka_broker_factory):
    dedicated = kafka_broker_factory(configs={"num.partitions": "5"})
    assert not dedicated.external
    assert dedicated.bootstrap != kafka_broker.bootstrap
    assert broker_config(dedicated, "num.partitions") == "5"
    assert broker_config(dedicated, "log.retention.ms") == "123456789"  # the ini's, inherited
    topic = dedicated.create_topic(partitions=2)
    assert len(dedicated.admin().list_topics(timeout=10).topics[topic].partitions) == 2
'''


def plugin_entry_point() -> str | None:
    return {ep.name: ep.value for ep in entry_points(group="pytest11")}.get("kafkette")


@pytest.fixture
def user_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with an ini file and a test module, no conftest: fixtures only from the plugin."""
    if plugin_entry_point() is None:
        pytest.fail("kafkette's pytest11 entry point is not installed: pip install -e . again")
    pytester.makeini(INI)
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def reports(project: pytest.Pytester) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in (project.path / "reports").glob("*.json")}


def session_data_dirs(project: pytest.Pytester) -> list[Path]:
    """The data dirs ``kafka_broker`` made under the inner runs' pytest tmp paths."""
    return sorted(project.path.glob("runpytest-[0-9]*/kafkette[0-9]*"))


def test_the_entry_point_names_the_plugin() -> None:
    assert plugin_entry_point() == "kafkette.pytest_plugin", (
        "kafkette's pytest11 entry point is not installed: pip install -e . again"
    )


def test_loading_the_plugin_imports_no_broker_and_no_client() -> None:
    script = (
        "import sys, kafkette.pytest_plugin, kafkette.testing; "
        "print([m for m in sys.modules if m.split('.')[0] in ('trio', 'confluent_kafka', "
        "'kafka', 'rich') or m.startswith('kafkette.broker')])"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_fixtures_run_an_in_process_broker(user_project: pytest.Pytester) -> None:
    result = user_project.runpytest_subprocess("-q", "-p", "no:cacheprovider", timeout=180)
    result.assert_outcomes(passed=4)
    produced = reports(user_project)["produce"]
    assert produced["external"] is False
    print(f"first record to a group consumer after {produced['first_record_s']:.3f} s")
    assert len(session_data_dirs(user_project)) == 1
    assert "external cluster" not in result.stdout.str()


def test_the_same_tests_against_an_external_cluster(user_project: pytest.Pytester) -> None:
    with kafkette.testing.broker(configs=INI_CONFIGS) as external:
        result = user_project.runpytest_subprocess(
            "-p", "no:cacheprovider", "--kafka-bootstrap", external.bootstrap, timeout=180
        )
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines([f"kafka fixtures: external cluster at {external.bootstrap}"])
        made = reports(user_project)
        assert made["produce"]["bootstrap"] == external.bootstrap
        assert made["produce"]["external"] is True
        # Topics kafka_topic made on the external cluster are gone after each test.
        left = set(external.admin().list_topics(timeout=10).topics)
        assert {made["produce"]["topic"], *made["factory"]["topics"]}.isdisjoint(left)
    assert session_data_dirs(user_project) == []


def test_the_environment_variable_points_the_fixtures_too(
    user_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    with kafkette.testing.broker(configs=INI_CONFIGS) as external:
        monkeypatch.setenv("KAFKETTE_TEST_BOOTSTRAP", external.bootstrap)
        # In this process (cheaper than a subprocess): the variable is read per session.
        result = user_project.runpytest_inprocess("-q", "-p", "no:cacheprovider", "-k", "produce")
        result.assert_outcomes(passed=1, deselected=3)
        assert reports(user_project)["produce"]["bootstrap"] == external.bootstrap
    assert session_data_dirs(user_project) == []


def test_a_malformed_ini_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    if plugin_entry_point() is None:
        pytest.fail("kafkette's pytest11 entry point is not installed: pip install -e . again")
    pytester.makeini("[pytest]\nkafkette_broker_configs =\n    log.retention.ms\n")
    pytester.makepyfile(test_user="def test_uses(kafka_broker):\n    pass\n")
    result = pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*kafkette_broker_configs: expected key=value*"])
