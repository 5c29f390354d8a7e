"""Finding Spark's Kafka connector: jar folders, coordinates, and the missing-jars message.

Needs neither pyspark nor a broker: the PySpark version is passed in, jars are empty files.
"""

from __future__ import annotations

import pytest
from spark_session import (
    DEFAULT_JARS_DIR,
    JARS_ENV_VAR,
    MissingConnectorError,
    connector_coordinates,
    find_jars,
    maven_central_reachable,
    resolve_connector,
)

COMPLETE = [
    "spark-sql-kafka-0-10_2.13-4.0.0.jar",
    "spark-token-provider-kafka-0-10_2.13-4.0.0.jar",
    "kafka-clients-3.9.0.jar",
    "commons-pool2-2.12.0.jar",
]


def _folder(tmp_path, names):
    for name in names:
        (tmp_path / name).write_bytes(b"")
    return tmp_path


def test_coordinates_follow_the_pyspark_version():
    assert connector_coordinates("4.0.1") == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"


def test_complete_folder_is_used_in_classpath_order(tmp_path, monkeypatch):
    folder = _folder(tmp_path, [*COMPLETE, "unrelated-1.0.jar"])
    monkeypatch.setenv(JARS_ENV_VAR, str(folder))

    source = resolve_connector("4.0.5")

    assert [jar.name for jar in source.jars] == COMPLETE
    assert source.spark_conf() == {"spark.jars": ",".join(str(folder / n) for n in COMPLETE)}


def test_find_jars_names_exactly_the_missing_artifacts(tmp_path):
    folder = _folder(tmp_path, ["kafka-clients-3.9.0.jar", "spark-sql-kafka-0-10_2.13-4.0.0.jar"])

    found, missing = find_jars(folder)

    assert sorted(found) == ["kafka-clients", "spark-sql-kafka-0-10_2.13"]
    assert missing == ["spark-token-provider-kafka-0-10_2.13", "commons-pool2"]


def test_incomplete_folder_falls_back_to_maven_or_explains_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv(JARS_ENV_VAR, str(_folder(tmp_path, ["kafka-clients-3.9.0.jar"])))

    if maven_central_reachable():
        source = resolve_connector("4.0.5")
        assert source.spark_conf() == {
            "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.5"
        }
        return
    with pytest.raises(MissingConnectorError) as error:
        resolve_connector("4.0.5")
    message = str(error.value)
    for missing in ("spark-sql-kafka-0-10_2.13-", "spark-token-provider-kafka-0-10_2.13-",
                    "commons-pool2-"):
        assert missing in message
    assert "kafka-clients-<version>.jar" not in message
    assert JARS_ENV_VAR in message and str(DEFAULT_JARS_DIR) in message
    assert "spark.jars.packages" in message and "spark-sql-kafka-0-10_2.13:4.0.5" in message
    assert "Spark 4.0.x (any 4.0.x release works with PySpark 4.0.5)" in message
    assert "4.0.5)," in message and "at PySpark's version" not in message


def test_connector_of_another_spark_line_is_refused(tmp_path, monkeypatch):
    names = [n.replace("4.0.0", "3.5.1") for n in COMPLETE]
    monkeypatch.setenv(JARS_ENV_VAR, str(_folder(tmp_path, names)))

    with pytest.raises(MissingConnectorError, match=r"Spark 3\.5\.1 but PySpark is 4\.0\.5"):
        resolve_connector("4.0.5")


def test_any_connector_release_of_pysparks_minor_line_is_used(tmp_path, monkeypatch):
    names = [n.replace("4.0.0", "4.0.1") for n in COMPLETE]
    monkeypatch.setenv(JARS_ENV_VAR, str(_folder(tmp_path, names)))

    for pyspark_version in ("4.0.0", "4.0.1", "4.0.3"):
        assert [jar.name for jar in resolve_connector(pyspark_version).jars] == names


def test_jars_copied_from_sparks_ivy_folder_are_found_by_their_ivy_names(tmp_path):
    ivy_names = [
        "org.apache.spark_spark-sql-kafka-0-10_2.13-4.0.1.jar",
        "org.apache.spark_spark-token-provider-kafka-0-10_2.13-4.0.1.jar",
        "org.apache.kafka_kafka-clients-3.9.0.jar",
        "org.apache.commons_commons-pool2-2.12.0.jar",
        "org.lz4_lz4-java-1.8.0.jar",
    ]
    found, missing = find_jars(_folder(tmp_path, ivy_names))

    assert missing == []
    assert [found[a].name for a in sorted(found)] == [
        "org.apache.commons_commons-pool2-2.12.0.jar",
        "org.apache.kafka_kafka-clients-3.9.0.jar",
        "org.apache.spark_spark-sql-kafka-0-10_2.13-4.0.1.jar",
        "org.apache.spark_spark-token-provider-kafka-0-10_2.13-4.0.1.jar",
    ]
