"""``kafkette acls`` (and the secured walk-through of docs/security.md) against a kafkette and
an Apache Kafka 4.0, each with an authorizer and a SASL_PLAINTEXT listener for SCRAM users.

Both brokers are this module's own (the session's have no authorizer): a kafkette in this
process and a reference Kafka started with ``KAFKA_REF_CONFIG`` lines for StandardAuthorizer,
``super.users=User:ANONYMOUS`` (the PLAINTEXT admin may do everything) and the SASL listener,
stopped at the module's end. What ``kafkette acls list`` prints is compared with what
``kafka-acls.sh --list`` prints on the same broker, and ACLs added by either tool are read
by the other.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from bench.harness.raw_wire import free_port
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.cli import build_parser
from tests.reference_kafka import reference_script_or_skip
from tests.tools.test_users import kafka_tool, ok

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class Secured:
    name: str
    bootstrap: str  # PLAINTEXT, User:ANONYMOUS, a super user
    sasl_bootstrap: str  # SASL_PLAINTEXT, SCRAM users


def sasl_settings(user: str, password: str, mechanism: str = "SCRAM-SHA-256") -> list[str]:
    return [
        "-X",
        "security.protocol=SASL_PLAINTEXT",
        "-X",
        f"sasl.mechanism={mechanism}",
        "-X",
        f"sasl.username={user}",
        "-X",
        f"sasl.password={password}",
    ]


@pytest.fixture(scope="module")
def secured_kafkette(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    configs = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:ANONYMOUS",
        "num.partitions": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    broker = EmbeddedBroker.start(tmp_path_factory.mktemp("acls-kafkette"), configs)
    try:
        yield Secured(
            "kafkette",
            str(broker.broker.endpoint_for("PLAINTEXT")),
            str(broker.broker.endpoint_for("SASL_PLAINTEXT")),
        )
    finally:
        broker.stop(timeout=30)


def _free_port_run(count: int) -> int:
    """A port P with P..P+count-1 free a moment ago (kafka-ref's controller is on P+1)."""
    for _ in range(50):
        port = free_port()
        try:
            with contextlib.ExitStack() as stack:
                for offset in range(1, count):
                    other = stack.enter_context(socket.socket())
                    other.bind(("127.0.0.1", port + offset))
        except OSError:
            continue
        return port
    raise RuntimeError("no free run of ports")


@pytest.fixture(scope="module")
def secured_kafka() -> Iterator[Secured]:
    script = reference_script_or_skip("the reference Kafka runs on the JVM")
    port = _free_port_run(3)
    sasl = port + 2
    extra = "\n".join(
        [
            f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{port + 1},"
            f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
            f"listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={SCRAM_MODULE} required;",
            f"listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} required;",
            f"authorizer.class.name={STANDARD_AUTHORIZER}",
            "super.users=User:ANONYMOUS",
        ]
    )
    env = {**os.environ, "KAFKA_REF_CONFIG": extra}
    failure = ""
    for _ in range(2):  # a generated cluster id that begins with '-' fails the format step
        done = subprocess.run(
            [str(script), "start", str(port)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
        if done.returncode == 0:
            break
        failure = done.stderr.strip()[-300:]
    else:
        pytest.skip(f"the reference Kafka with an authorizer did not start: {failure}")
    try:
        yield Secured("kafka", f"127.0.0.1:{port}", f"127.0.0.1:{sasl}")
    finally:
        subprocess.run(
            [str(script), "stop", str(port)], capture_output=True, timeout=120, check=False
        )


@pytest.fixture(params=["kafkette", "kafka"])
def secured(request: pytest.FixtureRequest) -> Secured:
    return request.getfixturevalue(f"secured_{request.param}")


def kafka_acls(secured: Secured, *args: str) -> str:
    """kafka-acls.sh on the same broker (its PLAINTEXT listener)."""
    return kafka_tool("kafka-acls.sh", secured.bootstrap, *args)


def blocks(text: str) -> dict[str, set[str]]:
    """kafka-acls.sh's list text: resource heading -> its entry lines (Kafka's order is a
    hash order; what is listed must be the same)."""
    found: dict[str, set[str]] = {}
    heading = None
    for line in text.splitlines():
        if line.startswith("Current ACLs for resource "):
            heading = line.rstrip()
            found[heading] = set()
        elif line.startswith("\t") and heading is not None:
            found[heading].add(line.strip())
    return found


def topic_line(name: str, pattern: str = "LITERAL", kind: str = "TOPIC") -> str:
    return (
        f"Current ACLs for resource `ResourcePattern(resourceType={kind}, name={name}, "
        f"patternType={pattern})`:"
    )


def entry(principal: str, operation: str, permission: str = "ALLOW", host: str = "*") -> str:
    return (
        f"(principal={principal}, host={host}, operation={operation}, permissionType={permission})"
    )


def test_acls_listed_like_kafka_acls_sh_and_read_both_ways(cli, secured, unique_topic) -> None:
    topic = unique_topic("acl")
    b = ("-b", secured.bootstrap)
    created = cli(
        "acls",
        "create",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "write",
        "--topic",
        topic,
        *b,
    )
    assert ok(created) == (
        f"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name={topic}, "
        "patternType=LITERAL)`: \n \t"
        + entry("User:alice", "READ")
        + "\n\t"
        + entry("User:alice", "WRITE")
        + "\n\n"
    )
    again = ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Read",
            "--topic",
            topic,
            *b,
        )
    )
    assert again == (
        f"Acl (pattern=ResourcePattern(resourceType=TOPIC, name={topic}, "
        f"patternType=LITERAL), entry={entry('User:alice', 'READ')}) already "
        "exists.\n"
    )
    ok(
        cli(
            "acls",
            "create",
            "--deny-principal",
            "User:bob",
            "--deny-host",
            "10.0.0.1",
            "--operation",
            "All",
            "--topic",
            f"{topic}-",
            "--resource-pattern-type",
            "prefixed",
            *b,
        )
    )
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            "User:carol",
            "--consumer",
            "--topic",
            topic,
            "--group",
            f"{topic}-app",
            *b,
        )
    )
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            "User:carol",
            "--producer",
            "--idempotent",
            "--topic",
            topic,
            "--transactional-id",
            f"{topic}-tx",
            *b,
        )
    )
    # Kafka's tool adds one the other way round.
    kafka_acls(
        secured,
        "--add",
        "--allow-principal",
        "User:dave",
        "--operation",
        "DescribeConfigs",
        "--group",
        f"{topic}-app",
    )

    ours = blocks(ok(cli("acls", "list", *b)))
    theirs = blocks(kafka_acls(secured, "--list"))
    mine = {k: v for k, v in theirs.items() if topic in k}
    assert {k: v for k, v in ours.items() if topic in k} == mine
    assert mine[topic_line(topic)] == {
        entry("User:alice", "READ"),
        entry("User:alice", "WRITE"),
        entry("User:carol", "READ"),
        entry("User:carol", "DESCRIBE"),
        entry("User:carol", "WRITE"),
        entry("User:carol", "CREATE"),
    }
    assert mine[topic_line(f"{topic}-", "PREFIXED")] == {
        entry("User:bob", "ALL", "DENY", "10.0.0.1")
    }
    assert mine[topic_line(f"{topic}-app", kind="GROUP")] == {
        entry("User:carol", "READ"),
        entry("User:dave", "DESCRIBE_CONFIGS"),
    }
    assert mine[topic_line(f"{topic}-tx", kind="TRANSACTIONAL_ID")] == {
        entry("User:carol", "WRITE"),
        entry("User:carol", "DESCRIBE"),
    }
    cluster = ours[topic_line("kafka-cluster", kind="CLUSTER")]
    assert entry("User:carol", "IDEMPOTENT_WRITE") in cluster

    # --resource-pattern-type match: every pattern that applies to the topic's name.
    matching = blocks(
        ok(cli("acls", "list", "--topic", f"{topic}-x", "--resource-pattern-type", "match", *b))
    )
    assert set(matching) == {topic_line(f"{topic}-", "PREFIXED")}
    doc = json.loads(
        ok(cli("acls", "list", "--topic", topic, "--principal", "User:alice", "--json", *b))
    )
    assert doc == [
        {
            "resource_type": "TOPIC",
            "name": topic,
            "pattern_type": "LITERAL",
            "principal": "User:alice",
            "host": "*",
            "operation": op,
            "permission_type": "ALLOW",
        }
        for op in ("READ", "WRITE")
    ]

    # delete: one entry, then every ACL of a resource, as kafka-acls.sh --remove does.
    removed = ok(
        cli(
            "acls",
            "delete",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Write",
            "--topic",
            topic,
            "--force",
            *b,
        )
    )
    assert removed == (
        f"Removed ACLs for resource `ResourcePattern(resourceType=TOPIC, "
        f"name={topic}, patternType=LITERAL)`:\n\t" + entry("User:alice", "WRITE") + "\n\n"
    )
    ok(cli("acls", "delete", "--group", f"{topic}-app", "--force", *b))
    after = blocks(kafka_acls(secured, "--list", "--topic", topic, "--group", f"{topic}-app"))
    assert after == {topic_line(topic): mine[topic_line(topic)] - {entry("User:alice", "WRITE")}}


def test_a_scram_user_produces_and_consumes_what_its_acls_allow(cli, secured, unique_topic) -> None:
    """docs/security.md's walk-through: a user, its ACLs, a produce and a consume as that user
    with -X settings, and a refusal."""
    topic, other = unique_topic("alice"), unique_topic("other")
    user = unique_topic("alice")
    b = ("-b", secured.bootstrap)
    ok(cli("topics", "create", topic, other, *b))
    ok(cli("users", "set", user, "--password", "alice-secret", *b))
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            f"User:{user}",
            "--producer",
            "--topic",
            topic,
            *b,
        )
    )
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            f"User:{user}",
            "--consumer",
            "--topic",
            topic,
            "--group",
            f"{user}-app",
            *b,
        )
    )
    alice = ("-b", secured.sasl_bootstrap, *sasl_settings(user, "alice-secret"))
    ok(cli("produce", topic, *alice, input="hello\n"))
    assert ok(cli("consume", topic, "-G", f"{user}-app", "-e", *alice)) == "hello\n"
    # alice sees the other topic (Describe) but may not write to it.
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            f"User:{user}",
            "--operation",
            "Describe",
            "--topic",
            other,
            *b,
        )
    )
    denied = cli("produce", other, *alice, input="nope\n")
    assert denied.returncode == 1
    assert "Topic authorization failed" in denied.stderr, denied.stderr
    # alice may not list ACLs (no Describe on the cluster): one line, exit 1.
    refused = cli("acls", "list", *alice)
    assert refused.returncode == 1
    assert refused.stderr.startswith("kafkette: could not list ACLs: ")
    assert "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr
    # Nor list SCRAM users: Kafka checks Describe on the cluster (Alter to change them).
    users = cli("users", "list", *alice)
    assert users.returncode == 1
    assert "with Describe on the cluster" in users.stderr, users.stderr
    setting = cli("users", "set", f"{user}-2", "--password", "x", *alice)
    assert setting.returncode == 1
    assert "with Alter on the cluster" in setting.stderr, setting.stderr
    wrong = cli(
        "users",
        "list",
        "-b",
        secured.sasl_bootstrap,
        *sasl_settings(user, "wrong"),
        "--timeout",
        "5",
    )
    assert wrong.returncode != 0


def test_delegation_token_acls_go_through_the_wire_client(cli, secured, unique_topic) -> None:
    token = unique_topic("token")
    b = ("-b", secured.bootstrap)
    ok(
        cli(
            "acls",
            "create",
            "--allow-principal",
            "User:alice",
            "--operation",
            "Describe",
            "--delegation-token",
            token,
            *b,
        )
    )
    heading = topic_line(token, kind="DELEGATION_TOKEN")
    assert blocks(ok(cli("acls", "list", *b)))[heading] == {entry("User:alice", "DESCRIBE")}
    ok(cli("acls", "delete", "--delegation-token", token, "--force", *b))
    assert heading not in blocks(ok(cli("acls", "list", "--delegation-token", token, *b)))


def test_usage_and_refusals_are_one_line(cli, secured_kafkette, kafkette_bootstrap) -> None:
    b = ("-b", secured_kafkette.bootstrap)
    cases = [
        (("acls", "delete", "--topic", "t"), "add --force"),
        (
            ("acls", "create", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"),
            "is not an operation",
        ),
        (
            (
                "acls",
                "create",
                "--allow-principal",
                "User:a",
                "--operation",
                "Write",
                "--group",
                "g",
            ),
            "ResourceType GROUP only supports operations",
        ),
        (
            ("acls", "create", "--allow-principal", "User:a", "--producer"),
            "with --producer you must name a --topic",
        ),
        (("acls", "create", "--operation", "Read", "--topic", "t"), "name who"),
        (("acls", "create", "--allow-principal", "alice", "--topic", "t"), "is not TYPE:NAME"),
        (
            (
                "acls",
                "create",
                "--allow-principal",
                "User:a",
                "--topic",
                "t",
                "--resource-pattern-type",
                "match",
            ),
            "is not valid when adding ACLs",
        ),
        (("acls", "list", "--resource-pattern-type", "glob"), "is not valid"),
    ]
    for args, text in cases:
        done = cli(*args, *b)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("kafkette: ") and text in done.stderr, (args, done.stderr)
        assert done.stderr.count("\n") == 1
    plain = cli("acls", "list", "-b", kafkette_bootstrap)  # no authorizer there
    assert plain.returncode == 1
    assert "(SECURITY_DISABLED)" in plain.stderr and "authorizer.class.name" in plain.stderr


def help_examples() -> list[str]:
    """The example lines of ``kafkette acls --help`` and its actions' help."""
    parser = build_parser()
    acls = next(
        a for a in parser._actions if hasattr(a, "choices") and a.choices and "acls" in a.choices
    ).choices["acls"]
    parsers = [
        acls,
        *next(
            a for a in acls._actions if hasattr(a, "choices") and isinstance(a.choices, dict)
        ).choices.values(),
    ]
    lines: list[str] = []
    for sub in parsers:
        for line in (sub.epilog or "").split("examples:", 1)[-1].splitlines():
            if line.startswith("  kafkette") and line.strip() not in lines:
                lines.append(line.strip())
    return lines


def test_every_acls_help_example_runs(secured_kafkette, monkeypatch) -> None:
    """test_newcomer.py leaves acls out (its broker has no authorizer): they run here."""
    monkeypatch.setenv("KAFKETTE_BOOTSTRAP", secured_kafkette.bootstrap)
    examples = help_examples()
    assert len(examples) >= 10
    for line in examples:
        words = shlex.split(line, comments=True)
        parser = build_parser()
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parser.parse_args(words[1:])
            code = args.run(args)
        assert code == 0, f"{line}\nexit {code}: {err.getvalue().strip()}"
        assert re.search(r"kafkette: ", err.getvalue()) is None, err.getvalue()
