"""What a new user meets in the first minutes, against a fresh ``kafkette serve``.

One ``kafkette serve`` child for the module, its log kept in a file: README's tour (a group
member's run among it) leaves no WARNING in the broker's log; every example of the tools'
``--help`` runs as shown (from a directory holding the data dir as ``data``, in a shell, or
in this process when it is a plain admin command); an invalid topic name is one immediate
line (and one throttled line in the broker's log); a host that does not resolve is said to
be one; ``configs`` says what kafkette does with broker configs.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness.serve_process import ServeFailed, ServeProcess, serve_args
from kafkette.broker.groups.partitioning import partition_for_group
from kafkette.cli import build_parser

TIMEOUT_S = 60
# The help's examples that are not the tools' (their own helpers test them): the brokers,
# the schema registry's (it needs `serve --schema-registry`), and acls' (they need a broker
# with an authorizer: tests/tools/test_acls.py runs them against one).
NOT_TOOLS = ("serve", "cluster", "schemas", "acls")
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default
BASE_TOPICS = {"clicks": 3, "views": 1, "orders": 1}
BASE_GROUPS = ("my-app", "other-app", "old-app")
# Examples that need what a fresh broker cannot have (by the line's start), with why; their
# own tests run them.
NEEDS_MORE = {
    "kafkette transactions describe ": "a transactional id in use (test_transactions_tool.py)",
    "kafkette transactions abort ": "a hanging transaction (test_transactions_tool.py)",
}


def help_examples() -> list[str]:
    """Every example line of every tool's ``--help`` (the indented lines after
    ``examples:``), once each, in the order the help shows them."""
    found: list[str] = []
    parsers = [build_parser()]
    while parsers:
        parser = parsers.pop(0)
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                parsers += [sub for name, sub in action.choices.items() if name not in NOT_TOOLS]
        if parser.prog == "kafkette":
            continue  # the overview's examples start `serve`: not a tool's
        epilog = parser.epilog or ""
        if "examples:" not in epilog:
            continue
        for line in epilog.split("examples:", 1)[1].splitlines():
            if line.startswith("  ") and line.strip() not in found:
                found.append(line.strip())
    return found


ALL_EXAMPLES = help_examples()
# What this module runs: every example but those whose own tests run them (NEEDS_MORE).
EXAMPLES = [line for line in ALL_EXAMPLES if not line.startswith(tuple(NEEDS_MORE))]


class Served(ServeProcess):
    def __init__(self, home: Path) -> None:
        configs = {"group.initial.rebalance.delay.ms": "0"}
        super().__init__(serve_args(home / "data", configs=configs), home / "broker.log")
        self.home = home
        self.changed = True  # by the last example: the baseline is checked again
        self.wait_ready(30)

    def log_mark(self) -> int:
        return len(self.stderr_text())

    def log_since(self, mark: int) -> str:
        return self.stderr_text()[mark:]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("newcomer")
    broker = Served(home)
    # `kafkette` on the PATH of the examples' shell: this interpreter's kafkette.
    bin_dir = home / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "kafkette"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kafkette "$@"\n')
    wrapper.chmod(0o755)
    (home / "events.txt").write_text("opened\nclicked\nclosed\n")
    (home / "lines.txt").write_text("a\nb\nc\n")
    try:
        yield broker
    finally:
        try:
            broker.terminate(30)
        except ServeFailed:
            pass


def shell(served: Served, line: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """``line`` in bash, in the served broker's home, as a user types it."""
    env = {
        **os.environ,
        "KAFKETTE_BOOTSTRAP": served.bootstrap,
        "PATH": f"{served.home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        ["bash", "-c", line],
        cwd=served.home,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        **kwargs,
    )  # type: ignore[call-overload]


def cli(served: Served, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafkette", *args],
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
        env={**os.environ, "KAFKETTE_BOOTSTRAP": served.bootstrap},
    )


# --- the state the examples take for granted -------------------------------------------------


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = -1) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for value in values:
        producer.produce(topic, value, key=b"user-1", partition=partition)
        producer.flush(10)  # a batch each: an index entry once past 4 KiB
    assert producer.flush(10) == 0


def commit(bootstrap: str, group: str, offsets: list[TopicPartition]) -> None:
    """Committed offsets and no member: a group `groups reset-offsets|delete` may change."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()


def ensure_baseline(bootstrap: str) -> None:
    """The topics and groups the examples name, made again when an example removed them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = admin.list_topics(timeout=10).topics
    missing = [name for name in BASE_TOPICS if name not in topics or topics[name].error]
    if missing:
        # orders: written through (flush.messages=1), so that its index is on disk for
        # dump-log, and two batches past 4 KiB, so that the index has an entry.
        configs = {"orders": {"flush.messages": "1"}}
        new = [NewTopic(n, BASE_TOPICS[n], 1, config=configs.get(n, {})) for n in missing]
        futures = admin.create_topics(new)
        for future in futures.values():
            future.result(15)
        for name in missing:
            size = 5000 if name == "orders" else 10
            for partition in range(BASE_TOPICS[name]):
                produce(bootstrap, name, [b"x" * size] * 2, partition=partition)
    groups = {g.group_id for g in admin.list_consumer_groups().result(15).valid}
    for group in BASE_GROUPS:
        if group not in groups:
            commit(bootstrap, group, [TopicPartition("clicks", p, 1) for p in range(3)])


def offsets_partition_7_group() -> str:
    """A group whose offsets land in __consumer_offsets-7 (dump-log --offsets-decoder)."""
    return next(
        f"g{i}" for i in range(10_000) if partition_for_group(f"g{i}", OFFSETS_PARTITIONS) == 7
    )


def first_setup(served: Served) -> None:
    """Once: a share group my-workers (its member has left) and __consumer_offsets-7."""
    bootstrap = served.bootstrap
    ensure_baseline(bootstrap)
    commit(bootstrap, offsets_partition_7_group(), [TopicPartition("clicks", 0, 1)])
    member = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": "my-workers"})
    try:
        member.subscribe(["clicks"])
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            member.poll(0.2)
            described = run_here(
                ["kafkette", "groups", "describe", "my-workers", "--state", "-b", bootstrap]
            )
            if described[0] == 0:
                break
    finally:
        member.close()


def prepare(served: Served, line: str, words: list[str]) -> None:
    """The state ``line`` needs beyond the baseline: what it creates does not exist yet,
    what it grows is small enough, what it reads with ``-c N`` has N records."""
    bootstrap = served.bootstrap
    if served.changed:  # the last example may have deleted something
        ensure_baseline(bootstrap)
    served.changed = bool({"create", "delete", "--partitions"} & set(words))
    if words[:3] == ["kafkette", "topics", "create"] and "--if-not-exists" not in words:
        names = [w for w in words[3:] if not w.startswith("-")]
        names = [n for n in names if "=" not in n and not n.isdigit()]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.delete_topics(names, operation_timeout=10).values():
            try:
                future.result(15)
            except Exception:  # not there: nothing to delete
                pass
    if words[:3] == ["kafkette", "topics", "alter"] and "--partitions" in words:
        wanted = int(words[words.index("--partitions") + 1])
        admin = AdminClient({"bootstrap.servers": bootstrap})
        if len(admin.list_topics("clicks", timeout=10).topics["clicks"].partitions) >= wanted:
            admin.delete_topics(["clicks"], operation_timeout=10)["clicks"].result(15)
            ensure_baseline(bootstrap)
    if words[:2] == ["kafkette", "consume"] and "-c" in words:
        produce(bootstrap, words[2], [b"x"] * int(words[words.index("-c") + 1]))


def follows(words: list[str]) -> bool:
    """A consume that follows its topic until Ctrl-C (no -e, no -c)."""
    return words[:2] == ["kafkette", "consume"] and not {"-e", "-c"} & set(words)


# Tools run in this process when the line is a plain command (no pipe or redirection): the
# same code as the command, without an interpreter start and imports per example (the
# examples run in about half the CPU time). produce and consume read stdin and write to
# stdout's descriptor: always a shell.
IN_PROCESS = (
    "topics", "configs", "groups", "dump-log", "metadata", "users", "quotas", "transactions",
    "reassign", "elect-leaders",
)
SHELL_SYNTAX = re.compile(r"[|<>;&]")


def run_here(words: list[str]) -> tuple[int, str, str]:
    """``kafkette WORDS`` in this process: (exit code, stdout, stderr)."""
    parser = build_parser()  # now: the default -b is $KAFKETTE_BOOTSTRAP's
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            args = parser.parse_args(words[1:])
            code = args.run(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def readme_tour() -> list[str]:
    """The commands of README's "A short tour" after `kafkette serve`."""
    text = (Path(__file__).parents[2] / "README.md").read_text()
    block = text.split("## A short tour", 1)[1].split("```", 2)[1]
    return [
        line
        for line in block.splitlines()
        if line.strip() and not line.startswith("kafkette serve")
    ]


def test_the_readme_tour_leaves_no_warning_in_the_brokers_log(served: Served) -> None:
    """First in the module, on the fresh broker (the request log warns once per 10 s per
    kind: an earlier join would hide this one's). A group member's join is answered
    MEMBER_ID_REQUIRED first (KIP-394): a step of the protocol, not a WARNING."""
    tour = readme_tour()
    assert any("-G my-app" in line for line in tour), tour
    for line in tour:
        done = shell(served, "set -o pipefail; " + line)
        assert done.returncode == 0, f"{line}\nexit {done.returncode}: {done.stderr.strip()}"
    assert " WARNING " not in served.stderr_text()


@pytest.fixture(scope="module")
def examples_state(served: Served) -> Served:
    first_setup(served)
    return served


@pytest.mark.parametrize("line", EXAMPLES)
def test_every_help_example_runs_as_shown(
    examples_state: Served, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = examples_state
    if "| jq" in line and shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    # The command that decides the state (the producer of a `consume | produce` pipe).
    words = shlex.split(line.split("|")[-1] if "| kafkette" in line else line, comments=True)
    prepare(served, line, words)
    if words[1] in IN_PROCESS and not SHELL_SYNTAX.search(line.split("#")[0]):
        monkeypatch.setenv("KAFKETTE_BOOTSTRAP", served.bootstrap)
        monkeypatch.chdir(served.home)
        code, _, stderr = run_here(words)
        assert code == 0, f"{line}\nexit {code}: {stderr.strip()}"
        return
    if follows(words):  # runs until Ctrl-C: 130, nothing on stderr
        env = {**os.environ, "KAFKETTE_BOOTSTRAP": served.bootstrap}
        args = [sys.executable, "-m", "kafkette", *words[1:]]
        with subprocess.Popen(
            args,
            cwd=served.home,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        ) as follower:
            time.sleep(1)
            assert follower.poll() is None, follower.stderr.read() if follower.stderr else ""
            follower.send_signal(signal.SIGINT)
            _, stderr = follower.communicate(timeout=TIMEOUT_S)
        assert (follower.returncode, stderr) == (130, "")
        return
    done = shell(served, "set -o pipefail; " + line)
    assert done.returncode == 0, f"{line}\nexit {done.returncode}: {done.stderr.strip()}"


def test_examples_were_found() -> None:
    commands = {line.split()[1] for line in EXAMPLES if line.startswith("kafkette ")}
    assert commands >= {
        "topics", "produce", "consume", "groups", "configs", "dump-log", "metadata", "users",
        "quotas", "transactions", "reassign", "elect-leaders", "completion",
    }
    assert len(EXAMPLES) > 40
    # Every example left out here is one the list names (the list cannot outlive its lines).
    for start in NEEDS_MORE:
        assert any(line.startswith(start) for line in ALL_EXAMPLES), start


# --- what a newcomer meets --------------------------------------------------------------------


INVALID = (
    "kafkette: topic 'bad topic!' is not a valid topic name: the broker answered "
    "INVALID_TOPIC_EXCEPTION (The request attempted to perform an operation on an invalid "
    "topic.): a topic name is 1 to 249 ASCII letters, digits, '.', '_' and '-', and not "
    "'.' or '..'\n"
)


def test_an_invalid_topic_name_is_one_immediate_line(served: Served) -> None:
    mark = served.log_mark()
    started = time.monotonic()
    produced = cli(served, "produce", "bad topic!", input="hi\n")
    took = time.monotonic() - started
    assert (produced.returncode, produced.stderr) == (1, INVALID)
    assert took < 4, f"{took:.1f} s: the tool waited for a topic that can never exist"
    for args in (["-e"], [], ["-G", "g", "-e"]):  # following too: nothing to wait for
        consumed = cli(served, "consume", "bad topic!", *args)
        assert (consumed.returncode, consumed.stderr) == (1, INVALID), args
    # The broker says why once; the clients' repeated asks are counted, not logged.
    lines = re.findall(r".*invalid topic name.*", served.log_since(mark))
    assert len(lines) == 1, lines
    assert "'bad topic!' has characters other than ASCII alphanumerics" in lines[0]


def test_a_host_that_does_not_resolve_is_said_so(served: Served) -> None:
    for args, stdin in (
        (["topics", "list"], None),
        (["produce", "t"], "x\n"),
        (["consume", "t", "-e"], None),
    ):
        done = cli(served, *args, "-b", "nohost.invalid:9092", input=stdin)
        assert (done.returncode, done.stderr) == (
            3,
            (
                "kafkette: no broker answered at nohost.invalid:9092: host 'nohost.invalid' does "
                "not resolve: check the host name in -b (or $KAFKETTE_BOOTSTRAP)\n"
            ),
        ), args


def test_configs_says_what_kafkette_does_with_broker_configs(served: Served) -> None:
    b = ("-b", served.bootstrap)
    refused = run_here(
        [
            "kafkette",
            "configs",
            "alter",
            "--broker",
            "1",
            "--add-config",
            "log.cleaner.threads=2",
            *b,
        ]
    )
    assert refused == (
        1,
        "",
        (
            "kafkette: could not alter the configs of broker '1': broker configs are static in "
            "kafkette: set them with `kafkette serve --config KEY=VALUE` and restart the broker "
            "(INVALID_REQUEST)\n"
        ),
    )
    code, helped, _ = run_here(["kafkette", "configs", "alter", "--help"])
    assert code == 0 and "--broker 1" not in helped
    assert "(no ID: the lowest broker id in the cluster)" in " ".join(helped.split())
    for option in ("--group", "--topic"):  # librdkafka refuses an empty name: no traceback
        code, _, stderr = run_here(["kafkette", "configs", "describe", option, "", *b])
        assert code == 2 and stderr.startswith(f"kafkette: {option} needs a name"), stderr
