"""Build the SparkSession every example uses, with Spark's Kafka connector on the classpath.

PySpark ships without the Kafka source/sink (``format("kafka")``); the connector and its
dependencies are separate jars. We look for them in this order:

1. the folder named by the ``KAFKETTE_SPARK_JARS`` environment variable (authoritative when set);
2. ``~/.cache/kafkette/spark-jars``;
3. Spark's own resolver through ``spark.jars.packages`` with the coordinates derived from
   ``pyspark.__version__`` (needs Maven Central, so only on a connected machine).

If none works, :class:`MissingConnectorError` says which jars are missing and the three ways to
provide them. Nothing here downloads anything itself.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JARS_ENV_VAR = "KAFKETTE_SPARK_JARS"
DEFAULT_JARS_DIR = Path("~/.cache/kafkette/spark-jars").expanduser()
SCALA_BINARY_VERSION = "2.13"  # Spark 4.x is built for Scala 2.13 only.
MAVEN_CENTRAL = ("repo1.maven.org", 443)

# Artifacts the Kafka connector needs at runtime beyond what PySpark bundles.
REQUIRED_ARTIFACTS = (
    f"spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}",
    f"spark-token-provider-kafka-0-10_{SCALA_BINARY_VERSION}",
    "kafka-clients",
    "commons-pool2",
)

# Settings that keep a local session small and quiet; callers may override any of them.
LOCAL_DEFAULTS = {
    "spark.sql.shuffle.partitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": "127.0.0.1",  # a local driver needs no address beyond loopback
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.forceDeleteTempCheckpointLocation": "true",
}


class MissingConnectorError(RuntimeError):
    """Spark's Kafka connector jars are neither on disk nor resolvable from Maven Central."""


@dataclass(frozen=True)
class ConnectorSource:
    """Where the connector comes from: local jar files, or Maven coordinates for Spark to fetch."""

    jars: tuple[Path, ...] = ()
    packages: tuple[str, ...] = ()

    def spark_conf(self) -> dict[str, str]:
        """The ``spark.jars`` / ``spark.jars.packages`` setting that puts the connector in place."""
        if self.jars:
            return {"spark.jars": ",".join(str(jar) for jar in self.jars)}
        return {"spark.jars.packages": ",".join(self.packages)}


def connector_coordinates(pyspark_version: str) -> str:
    """Maven coordinates of the Kafka connector matching a PySpark version (e.g. ``4.0.1``)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}:{pyspark_version}"


def find_jars(folder: Path) -> tuple[dict[str, Path], list[str]]:
    """Map each required artifact to its jar in ``folder``; also return the artifacts not found.

    A jar counts when it is named ``<artifact>-<version>.jar`` (Maven's name) or
    ``<group>_<artifact>-<version>.jar`` (the name Spark's Ivy resolver gives the copies in
    ``<spark.jars.ivy>/jars``); if several versions are present the highest-sorting name wins.
    """
    found: dict[str, Path] = {}
    names = sorted(p.name for p in folder.glob("*.jar")) if folder.is_dir() else []
    for artifact in REQUIRED_ARTIFACTS:
        pattern = re.compile(rf"^(?:[\w.]+_)?{re.escape(artifact)}-\d[\w.\-]*\.jar$")
        matches = [name for name in names if pattern.match(name)]
        if matches:
            found[artifact] = folder / matches[-1]
    missing = [artifact for artifact in REQUIRED_ARTIFACTS if artifact not in found]
    return found, missing


def _jar_version(jar: Path, artifact: str) -> str:
    return jar.name[len(artifact) + 1 : -len(".jar")]


def _same_minor(a: str, b: str) -> bool:
    return a.split(".")[:2] == b.split(".")[:2]


def spark_line(version: str) -> str:
    """``4.0.1`` -> ``4.0.x``: any connector release of PySpark's minor line works with it."""
    return ".".join(version.split(".")[:2]) + ".x"


def maven_central_reachable(timeout: float = 3.0) -> bool:
    """True when a TCP connection to Maven Central succeeds (Spark's resolver would need it)."""
    try:
        with socket.create_connection(MAVEN_CENTRAL, timeout=timeout):
            return True
    except OSError:
        return False


def missing_connector_message(folder: Path, missing: list[str], pyspark_version: str) -> str:
    """The error text: which jars are missing where, and the three ways to provide them."""
    wanted = ", ".join(f"{artifact}-<version>.jar" for artifact in missing)
    return (
        f"Spark's Kafka connector is not available: {folder} lacks {wanted}, and Maven Central "
        f"is unreachable so Spark cannot resolve {connector_coordinates(pyspark_version)}.\n"
        "Provide it in one of three ways:\n"
        f"  1. put the jars in a folder and set {JARS_ENV_VAR}=/that/folder;\n"
        f"  2. put them in {DEFAULT_JARS_DIR};\n"
        "  3. run on a machine that reaches Maven Central; Spark then fetches "
        f"{connector_coordinates(pyspark_version)} and its dependencies via spark.jars.packages.\n"
        f"Needed jars: spark-sql-kafka-0-10_{SCALA_BINARY_VERSION} and "
        f"spark-token-provider-kafka-0-10_{SCALA_BINARY_VERSION} of Spark "
        f"{spark_line(pyspark_version)} (any {spark_line(pyspark_version)} release works with "
        f"PySpark {pyspark_version}), kafka-clients 3.9.x, commons-pool2 2.12.x. pip's pyspark "
        "does not ship them: download them on a connected machine and copy them over "
        "(docs/spark.md, 'Getting the connector')."
    )


def resolve_connector(pyspark_version: str | None = None) -> ConnectorSource:
    """Decide where the connector comes from, or raise :class:`MissingConnectorError`.

    Raises ``MissingConnectorError`` as well when the local connector jar belongs to another
    Spark minor line than PySpark (the 4.0 connector does not work on other Spark lines).
    """
    if pyspark_version is None:
        import pyspark

        pyspark_version = pyspark.__version__
    env_folder = os.environ.get(JARS_ENV_VAR)
    folder = Path(env_folder).expanduser() if env_folder else DEFAULT_JARS_DIR
    found, missing = find_jars(folder)
    if not missing:
        connector = REQUIRED_ARTIFACTS[0]
        jar_version = _jar_version(found[connector], connector)
        if not _same_minor(jar_version, pyspark_version):
            raise MissingConnectorError(
                f"{found[connector]} is built for Spark {jar_version} but PySpark is "
                f"{pyspark_version}; use a Spark {spark_line(pyspark_version)} connector "
                "(any release of that line works)."
            )
        return ConnectorSource(jars=tuple(found[a] for a in REQUIRED_ARTIFACTS))
    if maven_central_reachable():
        return ConnectorSource(packages=(connector_coordinates(pyspark_version),))
    raise MissingConnectorError(missing_connector_message(folder, missing, pyspark_version))


def build_spark_session(
    app_name: str,
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    log_level: str = "WARN",
) -> SparkSession:
    """Create (or return the running) SparkSession with the Kafka connector loaded.

    ``conf`` overrides :data:`LOCAL_DEFAULTS`. Jar settings only take effect when this call
    starts the JVM, so build the session here before anything else touches Spark.
    """
    from pyspark.sql import SparkSession

    settings = {**LOCAL_DEFAULTS, **resolve_connector().spark_conf(), **(conf or {})}
    builder = SparkSession.builder.appName(app_name).master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return spark
