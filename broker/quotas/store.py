"""Client quota configs kept durably in the data dir (``client-quotas.json``).

One node keeps every entity's quota values in memory (the quota manager reads them on
each change, never per request) and in the data dir, the file replaced atomically
(write, fsync, rename, fsync the directory) before an AlterClientQuotas is answered:
after a crash it holds the old set or the new, whole. Values are written as Kafka's
ZooKeeper mode writes them under ``/config/users|clients|ips`` (strings in a
``config`` map); a cluster keeps them there instead (zk_store.py).

The file:
``{"version": 1, "entities": [{"entity": {"user": "alice", "client-id": null},
"config": {"producer_byte_rate": "1024"}}, ...]}`` (null: the default entity).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import trio

from kafkette.broker.durable_store import StoreFileError
from kafkette.broker.quotas.entities import ENTITY_TYPES, Entity
from kafkette.log.checkpoint import atomic_write

FILE_NAME = "client-quotas.json"

# entity -> quota key -> value
Quotas = dict[Entity, dict[str, float]]
# entity -> quota key -> new value, or None to remove it
Changes = Mapping[Entity, Mapping[str, float | None]]


def changed(quotas: Quotas, changes: Changes) -> Quotas:
    """``quotas`` after ``changes``: a new dict; entities left without values go."""
    updated = {entity: dict(values) for entity, values in quotas.items()}
    for entity, entity_changes in changes.items():
        values = updated.setdefault(entity, {})
        for key, value in entity_changes.items():
            if value is None:
                values.pop(key, None)
            else:
                values[key] = value
    return {entity: values for entity, values in updated.items() if values}


def value_text(value: float) -> str:
    """As Kafka writes a quota value in ZooKeeper: whole numbers without a fraction."""
    if math.isfinite(value) and value == int(value):
        return str(int(value))
    return repr(value)  # 1.5, inf (request_percentage may be any positive double)


def to_document(quotas: Quotas) -> dict:
    return {
        "version": 1,
        "entities": [
            {
                "entity": dict(entity),
                "config": {key: value_text(v) for key, v in sorted(values.items())},
            }
            for entity, values in sorted(quotas.items(), key=lambda e: repr(e[0]))
        ],
    }


def from_document(document: object) -> Quotas:
    """Raises ValueError (or KeyError/TypeError) for a document that is not ours."""
    if not isinstance(document, dict) or document.get("version") != 1:
        raise ValueError("not a version 1 client quotas document")
    quotas: Quotas = {}
    for item in document["entities"]:
        entity = tuple(
            sorted((str(t), None if n is None else str(n)) for t, n in item["entity"].items())
        )
        if not entity or any(t not in ENTITY_TYPES for t, _ in entity):
            raise ValueError(f"invalid entity {item['entity']!r}")
        quotas[entity] = {str(k): float(v) for k, v in item["config"].items()}
    return quotas


class FileQuotaStore:
    """One node's quotas: in memory, and in the data dir when there is one (a
    ``DurableStore[Quotas, Changes]``; the file is read by ``load`` at start, and a
    damaged one raises StoreFileError)."""

    def __init__(self, path: Path | None, quotas: Quotas | None = None) -> None:
        self.path = path  # None: in memory only
        self._quotas: Quotas = quotas or {}
        self._listeners: list[Callable[[Quotas], None]] = []
        # One alteration at a time: each computes from the last one's result, and
        # atomic_write's temp file (one fixed name beside the file) has one writer.
        self._altering = trio.Lock()

    @classmethod
    def load(cls, data_dir: Path) -> FileQuotaStore:
        """Read the data dir's quotas (blocking: call in a worker thread)."""
        path = data_dir / FILE_NAME
        try:
            text = path.read_text("utf-8")
        except FileNotFoundError:
            return cls(path)
        except OSError as exc:
            raise StoreFileError(f"cannot read client quotas {path}: {exc}") from None
        try:
            return cls(path, from_document(json.loads(text)))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise StoreFileError(f"invalid client quotas file {path}: {exc}") from None

    def on_change(self, listener: Callable[[Quotas], None]) -> None:
        """``listener(quotas)`` now and after every change (on the event loop)."""
        self._listeners.append(listener)
        listener(self._quotas)

    async def read(self) -> Quotas:
        return self._quotas

    async def apply(self, changes: Changes) -> None:
        """Durable (written in a worker thread) before the new values are enforced.

        Compute, write and swap under one lock: two concurrent AlterClientQuotas would
        otherwise both start from the same set (one's change lost) and write the same
        temp file at once."""
        async with self._altering:
            updated = changed(self._quotas, changes)
            if self.path is not None:
                document = json.dumps(to_document(updated), indent=1).encode() + b"\n"
                await trio.to_thread.run_sync(atomic_write, self.path, document)
            self._quotas = updated
            for listener in self._listeners:
                listener(updated)
