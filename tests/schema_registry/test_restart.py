"""The registry's state survives a kill -9: a real ``kafkette serve`` with the registry on,
writes of every kind (registers in three subjects, a soft delete, a hard delete of the
highest id, a subject config and a subject mode), SIGKILL, restart on the same data dir and
port: every answer is the same, and the next id is one past the highest ever given (the
hard-deleted id is not handed out again).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.raw_wire import free_port
from bench.harness.serve_process import RestartedServe

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def _record(name: str, *fields: tuple[str, str, object]) -> str:
    """An Avro record schema; a field given a third element gets it as its default."""
    rendered = []
    for field in fields:
        item: dict[str, object] = {"name": field[0], "type": field[1]}
        if len(field) > 2:
            item["default"] = field[2]
        rendered.append(item)
    return json.dumps({"type": "record", "name": name, "fields": rendered})


class Registry:
    """Confluent's REST API over urllib: ``call`` answers (status, decoded JSON body)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def call(self, method: str, path: str, body: object | None = None) -> tuple[int, object]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": CONTENT_TYPE}
        )
        try:
            with urllib.request.urlopen(request, timeout=15) as answer:
                return answer.status, json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def ok(self, method: str, path: str, body: object | None = None) -> object:
        status, answer = self.call(method, path, body)
        assert status == 200, (method, path, status, answer)
        return answer

    def register(self, subject: str, schema: str) -> int:
        answer = self.ok("POST", f"/subjects/{subject}/versions", {"schema": schema})
        assert isinstance(answer, dict)
        return int(answer["id"])

    def snapshot(self, subjects: list[str], ids: range) -> dict[str, object]:
        """Everything a client can read about these subjects and ids."""
        seen: dict[str, object] = {
            "subjects": self.call("GET", "/subjects"),
            "subjects_deleted": self.call("GET", "/subjects?deleted=true"),
            "config": self.call("GET", "/config"),
            "mode": self.call("GET", "/mode"),
        }
        for subject in subjects:
            seen[f"{subject} versions"] = self.call("GET", f"/subjects/{subject}/versions")
            status, versions = self.call("GET", f"/subjects/{subject}/versions?deleted=true")
            seen[f"{subject} versions deleted"] = (status, versions)
            for version in versions if status == 200 else []:
                path = f"/subjects/{subject}/versions/{version}"
                seen[path] = self.call("GET", path)
                seen[path + "?deleted=true"] = self.call("GET", path + "?deleted=true")
            seen[f"{subject} latest"] = self.call("GET", f"/subjects/{subject}/versions/latest")
            seen[f"{subject} config"] = self.call("GET", f"/config/{subject}")
            seen[f"{subject} mode"] = self.call("GET", f"/mode/{subject}")
        for schema_id in ids:
            seen[f"id {schema_id}"] = self.call("GET", f"/schemas/ids/{schema_id}")
            seen[f"id {schema_id} versions"] = self.call(
                "GET", f"/schemas/ids/{schema_id}/versions?deleted=true"
            )
        return seen


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[RestartedServe, Registry]]:
    registry_port = free_port()
    server = RestartedServe(
        tmp_path / "data", free_port(),
        ["--config", f"schema.registry.listeners=http://127.0.0.1:{registry_port}"],
        tmp_path / "broker.log",
    )  # fmt: skip
    try:
        yield server, Registry(f"http://127.0.0.1:{registry_port}")
    finally:
        server.stop()


def test_kill_9_keeps_ids_versions_deletes_configs_and_never_reuses_an_id(
    serve: tuple[RestartedServe, Registry],
) -> None:
    server, registry = serve
    server.start()
    user_v1 = _record("User", ("name", "string"))
    user_v2 = _record("User", ("name", "string"), ("age", "int", 0))
    order = _record("Order", ("id", "long"))
    item_v1 = _record("Item", ("sku", "string"))
    item_v2 = _record("Item", ("sku", "string"), ("qty", "int", 1))

    assert registry.register("users", user_v1) == 1
    assert registry.register("users", user_v2) == 2
    assert registry.register("orders", order) == 3
    assert registry.register("items", item_v1) == 4
    assert registry.register("items", item_v2) == 5
    # The same schema under another subject shares its id.
    assert registry.register("orders-copy", order) == 3

    assert registry.ok("DELETE", "/subjects/users/versions/1") == 1
    # The highest id, hard deleted (soft first, as Confluent requires).
    assert registry.ok("DELETE", "/subjects/items/versions/2") == 2
    assert registry.ok("DELETE", "/subjects/items/versions/2?permanent=true") == 2
    assert registry.call("GET", "/schemas/ids/5")[0] == 404
    assert registry.ok("PUT", "/config/orders", {"compatibility": "full"}) == {
        "compatibility": "FULL"
    }
    assert registry.ok("PUT", "/mode/items", {"mode": "READONLY"}) == {"mode": "READONLY"}

    subjects = ["users", "orders", "orders-copy", "items"]
    before = registry.snapshot(subjects, range(1, 7))
    # What the snapshot must hold, so that equality after the restart means something.
    assert before["subjects"] == (200, ["items", "orders", "orders-copy", "users"])
    assert before["users versions"] == (200, [2])
    assert before["users versions deleted"] == (200, [1, 2])
    assert before["items versions deleted"] == (200, [1])
    assert before["orders config"] == (200, {"compatibilityLevel": "FULL"})
    assert before["items mode"] == (200, {"mode": "READONLY"})
    assert before["id 5"][0] == 404
    assert before["id 3 versions"] == (
        200, [{"subject": "orders", "version": 1}, {"subject": "orders-copy", "version": 1}]
    )  # fmt: skip

    server.kill()
    bootstrap = server.start()
    assert registry.snapshot(subjects, range(1, 7)) == before
    # The restarted leader wrote the highest id given into the topic: compaction, which
    # drops the hard-deleted id's records, cannot make a later start give it again.
    assert _schemas_records(bootstrap)[-1] == (b'{"keytype":"NOOP","magic":0}', b'{"maxId":5}')

    # Ids continue past the highest ever given (5, hard deleted), never reusing it.
    assert registry.register("payments", _record("Payment", ("amount", "double"))) == 6
    status, answer = registry.call("POST", "/subjects/items/versions", {"schema": item_v2})
    assert (status, answer["error_code"]) == (422, 42205), answer  # type: ignore[index]

    server.kill()
    server.start()
    assert registry.register("refunds", _record("Refund", ("amount", "double"))) == 7
    assert registry.ok("GET", "/schemas/ids/6")["schema"] == _canonical(  # type: ignore[index]
        _record("Payment", ("amount", "double"))
    )


def _schemas_records(bootstrap: str) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``_schemas`` (key, value), in order."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "schemas-reader",
        "enable.auto.commit": False, "enable.partition.eof": True,
    })  # fmt: skip
    try:
        consumer.assign([TopicPartition("_schemas", 0, 0)])
        found = []
        while True:
            message = consumer.poll(10)
            assert message is not None, "no end of _schemas within 10 s"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                return found
            found.append((message.key(), message.value()))
    finally:
        consumer.close()


def _canonical(schema: str) -> str:
    """The registry's canonical text of these simple records: compact JSON."""
    return json.dumps(json.loads(schema), separators=(",", ":"))


@pytest.mark.parametrize(
    ("partitions", "configs", "refusal"),
    [
        (2, {"cleanup.policy": "compact"}, "should have only 1 partition but has 2"),
        (1, {}, "Expected cleanup.policy to be 'compact' but it is delete"),
    ],
)
def test_refuses_a_schemas_topic_that_is_not_one_compacted_partition(
    tmp_path: Path, partitions: int, configs: dict[str, str], refusal: str
) -> None:
    from kafkette.broker.server import StartupError
    from kafkette.testing import broker

    with broker(data_dir=tmp_path) as plain:
        plain.create_topic("_schemas", partitions, configs)
    with pytest.raises(StartupError, match=refusal):
        with broker(data_dir=tmp_path, schema_registry=True):
            pass
