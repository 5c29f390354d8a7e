"""``kafkette configs``: the CLI as a subprocess against kafkette and the reference Kafka."""

from __future__ import annotations

import json


def ok_json(done):
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def test_describe_and_alter_topic_configs(cli, any_bootstrap, unique_topic):
    topic = unique_topic("configs")
    b = ("-b", any_bootstrap)
    created = cli("topics", "create", topic, "--config", "retention.ms=86400000", *b)
    assert created.returncode == 0, created.stderr

    doc = ok_json(cli("configs", "describe", "--topic", topic, "--json", *b))
    assert doc == {"resource_type": "topic", "name": topic, "configs": [
        {"name": "retention.ms", "value": "86400000", "source": "DYNAMIC_TOPIC_CONFIG",
         "read_only": False, "sensitive": False}]}

    everything = ok_json(cli("configs", "describe", "--topic", topic, "--all", "--json", *b))
    by_name = {c["name"]: c for c in everything["configs"]}
    assert by_name["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    assert (by_name["segment.ms"]["value"], by_name["segment.ms"]["source"]) == (
        "604800000", "DEFAULT_CONFIG")
    assert by_name["cleanup.policy"]["value"] == "delete"

    altered = cli("configs", "alter", "--topic", topic,
                  "--add-config", "cleanup.policy=[compact,delete],segment.ms=600000",
                  "--delete-config", "retention.ms", *b)
    assert (altered.returncode, altered.stdout) == (
        0, f"Completed updating config for topic {topic}.\n"), altered.stderr
    doc = ok_json(cli("configs", "describe", "--topic", topic, "--json", *b))
    assert [(c["name"], c["value"]) for c in doc["configs"]] == [
        ("cleanup.policy", "compact,delete"), ("segment.ms", "600000")]

    plain = cli("configs", "describe", "--topic", topic, *b).stdout.splitlines()
    assert [line.split() for line in plain] == [
        ["CONFIG", "VALUE", "SOURCE"], ["cleanup.policy", "compact,delete", "DYNAMIC_TOPIC_CONFIG"],
        ["segment.ms", "600000", "DYNAMIC_TOPIC_CONFIG"]]


def test_bad_configs_and_missing_topics_are_one_line_errors(cli, kafkette_bootstrap,
                                                            unique_topic):
    topic = unique_topic("badcfg")
    b = ("-b", kafkette_bootstrap)
    assert cli("topics", "create", topic, *b).returncode == 0

    wrong = cli("configs", "alter", "--topic", topic, "--add-config", "retention.ms=soon", *b)
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"kafkette: could not alter the configs of topic '{topic}': ")
    assert wrong.stderr.endswith("(INVALID_CONFIG): check the config names and values\n")
    assert ok_json(cli("configs", "describe", "--topic", topic, "--json", *b))["configs"] == []

    missing = cli("configs", "describe", "--topic", "no-such-topic", *b)
    assert (missing.returncode, missing.stderr) == (
        1, "kafkette: topic 'no-such-topic' does not exist: see `kafkette topics list`\n")
    nothing = cli("configs", "alter", "--topic", topic, *b)
    assert nothing.returncode == 2 and "nothing to alter" in nothing.stderr
    both = cli("configs", "alter", "--topic", topic, "--add-config", "a=1", "--delete-config",
               "a", *b)
    assert both.returncode == 2 and "both added and deleted" in both.stderr
    which = cli("configs", "describe", *b)
    assert which.returncode == 2 and "one of the arguments --topic --broker --group" in which.stderr


def test_broker_configs_with_sources(cli, kafkette_bootstrap):
    b = ("-b", kafkette_bootstrap)
    doc = ok_json(cli("configs", "describe", "--broker", "--all", "--json", *b))
    assert doc["resource_type"] == "broker" and doc["name"] == "1"
    by_name = {c["name"]: c for c in doc["configs"]}
    # The fixture sets these two when it starts kafkette; the rest are Kafka's defaults.
    assert by_name["group.initial.rebalance.delay.ms"]["value"] == "0"
    assert by_name["num.partitions"]["value"] == "1"
    assert (by_name["log.retention.hours"]["value"], by_name["log.retention.hours"]["source"]) == (
        "168", "DEFAULT_CONFIG")
    assert ok_json(cli("configs", "describe", "--broker", "1", "--json", *b))["name"] == "1"
    bad = cli("configs", "describe", "--broker", "one", *b)
    assert bad.returncode == 2 and "is not a broker id" in bad.stderr


def test_group_configs_where_the_broker_has_them(cli, any_bootstrap, request):
    """Kafka 4.0 keeps configs per group (KIP-848); kafkette serves the share groups' ones
    (share.*, docs/share-groups.md)."""
    b = ("-b", any_bootstrap)
    done = cli("configs", "describe", "--group", "some-group", "--all", "--json", *b)
    doc = ok_json(done)
    names = {c["name"] for c in doc["configs"]}
    if "kafkette" in request.node.callspec.id:
        assert names >= {"share.auto.offset.reset", "share.record.lock.duration.ms"}
        return
    assert names >= {"consumer.session.timeout.ms"}


def test_help_has_examples(cli):
    helped = cli("configs", "alter", "--help")
    assert helped.returncode == 0
    assert "examples:\n  kafkette configs alter --topic clicks --add-config" in helped.stdout
