"""``kafkette users``: SCRAM credentials set by kafkette, read back by ``kafka-configs.sh
--describe --entity-type users`` on the same broker (kafkette and Apache Kafka 4.0), and a
SASL login with the password on a kafkette with a SCRAM listener (the reference's SCRAM
login is in test_acls.py, whose Kafka has a SASL listener)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from kafkette.broker.embedded import EmbeddedBroker
from tests.reference_kafka import reference_script_or_skip

TOOL_TIMEOUT_S = 120


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stderr
    return done.stdout


def kafka_tool(tool: str, bootstrap: str, *args: str) -> str:
    """Kafka's ``tool`` (kafka-configs.sh, kafka-acls.sh) on the broker at ``bootstrap``;
    its stdout. test_acls.py and test_quotas.py use it too."""
    script = reference_script_or_skip(f"{tool} runs on the JVM")
    done = subprocess.run(
        [str(script), "bin", tool, "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def kafka_configs(bootstrap: str, *args: str) -> str:
    return kafka_tool("kafka-configs.sh", bootstrap, *args)


def scram_line(text: str, user: str) -> set[str]:
    """``SCRAM credential configs for user-principal 'U' are A=iterations=N, ...``: the set."""
    prefix = f"SCRAM credential configs for user-principal '{user}' are "
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    return set(lines[0][len(prefix) :].split(", ")) if lines else set()


def test_users_set_by_kafkette_are_what_kafka_configs_describes(
    cli, any_bootstrap, unique_topic
) -> None:
    user = unique_topic("user")
    b = ("-b", any_bootstrap)
    done = ok(cli("users", "set", user, "--password", "s3cret", "--iterations", "8192", *b))
    assert done == f"Completed updating config for user {user}.\n"
    ok(cli("users", "set", user, "--mechanism", "scram-sha-512", *b, input="other-secret\n"))
    listed = json.loads(ok(cli("users", "list", user, "--json", *b)))
    assert [u["user"] for u in listed] == [user]
    assert sorted((c["mechanism"], c["iterations"]) for c in listed[0]["credentials"]) == [
        ("SCRAM-SHA-256", 8192),
        ("SCRAM-SHA-512", 4096),
    ]
    described = kafka_configs(
        any_bootstrap, "--describe", "--entity-type", "users", "--entity-name", user
    )
    assert scram_line(described, user) == {
        "SCRAM-SHA-256=iterations=8192",
        "SCRAM-SHA-512=iterations=4096",
    }
    plain = ok(cli("users", "list", *b)).splitlines()
    assert plain[0].split() == ["USER", "MECHANISM", "ITERATIONS"]
    assert sorted(line.split() for line in plain if line.startswith(user + " ")) == [
        [user, "SCRAM-SHA-256", "8192"],
        [user, "SCRAM-SHA-512", "4096"],
    ]

    ok(cli("users", "delete", user, "--mechanism", "SCRAM-SHA-512", *b))
    assert json.loads(ok(cli("users", "list", user, "--json", *b)))[0]["credentials"] == [
        {"mechanism": "SCRAM-SHA-256", "iterations": 8192}
    ]
    ok(cli("users", "delete", user, *b))
    gone = cli("users", "list", user, *b)
    assert (gone.returncode, gone.stderr) == (
        1,
        f"kafkette: user '{user}' has no SCRAM credentials: see `kafkette users list`, or "
        "add it with `kafkette users set`\n",
    )


def test_bad_users_input_is_one_line(cli, kafkette_bootstrap) -> None:
    b = ("-b", kafkette_bootstrap)
    few = cli("users", "set", "u1", "--password", "x", "--iterations", "100", *b)
    assert few.returncode == 1 and "(UNACCEPTABLE_CREDENTIAL)" in few.stderr, few.stderr
    for args, text in [
        (
            ("users", "set", "u1", "--password", "x", "--mechanism", "MD5"),
            "is not a SCRAM mechanism",
        ),
        (
            ("users", "set", "u1", "--add-config", "SCRAM-SHA-256=secret"),
            "is not MECHANISM=[password=...]",
        ),
        (
            ("users", "set", "u1", "--password", "x", "--add-config", "SCRAM-SHA-256=[password=y]"),
            "leave out --mechanism",
        ),
        (("users", "set", "u1"), "no password"),  # an empty stdin
    ]:
        done = cli(*args, *b, input="")
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("kafkette: ") and text in done.stderr, done.stderr


@pytest.fixture(scope="module")
def scram_kafkette(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "num.partitions": "1",
    }
    broker = EmbeddedBroker.start(tmp_path_factory.mktemp("users-scram"), configs)
    try:
        yield broker
    finally:
        broker.stop(timeout=30)


def test_a_user_set_by_kafkette_logs_in_with_its_password(cli, scram_kafkette) -> None:
    plain = str(scram_kafkette.broker.endpoint_for("PLAINTEXT"))
    sasl = str(scram_kafkette.broker.endpoint_for("SASL_PLAINTEXT"))
    ok(
        cli(
            "users",
            "set",
            "alice",
            "--add-config",
            "SCRAM-SHA-512=[iterations=4096,password=alice-secret]",
            "-b",
            plain,
        )
    )

    def as_alice(password: str, *args: str) -> subprocess.CompletedProcess[str]:
        return cli(
            *args,
            "-b",
            sasl,
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanism=SCRAM-SHA-512",
            "-X",
            "sasl.username=alice",
            "-X",
            f"sasl.password={password}",
            "--timeout",
            "5",
        )

    # confluent-kafka (users list) and the tools' own wire client (quotas) both log in...
    listed = json.loads(ok(as_alice("alice-secret", "users", "list", "--json")))
    assert listed == [
        {"user": "alice", "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]}
    ]
    assert ok(as_alice("alice-secret", "quotas", "describe", "--json")) == "[]\n"
    # ...and neither does with a wrong password.
    assert as_alice("wrong", "users", "list").returncode != 0
    refused = as_alice("wrong", "quotas", "describe")
    assert refused.returncode == 1
    assert "SASL login as 'alice' refused" in refused.stderr
    assert "(SASL_AUTHENTICATION_FAILED)" in refused.stderr
