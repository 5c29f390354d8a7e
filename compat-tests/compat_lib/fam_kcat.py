"""kcat driver: every operation is one ``kcat`` subprocess with a hard timeout.

kcat reads records as text lines (``-K`` splits key and value at a tab, ``-Z`` turns empty
fields into nulls) and applies ``-H`` headers to every record of a run, so :meth:`produce`
runs kcat once per stretch of records that share flags. It reports no offsets (they are -1).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from itertools import groupby

from compat_lib.driver_helpers import LIBRDKAFKA_PRODUCER_KEYS, producer_settings
from compat_lib.family import (
    HEARTBEAT_MS,
    REQUEST_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    TIMEOUT_S,
    Family,
    Unsupported,
)
from compat_lib.model import Got, Rec, Start

KEY_DELIMITER = b"\t"


class KcatError(Exception):
    """kcat exited non-zero, timed out, or printed an error; carries its stderr tail."""


class KcatFamily(Family):
    name = "kcat"
    scenarios = frozenset(
        {
            "metadata_auto_create",
            "codec",
            "bulk_roundtrip",
            "headers_nulls",
            "near_max_message_bytes",
            "too_large_rejected",
            "idempotent_produce",
            "consume_earliest",
            "consume_latest",
            "consume_timestamp",
            "group_commit_resume",
        }
    )

    def available(self) -> str | None:
        if shutil.which("kcat") is None:
            return "no kcat binary on PATH (Debian: apt-get install -y kcat)"
        return None

    def version(self) -> str:
        out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10).stdout
        line = next((x for x in out.splitlines() if x.startswith("Version")), out.strip())
        version = "kcat " + line.removeprefix("Version ").split(" (")[0]
        if "librdkafka " in line:
            version += f" (librdkafka {line.split('librdkafka ')[1].split()[0]})"
        return version

    def librdkafka_version(self) -> tuple[int, ...]:
        """The librdkafka kcat is built with, e.g. (2, 0, 2); () if kcat does not say."""
        line = self.version()
        if "(librdkafka " not in line:
            return ()
        text = line.split("(librdkafka ")[1].rstrip(")")
        return tuple(int(part) for part in text.split(".") if part.isdigit())

    def _run(self, args: list[str], data: bytes | None = None) -> bytes:
        cmd = ["kcat", "-b", self.bootstrap, "-X", f"socket.timeout.ms={REQUEST_TIMEOUT_MS}"]
        if self.security is not None:
            for name, value in self.security.librdkafka().items():
                cmd += ["-X", f"{name}={value}"]
        cmd += args
        try:
            done = subprocess.run(
                cmd, input=data, capture_output=True, timeout=TIMEOUT_S + 5, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise KcatError(f"timed out after {TIMEOUT_S + 5:.0f}s: {_tail(exc.stderr)}") from exc
        err = _tail(done.stderr)
        if done.returncode != 0 or "ERROR" in err or "Delivery failed" in err:
            raise KcatError(f"exit {done.returncode}: {err}")
        return done.stdout

    def _metadata(self, topic: str | None = None) -> dict:
        args = ["-L", "-J", "-m", str(int(TIMEOUT_S / 2))]
        if topic is not None:
            args += ["-t", topic]
        return json.loads(self._run(args))

    def partitions_for(self, topic: str) -> int:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            (entry,) = [t for t in self._metadata(topic)["topics"] if t["topic"] == topic]
            if entry.get("partitions") and "error" not in entry:
                return len(entry["partitions"])
            if time.monotonic() > deadline:
                raise KcatError(f"metadata for {topic}: {entry}")
            time.sleep(0.3)

    def list_topics(self) -> set[str]:
        return {t["topic"] for t in self._metadata()["topics"]}

    def check_login(self) -> set[str]:
        """``-L`` with a 3 s metadata timeout: a refused login shows in kcat's stderr at once,
        and kcat otherwise waits out the whole timeout before it exits."""
        out = self._run(["-L", "-J", "-m", "3"])
        return {t["topic"] for t in json.loads(out)["topics"]}

    def produce(
        self, topic: str, recs: list[Rec], codec: str = "none", config: dict | None = None
    ) -> list[tuple[int, int]]:
        base = ["-P", "-t", topic, "-X", f"message.timeout.ms={int(TIMEOUT_S * 1000) - 2000}"]
        if codec != "none":
            base += ["-z", codec]
        for name, value in producer_settings(config, LIBRDKAFKA_PRODUCER_KEYS).items():
            value = str(value).lower() if isinstance(value, bool) else value
            base += ["-X", f"{name}={value}"]
        for shape, run in groupby(recs, key=_shape):
            headers, partition, has_key, null_value = shape
            args = list(base)
            if partition is not None:
                args += ["-p", str(partition)]
            for name, value in headers:
                args += ["-H", f"{name}={value.decode()}"]
            if has_key:
                args += ["-K", KEY_DELIMITER.decode()]
            if null_value:
                args += ["-Z"]
            lines = []
            for r in run:
                if null_value and r.key == b"":
                    raise Unsupported("kcat -Z cannot send an empty key with a null value")
                value = r.value or b""
                if b"\n" in value or (r.key and b"\n" in r.key):
                    raise Unsupported("kcat reads records line by line")
                lines.append((r.key + KEY_DELIMITER if has_key else b"") + value + b"\n")
            self._run(args, b"".join(lines))
        return [(r.partition if r.partition is not None else -1, -1) for r in recs]

    def consume(self, topic: str, partition: int, start: Start, count: int) -> list[Got]:
        offset = {
            "earliest": "beginning",
            "offset": str(start.value),
            "tail": f"-{start.value}",
            "timestamp": f"s@{start.value}",
        }[start.kind]
        args = ["-C", "-J", "-e", "-t", topic, "-p", str(partition), "-o", offset, "-c", str(count)]
        return _parse(self._run(args))

    def group_consume(self, group: str, topic: str, count: int) -> list[Got]:
        args = ["-C", "-J", "-e", "-c", str(count)]
        args += ["-X", "auto.offset.reset=earliest"]
        args += ["-X", f"session.timeout.ms={SESSION_TIMEOUT_MS}"]
        args += ["-X", f"heartbeat.interval.ms={HEARTBEAT_MS}"]
        args += ["-G", group, topic]
        return _parse(self._run(args))


def _shape(r: Rec) -> tuple:
    return (r.headers, r.partition, r.key is not None, r.value is None)


def _parse(out: bytes) -> list[Got]:
    got = []
    for line in out.decode().splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        flat = m.get("headers") or []
        headers = tuple(
            (flat[i], None if flat[i + 1] is None else flat[i + 1].encode())
            for i in range(0, len(flat), 2)
        )
        got.append(
            Got(
                partition=m["partition"],
                offset=m["offset"],
                key=None if m.get("key") is None else m["key"].encode(),
                value=None if m.get("payload") is None else m["payload"].encode(),
                headers=headers,
                timestamp_ms=m.get("ts", -1),
            )
        )
    return got


def _tail(data: bytes | None, limit: int = 400) -> str:
    """kcat's stderr as one line: its ``% ERROR`` lines first, then librdkafka's last
    distinct complaint (e.g. why ApiVersion failed), without timestamps/thread prefixes."""
    lines = [x.strip() for x in (data or b"").decode(errors="replace").splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("% ERROR")]
    others = [x.split("]: ", 1)[-1] for x in lines if not x.startswith("% ERROR")]
    picked = list(dict.fromkeys(errors + others[-1:]))
    return " | ".join(picked)[:limit] or "(no stderr)"
