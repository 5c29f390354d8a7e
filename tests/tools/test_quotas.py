"""``kafkette quotas``: quotas set by kafkette are what ``kafka-configs.sh --describe`` shows,
and quotas set by ``kafka-configs.sh --alter`` are what kafkette shows, on kafkette and on
Apache Kafka 4.0. Only named entities (never a default user or client, which would throttle
the other tests' clients on these shared brokers)."""

from __future__ import annotations

import json

from tests.tools.test_users import kafka_configs, ok


def quota_line(text: str) -> dict[str, float]:
    """``Quota configs for ... are k=v, k=v``: the values."""
    lines = [line for line in text.splitlines() if line.startswith("Quota configs for ")]
    assert len(lines) == 1, text
    pairs = lines[0].split(" are ", 1)[1].split(", ")
    return {k: float(v) for k, v in (pair.split("=", 1) for pair in pairs)}


def described(cli, bootstrap: str, *entity: str) -> list[dict]:
    return json.loads(ok(cli("quotas", "describe", *entity, "--json", "-b", bootstrap)))


def test_quotas_read_both_ways_with_kafka_configs(cli, any_bootstrap, unique_topic) -> None:
    user, client, other = unique_topic("qu"), unique_topic("qc"), unique_topic("qo")
    b = ("-b", any_bootstrap)
    done = ok(
        cli(
            "quotas",
            "alter",
            "--user",
            user,
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            *b,
        )
    )
    assert done == f"Completed updating quotas for user {user}.\n"
    ok(
        cli(
            "quotas",
            "alter",
            "--user-defaults",
            "--client",
            client,
            "--add-config",
            "request_percentage=12.5",
            *b,
        )
    )
    assert quota_line(
        kafka_configs(any_bootstrap, "--describe", "--entity-type", "users", "--entity-name", user)
    ) == {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 2097152.0}
    assert quota_line(
        kafka_configs(
            any_bootstrap,
            "--describe",
            "--entity-type",
            "users",
            "--entity-default",
            "--entity-type",
            "clients",
            "--entity-name",
            client,
        )
    ) == {"request_percentage": 12.5}

    # The other way round: kafka-configs.sh sets, kafkette reads.
    kafka_configs(
        any_bootstrap,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        user,
        "--entity-type",
        "clients",
        "--entity-name",
        other,
        "--add-config",
        "producer_byte_rate=4096",
    )
    assert described(cli, any_bootstrap, "--user", user, "--client", other) == [
        {"entity": {"user": user, "client-id": other}, "configs": {"producer_byte_rate": 4096.0}}
    ]
    assert described(cli, any_bootstrap, "--user-defaults", "--client", client) == [
        {"entity": {"user": None, "client-id": client}, "configs": {"request_percentage": 12.5}}
    ]
    # --user alone: the user's own entity, not its user + client-id ones (strict, as Kafka).
    assert described(cli, any_bootstrap, "--user", user) == [
        {
            "entity": {"user": user},
            "configs": {"consumer_byte_rate": 2097152.0, "producer_byte_rate": 1048576.0},
        }
    ]
    plain = ok(cli("quotas", "describe", "--user", user, "--client", other, *b)).splitlines()
    assert [line.split() for line in plain] == [
        ["USER", "CLIENT-ID", "IP", "QUOTA", "VALUE"],
        [user, other, "-", "producer_byte_rate", "4096"],
    ]

    ok(cli("quotas", "alter", "--user", user, "--delete-config", "consumer_byte_rate", *b))
    ok(
        cli(
            "quotas",
            "alter",
            "--user",
            user,
            "--client-id",
            other,
            "--delete-config",
            "producer_byte_rate",
            *b,
        )
    )
    assert described(cli, any_bootstrap, "--user", user) == [
        {"entity": {"user": user}, "configs": {"producer_byte_rate": 1048576.0}}
    ]
    assert described(cli, any_bootstrap, "--user", user, "--client", other) == []


def test_ip_quotas_and_refusals(cli, kafkette_bootstrap) -> None:
    b = ("-b", kafkette_bootstrap)
    ok(
        cli(
            "quotas",
            "alter",
            "--ip",
            "192.0.2.33",
            "--add-config",
            "connection_creation_rate=7",
            *b,
        )
    )
    assert described(cli, kafkette_bootstrap, "--ip", "192.0.2.33") == [
        {"entity": {"ip": "192.0.2.33"}, "configs": {"connection_creation_rate": 7.0}}
    ]
    wrong = cli("quotas", "alter", "--ip", "192.0.2.33", "--add-config", "producer_byte_rate=1", *b)
    assert (wrong.returncode, wrong.stderr) == (
        1,
        "kafkette: could not alter quotas: Invalid configuration key producer_byte_rate "
        "(INVALID_REQUEST)\n",
    )
    for args, text in [
        (("--user", "u", "--add-config", "producer_byte_rate=fast"), "a quota is a number"),
        (("--add-config", "producer_byte_rate=1"), "name the entity"),
        (("--ip", "192.0.2.1", "--user", "u", "--add-config", "a=1"), "an ip quota stands alone"),
        (("--user", "u"), "nothing to alter"),
        (("--user", "u", "--user-defaults", "--add-config", "a=1"), "name two entities"),
    ]:
        done = cli("quotas", "alter", *args, *b)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("kafkette: ") and text in done.stderr, done.stderr
