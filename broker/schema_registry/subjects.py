"""The registry's state, folded from the ``_schemas`` topic in order (``apply``), and the
planning of writes: a write is validated against the state and turned into the records to
append; nothing is applied until those records come back from the log, so every broker's
registry (leader or not) reaches the same state the same way.

Pure: no I/O, no trio, no clock. Interface pinned on day 0; bodies: helper A1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kafkette.broker.schema_registry.formats import Dependency, ParsedSchema, Reference
from kafkette.broker.schema_registry.records import Key, Value


@dataclass(frozen=True)
class StoredVersion:
    """One subject-version as stored (``text`` is the canonical schema text)."""

    subject: str
    version: int
    id: int
    schema_type: str
    text: str
    references: tuple[Reference, ...]
    deleted: bool


@dataclass(frozen=True)
class Plan:
    """What a write appends (in order) and what the request is answered with once the
    records are applied (a JSON-ready value)."""

    records: list[tuple[Key, Value | None]]
    answer: object


# (level, live versions of the subject oldest first) -> messages; [] = compatible. Given by
# the facade: it parses the stored texts (cached) and runs formats.levels.check_level.
CompatCheck = Callable[[str, Sequence[StoredVersion]], list[str]]


class SubjectsState:
    def __init__(self, default_level: str = "BACKWARD") -> None:
        raise NotImplementedError

    # -- the fold --------------------------------------------------------------------------
    def apply(self, key: Key, value: Value | None, offset: int) -> None:
        raise NotImplementedError

    # -- reads: answer or raise RegistryError ------------------------------------------------
    def subjects(
        self, *, deleted: bool = False, deleted_only: bool = False, prefix: str = ""
    ) -> list[str]:
        raise NotImplementedError

    def versions(
        self, subject: str, *, deleted: bool = False, deleted_only: bool = False
    ) -> list[int]:
        raise NotImplementedError

    def version(self, subject: str, version_text: str, *, deleted: bool = False) -> StoredVersion:
        """``version_text``: a number, ``latest`` or ``-1`` (the highest live version)."""
        raise NotImplementedError

    def schema_by_id(self, schema_id: int) -> StoredVersion:
        """Any stored version with that id (soft-deleted ones too); 40403 when none."""
        raise NotImplementedError

    def subjects_of(self, schema_id: int, *, deleted: bool = False) -> list[str]:
        raise NotImplementedError

    def versions_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        raise NotImplementedError

    def referenced_by(self, subject: str, version_text: str) -> list[int]:
        raise NotImplementedError

    def dependencies(self, references: Sequence[Reference]) -> Mapping[str, Dependency]:
        """The transitive closure of ``references`` keyed by reference name (soft-deleted
        versions count); a missing one raises 42201 naming it."""
        raise NotImplementedError

    def lookup(self, subject: str, parsed: ParsedSchema, *, deleted: bool = False) -> StoredVersion:
        raise NotImplementedError

    def live_versions(self, subject: str) -> list[StoredVersion]:
        """The subject's versions that are not soft-deleted, oldest first."""
        raise NotImplementedError

    def compatibility(self, subject: str | None, *, default_to_global: bool = True) -> str:
        raise NotImplementedError

    def mode(self, subject: str | None, *, default_to_global: bool = True) -> str:
        raise NotImplementedError

    def max_id(self) -> int:
        raise NotImplementedError

    # -- writes: validate, then say what to append -------------------------------------------
    def plan_register(
        self,
        subject: str,
        parsed: ParsedSchema,
        *,
        request_id: int | None,
        request_version: int | None,
        compat: CompatCheck,
    ) -> Plan:
        """Answer ``{"id": n}``; an empty ``records`` when the schema already is a live version."""
        raise NotImplementedError

    def plan_delete_version(self, subject: str, version_text: str, *, permanent: bool) -> Plan:
        raise NotImplementedError

    def plan_delete_subject(self, subject: str, *, permanent: bool) -> Plan:
        raise NotImplementedError

    def plan_config(self, subject: str | None, level: str | None) -> Plan:
        """``level`` None deletes the config (answer: the level it had)."""
        raise NotImplementedError

    def plan_mode(self, subject: str | None, mode: str | None, *, force: bool) -> Plan:
        raise NotImplementedError

    def plan_noop(self) -> Plan:
        """The leader's takeover record: NOOP carrying the highest id ever given."""
        raise NotImplementedError
