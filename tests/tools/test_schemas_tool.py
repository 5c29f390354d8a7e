"""``kafkette schemas``: the tool against a real broker's schema registry.

Most commands run in this process (the tool's own parser and ``run``, output captured;
stdout is not a terminal, so tables are plain text); the exit-code contract of the command
line as a user's shell runs it (usage 2, unreachable 3, one stderr line) uses subprocesses.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkette.cli import build_parser
from kafkette.testing import broker


@pytest.fixture(scope="module")
def registry() -> Iterator[str]:
    with broker(schema_registry=True) as running:
        assert running.schema_registry_url is not None
        yield running.schema_registry_url


class Ran:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        assert (self.code, self.err) == (0, ""), self.err
        return json.loads(self.out)


@pytest.fixture
def schemas(registry: str, capsys: pytest.CaptureFixture[str]) -> Callable[..., Ran]:
    """``kafkette schemas ARGS -r <registry>`` in this process."""

    def run(*args: str) -> Ran:
        parsed = build_parser().parse_args(["schemas", *args, "-r", registry])
        code = parsed.run(parsed)
        captured = capsys.readouterr()
        return Ran(code, captured.out, captured.err)

    return run


def avro(name: str, *fields: tuple[str, str]) -> str:
    return json.dumps(
        {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}
    )


def write(directory: Path, name: str, text: str) -> str:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_register_get_and_list(schemas: Callable[..., Ran], tmp_path: Path) -> None:
    schema = write(tmp_path, "order.avsc", avro("Order", ("id", "long")))
    first = schemas("register", "orders-value", schema)
    assert first.code == 0, first.err
    assert first.out.startswith("Registered orders-value version 1: schema id ")
    again = schemas("register", "orders-value", schema, "--json").json()
    assert again["version"] == 1 and again["subject"] == "orders-value"
    schema_id = again["id"]
    assert first.out == f"Registered orders-value version 1: schema id {schema_id}.\n"

    rows = schemas("list", "--json").json()
    assert {"subject": "orders-value", "versions": [1], "latest_version": 1, "id": schema_id,
            "schema_type": "AVRO"} in rows  # fmt: skip
    plain = schemas("list", "--prefix", "orders-").out.splitlines()
    assert plain[0].split() == ["SUBJECT", "VERSIONS", "LATEST", "ID", "TYPE"]
    assert plain[1].split() == ["orders-value", "1", "1", str(schema_id), "AVRO"]

    text = schemas("get", "orders-value").out  # on a pipe: the schema text alone
    assert json.loads(text) == json.loads(avro("Order", ("id", "long")))
    by_version = schemas("get", "orders-value", "--version", "1", "--json").json()
    assert (by_version["id"], by_version["version"]) == (schema_id, 1)
    by_id = schemas("get", "--id", str(schema_id), "--json").json()
    assert by_id["versions"] == [{"subject": "orders-value", "version": 1}]
    assert by_id["schema"] == text.rstrip("\n")

    json_schema = write(tmp_path, "event.json", json.dumps({"type": "object"}))
    assert schemas("register", "events-value", json_schema).code == 0
    assert schemas("get", "events-value", "--json").json()["schemaType"] == "JSON"

    missing = schemas("get", "no-such-subject")
    assert (missing.code, missing.out) == (1, "")
    assert missing.err == "kafkette: 40401 Subject 'no-such-subject' not found.\n"


def test_check_exit_codes(schemas: Callable[..., Ran], tmp_path: Path) -> None:
    base = write(tmp_path, "v1.avsc", avro("Check", ("a", "int")))
    assert schemas("register", "check-value", base).code == 0
    same = schemas("check", "check-value", base)
    assert (same.code, same.out) == (0, "Compatible with check-value.\n")
    # A new field without a default: old records cannot be read (BACKWARD).
    newer = write(tmp_path, "v2.avsc", avro("Check", ("a", "int"), ("b", "string")))
    refused = schemas("check", "check-value", newer)
    assert refused.code == 1 and refused.err == ""
    lines = refused.out.splitlines()
    assert lines[0] == "NOT compatible with check-value:" and len(lines) >= 2
    as_json = schemas("check", "check-value", newer, "--version", "1", "--json")
    assert as_json.code == 1
    document = json.loads(as_json.out)
    assert document["is_compatible"] is False and document["messages"]


def test_config_mode_and_delete(schemas: Callable[..., Ran], tmp_path: Path) -> None:
    schema = write(tmp_path, "cfg.avsc", avro("Cfg", ("a", "int")))
    assert schemas("register", "cfg-value", schema).code == 0

    shown = schemas("config", "cfg-value").out.splitlines()
    assert [line.split() for line in shown] == [
        ["SUBJECT", "COMPATIBILITY", "FROM"], ["cfg-value", "BACKWARD", "global"]]  # fmt: skip
    assert schemas("config", "cfg-value", "--set", "full").out == (
        "Set the compatibility of cfg-value to FULL.\n"
    )
    assert schemas("config", "cfg-value", "--json").json() == {
        "subject": "cfg-value", "config": "FULL", "source": "subject"}  # fmt: skip
    assert schemas("config", "cfg-value", "--delete").out == (
        "Removed the compatibility of cfg-value (was FULL).\n"
    )
    assert schemas("config", "--json").json()["config"] == "BACKWARD"

    assert schemas("mode", "cfg-value", "--set", "READONLY").code == 0
    assert schemas("mode", "cfg-value", "--json").json()["mode"] == "READONLY"
    other = write(tmp_path, "cfg2.avsc", avro("Cfg", ("a", "int"), ("b", "int")))
    readonly = schemas("register", "cfg-value", other)
    assert readonly.code == 1 and readonly.err.startswith("kafkette: 42205 ")
    assert schemas("mode", "cfg-value", "--delete").code == 0

    soft = schemas("delete", "cfg-value")
    assert (soft.code, soft.out) == (
        0, "Deleted cfg-value version 1 (soft: add --permanent to remove for good).\n")  # fmt: skip
    hard = schemas("delete", "cfg-value", "--permanent", "--json").json()
    assert hard == {"subject": "cfg-value", "deleted_versions": [1], "permanent": True}
    gone = schemas("delete", "cfg-value")
    assert (gone.code, gone.err) == (1, "kafkette: 40401 Subject 'cfg-value' not found.\n")


def test_command_line_exit_codes(cli: Callable[..., Any], registry: str, tmp_path: Path) -> None:
    usage = cli("schemas", "get", "-r", registry)
    assert usage.returncode == 2 and usage.stderr.startswith("kafkette: give a SUBJECT or --id")
    reference = cli("schemas", "register", "s", "-", "--reference", "nope", "-r", registry,
                    input="{}")  # fmt: skip
    assert reference.returncode == 2 and "NAME=SUBJECT:VERSION" in reference.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    down = cli("schemas", "list", "-r", f"http://127.0.0.1:{port}")
    assert down.returncode == 3 and down.stdout == ""
    assert down.stderr.startswith(
        f"kafkette: no schema registry answered at http://127.0.0.1:{port}"
    )
    assert down.stderr.count("\n") == 1
    env = {"KAFKETTE_SCHEMA_REGISTRY": registry}
    listed = cli("schemas", "list", "--json", env=env)
    assert listed.returncode == 0 and isinstance(json.loads(listed.stdout), list)
