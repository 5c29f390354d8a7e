"""The registry's state, folded from the ``_schemas`` topic in order (``apply``), and the
planning of writes: a write is validated against the state and turned into the records to
append; nothing is applied until those records come back from the log, so every broker's
registry (leader or not) reaches the same state the same way.

The rules are Confluent Schema Registry 7.0.16's (``KafkaSchemaRegistry`` and its REST
resources): which check comes first, which error a missing subject or version gets, what a
delete writes. Where newer Confluent differs and 7.0 is followed, or the other way round, the
function says so. Only the default context is served.

Pure: no I/O, no trio, no clock. Interface pinned on day 0; bodies: helper A1.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from kafkette.broker.schema_registry import errors
from kafkette.broker.schema_registry.config import COMPATIBILITY_LEVELS, MODES
from kafkette.broker.schema_registry.formats import Dependency, ParsedSchema, Reference
from kafkette.broker.schema_registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    Key,
    ModeKey,
    ModeValue,
    NoopKey,
    NoopValue,
    SchemaKey,
    SchemaValue,
    Value,
)


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

READWRITE, READONLY, READONLY_OVERRIDE, IMPORT = (
    "READWRITE",
    "READONLY",
    "READONLY_OVERRIDE",
    "IMPORT",
)
# 7.0 accepts READONLY_OVERRIDE in PUT /mode (its enum has it) though its 42204 text omits it.
SETTABLE_MODES = (*MODES, READONLY_OVERRIDE)
LATEST = -1
ALL_CONTEXTS = ":*:"  # Confluent's context wildcard, the default subjectPrefix

_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim: every char <= U+0020
_NUMBER = re.compile(r"[+-]?[0-9]+")
_INT_MAX = 2**31 - 1


def parse_version(text: str) -> int:
    """A version path segment as 7.0's ``VersionId`` reads it: ``latest`` (any case) or -1
    mean the highest live version (-1 returned); otherwise an integer in [1, 2^31-1]. 42202
    names the text as given when it is no integer, the number when it is out of range."""
    trimmed = text.strip(_JAVA_TRIM)
    if trimmed.lower() == "latest":
        return LATEST
    if not _NUMBER.fullmatch(trimmed) or not -_INT_MAX - 1 <= int(trimmed) <= _INT_MAX:
        raise errors.invalid_version(text)
    number = int(trimmed)
    if number <= 0 and number != LATEST:
        raise errors.invalid_version(str(number))
    return number


def valid_subject(subject: str) -> bool:
    """7.0 refuses (42208) a subject with an ISO control character (Java's ``isISOControl``)."""
    return not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in subject)


def check_subject(subject: str | None) -> None:
    """42208 for a subject ``valid_subject`` refuses (None: the global scope, always fine)."""
    if subject is not None and not valid_subject(subject):
        raise errors.invalid_subject(subject)


def check_level(subject: str | None, level: object) -> str:
    """A ``PUT /config`` request validated in 7.0's order (the level's 42203, then the
    subject's 42208); the level upper-cased, as stored and answered."""
    if not isinstance(level, str) or level.strip().upper() not in COMPATIBILITY_LEVELS:
        raise errors.invalid_compatibility_level()
    check_subject(subject)
    return level.strip().upper()


def check_mode(subject: str | None, mode: object) -> str:
    """A ``PUT /mode`` request validated in 7.0's order (the subject's 42208, then the
    mode's 42204); the mode upper-cased, as stored and answered."""
    check_subject(subject)
    if not isinstance(mode, str) or mode.strip().upper() not in SETTABLE_MODES:
        raise errors.invalid_mode()
    return mode.strip().upper()


def _java_order(subject: str) -> bytes:
    """Java sorts strings by UTF-16 code units; the same order in Python."""
    return subject.encode("utf-16-be", "surrogatepass")


def _schema_value(stored: StoredVersion, *, deleted: bool) -> SchemaValue:
    return SchemaValue(
        subject=stored.subject,
        version=stored.version,
        id=stored.id,
        schema=stored.text,
        deleted=deleted,
        schema_type=stored.schema_type,
        references=stored.references,
    )


class SubjectsState:
    def __init__(self, default_level: str = "BACKWARD") -> None:
        self._default_level = default_level.upper()
        # subject -> version -> the stored version (soft-deleted ones too)
        self._versions: dict[str, dict[int, StoredVersion]] = {}
        # id -> subject -> version: Confluent's map (one version per subject and id)
        self._ids: dict[int, dict[str, int]] = {}
        # (text, references) -> the id last stored with that content; never shrinks (as
        # Confluent's hash map): an id whose every version was tombstoned dedupes to nothing
        self._content: dict[tuple[str, tuple[Reference, ...]], int] = {}
        # referenced (subject, version) -> live versions referencing it
        self._referrers: dict[tuple[str, int], set[tuple[str, int]]] = {}
        self._configs: dict[str | None, str] = {}  # None: the global config
        self._modes: dict[str | None, str] = {}
        self._max_schema_id = 0  # the highest id of any SCHEMA record applied
        self._noop_max_id = 0  # the highest maxId of kafkette's NOOP records
        self.ignored = 0  # SCHEMA records refused: their id was bound to another schema text

    # -- the fold --------------------------------------------------------------------------
    def apply(self, key: Key, value: Value | None, offset: int) -> None:
        """Fold one record (``offset``: where it stands in the log, for the caller's use)."""
        if isinstance(key, SchemaKey):
            if value is None:
                self._tombstone(key.subject, key.version)
            elif isinstance(value, SchemaValue):
                self._put(key, value)
        elif isinstance(key, ConfigKey):
            if isinstance(value, ConfigValue):
                self._configs[key.subject] = value.compatibility_level
            elif value is None:
                self._configs.pop(key.subject, None)
        elif isinstance(key, ModeKey):
            if isinstance(value, ModeValue):
                self._modes[key.subject] = value.mode
            elif value is None:
                self._modes.pop(key.subject, None)
        elif isinstance(key, DeleteSubjectKey):
            if isinstance(value, DeleteSubjectValue):  # Confluent ignores a null one
                self._delete_subject(value.subject, value.version)
        elif isinstance(key, ClearSubjectKey):
            if isinstance(value, ClearSubjectValue):
                self._clear(value.subject)
        elif isinstance(key, NoopKey):
            if isinstance(value, NoopValue):
                self._noop_max_id = max(self._noop_max_id, value.max_id)

    def _put(self, key: SchemaKey, value: SchemaValue) -> None:
        stored = StoredVersion(
            subject=key.subject,
            version=key.version,
            id=value.id,
            schema_type=value.schema_type,
            text=value.schema,
            references=tuple(value.references),
            deleted=value.deleted,
        )
        if self._bound_elsewhere(stored.id, stored.text):
            # Confluent's reader refuses a record giving an id to a second schema text.
            self.ignored += 1
            return
        versions = self._versions.setdefault(key.subject, {})
        old = versions.get(key.version)
        if old is not None:
            self._unlink(old)
        versions[key.version] = stored
        self._link(stored)
        self._max_schema_id = max(self._max_schema_id, stored.id)

    def _tombstone(self, subject: str, version: int) -> None:
        versions = self._versions.get(subject)
        old = versions.pop(version, None) if versions is not None else None
        if old is not None:
            self._unlink(old)
        if versions is not None and not versions:
            del self._versions[subject]

    def _delete_subject(self, subject: str, up_to: int) -> None:
        """DELETE_SUBJECT: versions 1..up_to become soft-deleted."""
        for version, stored in sorted(self._versions.get(subject, {}).items()):
            if version <= up_to and not stored.deleted:
                self._unlink(stored)
                deleted = replace(stored, deleted=True)
                self._versions[subject][version] = deleted
                self._link(deleted)

    def _clear(self, subject: str | None) -> None:
        """CLEAR_SUBJECT (written on entering IMPORT): soft-deleted versions are forgotten,
        of ``subject`` or of every subject (None)."""
        subjects = list(self._versions) if subject is None else [subject]
        for name in subjects:
            versions = self._versions.get(name)
            if versions is None:
                continue
            for version, stored in list(versions.items()):
                if stored.deleted:
                    del versions[version]
                    self._unlink(stored)
            if not versions:
                del self._versions[name]

    def _link(self, stored: StoredVersion) -> None:
        by_subject = self._ids.setdefault(stored.id, {})
        current = self._stored(stored.subject).get(by_subject.get(stored.subject, 0))
        if current is None or current.id != stored.id or current.version <= stored.version:
            by_subject[stored.subject] = stored.version  # the subject's highest with the id
        self._content[(stored.text, stored.references)] = stored.id
        if not stored.deleted:
            for ref in stored.references:
                referrers = self._referrers.setdefault((ref.subject, ref.version), set())
                referrers.add((stored.subject, stored.version))

    def _unlink(self, stored: StoredVersion) -> None:
        by_subject = self._ids.get(stored.id)
        if by_subject is not None and by_subject.get(stored.subject) == stored.version:
            # Another version of the subject may hold the same id (a soft-deleted one kept
            # because it is referenced, below a re-registration): the id stays its.
            others = [
                v.version
                for v in self._stored(stored.subject).values()
                if v.id == stored.id and v.version != stored.version
            ]
            if others:
                by_subject[stored.subject] = max(others)
            else:
                del by_subject[stored.subject]
                if not by_subject:
                    del self._ids[stored.id]
        for ref in stored.references:
            referrers = self._referrers.get((ref.subject, ref.version))
            if referrers is not None:
                referrers.discard((stored.subject, stored.version))
                if not referrers:
                    del self._referrers[(ref.subject, ref.version)]

    def _bound_elsewhere(self, schema_id: int, text: str) -> bool:
        """Whether ``schema_id`` already names a stored schema with another text."""
        for subject, version in self._ids.get(schema_id, {}).items():
            stored = self._versions.get(subject, {}).get(version)
            if stored is not None and stored.text != text:
                return True
        return False

    # -- helpers over the state ------------------------------------------------------------
    def _stored(self, subject: str) -> dict[int, StoredVersion]:
        return self._versions.get(subject, {})

    def _has(self, subject: str, deleted: bool) -> bool:
        """Confluent's ``hasSubjects``: a version of ``subject`` (live, or any with deleted)."""
        return any(deleted or not v.deleted for v in self._stored(subject).values())

    def _latest(self, subject: str) -> StoredVersion | None:
        live = [v for v in self._stored(subject).values() if not v.deleted]
        return max(live, key=lambda v: v.version, default=None)

    def _get(self, subject: str, version: int, deleted: bool) -> StoredVersion | None:
        """Confluent's ``get``: latest is the highest live version whatever ``deleted`` says."""
        if version == LATEST:
            return self._latest(subject)
        stored = self._stored(subject).get(version)
        if stored is None or (stored.deleted and not deleted):
            return None
        return stored

    def _under_subject(
        self, subject: str, text: str, references: tuple[Reference, ...]
    ) -> StoredVersion | None:
        """The version of ``subject`` holding this content (soft-deleted or not), found the
        way Confluent does: content -> id -> that id's version under the subject."""
        schema_id = self._content.get((text, tuple(references)))
        if schema_id is None:
            return None
        version = self._ids.get(schema_id, {}).get(subject)
        return None if version is None else self._stored(subject).get(version)

    def _writable(self, subject: str | None) -> None:
        """42205 in READONLY (7.0 words the global scope ``Subject null``, Java's null)."""
        if self.mode(subject) in (READONLY, READONLY_OVERRIDE):
            name = "null" if subject is None else subject
            raise errors.operation_not_permitted(f"Subject {name} is in read-only mode")

    def _referenced(self, subject: str, version: int) -> bool:
        return bool(self._referrers.get((subject, version)))

    def _subject_settings_dropped(self, subject: str) -> list[tuple[Key, Value | None]]:
        """7.0's side effect of a soft delete that leaves a subject without live versions:
        its mode and its compatibility config are deleted (newer Confluent: only on a
        permanent delete)."""
        records: list[tuple[Key, Value | None]] = []
        if subject in self._modes:
            records.append((ModeKey(subject), None))
        if subject in self._configs:
            records.append((ConfigKey(subject), None))
        return records

    def _noop_if_max_lost(
        self, tombstoned: Iterable[StoredVersion]
    ) -> list[tuple[Key, Value | None]]:
        """kafkette: tombstoning the highest id lets compaction remove its last record, and a
        restarted registry would give it again; a NOOP carrying it keeps it (design §4.4)."""
        top = self.max_id()
        if self._noop_max_id < top and any(v.id == top for v in tombstoned):
            return [(NoopKey(), NoopValue(top))]
        return []

    # -- reads: answer or raise RegistryError ------------------------------------------------
    def subjects(
        self, *, deleted: bool = False, deleted_only: bool = False, prefix: str = ""
    ) -> list[str]:
        """Sorted as Java sorts. ``prefix`` may start with ``:*:``, Confluent's "every
        context" (its default ``subjectPrefix``): ``:*:`` alone is every subject, ``:*:foo``
        the subjects starting with ``foo`` in every context, here the default one (7.0's
        ``allVersions``). ``deleted_only`` (newer Confluent) wins over ``deleted``: subjects
        with a soft-deleted version."""
        prefix = prefix.removeprefix(ALL_CONTEXTS)
        found = []
        for subject, versions in self._versions.items():
            if not subject.startswith(prefix):
                continue
            if deleted_only:
                keep = any(v.deleted for v in versions.values())
            else:
                keep = any(deleted or not v.deleted for v in versions.values())
            if keep:
                found.append(subject)
        return sorted(found, key=_java_order)

    def versions(
        self, subject: str, *, deleted: bool = False, deleted_only: bool = False
    ) -> list[int]:
        if not self._has(subject, deleted or deleted_only):
            raise errors.subject_not_found(subject)
        versions = self._stored(subject).values()
        if deleted_only:
            return sorted(v.version for v in versions if v.deleted)
        return sorted(v.version for v in versions if deleted or not v.deleted)

    def version(self, subject: str, version_text: str, *, deleted: bool = False) -> StoredVersion:
        """``version_text``: a number, ``latest`` or ``-1`` (the highest live version)."""
        number = parse_version(version_text)
        found = self._get(subject, number, deleted)
        if found is None:
            if not self._has(subject, deleted):
                raise errors.subject_not_found(subject)
            raise errors.version_not_found(number)
        return found

    def schema_by_id(self, schema_id: int) -> StoredVersion:
        """Any stored version with that id (soft-deleted ones too); 40403 when none."""
        for subject, version in self._ids.get(schema_id, {}).items():
            stored = self._stored(subject).get(version)
            if stored is not None:
                return stored
        raise errors.schema_not_found(schema_id)

    def subjects_of(self, schema_id: int, *, deleted: bool = False) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.versions_of(schema_id, deleted=deleted)))

    def versions_of(self, schema_id: int, *, deleted: bool = False) -> list[tuple[str, int]]:
        """The subject-versions using the id (live only unless ``deleted``; may be []);
        40403 ``Schema not found`` for an id no stored version has."""
        by_subject = self._ids.get(schema_id)
        if not by_subject:
            raise errors.schema_not_found()
        found = []
        for subject, version in by_subject.items():
            stored = self._stored(subject).get(version)
            if stored is not None and (deleted or not stored.deleted):
                found.append((subject, version))
        return sorted(found, key=lambda sv: (_java_order(sv[0]), sv[1]))

    def referenced_by(self, subject: str, version_text: str) -> list[int]:
        """Ids of the live versions referencing that version (resolved as GET does with
        ``deleted=true``), ascending."""
        target = self.version(subject, version_text, deleted=True)
        referrers = self._referrers.get((target.subject, target.version), set())
        return sorted({self._versions[s][v].id for s, v in referrers})

    def dependencies(self, references: Sequence[Reference]) -> Mapping[str, Dependency]:
        """The transitive closure of ``references`` keyed by reference name (soft-deleted
        versions count); a missing one raises 42201 naming it."""
        found: dict[str, Dependency] = {}
        seen: set[str] = set()
        pending: list[tuple[Reference, bool]] = [(ref, False) for ref in reversed(references)]
        # Depth first, a reference's own references before it (Confluent's order); a name
        # already seen is skipped, which also ends cycles.
        while pending:
            ref, expanded = pending.pop()
            stored = self._resolve(ref)
            if expanded:
                found[ref.name] = Dependency(
                    ref.name, stored.schema_type, stored.text, stored.references
                )
                continue
            if ref.name in seen:
                continue
            seen.add(ref.name)
            pending.append((ref, True))
            pending.extend((child, False) for child in reversed(stored.references))
        return found

    def resolve_references(self, references: Sequence[Reference]) -> tuple[Reference, ...]:
        """``references`` with version -1 replaced by the referenced subject's latest live
        version, as Confluent stores them; 42201 for one that is missing."""
        return tuple(
            Reference(ref.name, ref.subject, self._resolve(ref).version) for ref in references
        )

    def _resolve(self, ref: Reference) -> StoredVersion:
        stored = self._get(ref.subject, ref.version, True)
        if stored is None:
            raise errors.invalid_schema(
                f'No schema reference found for subject "{ref.subject}" and version {ref.version}'
            )
        return stored

    def lookup(self, subject: str, parsed: ParsedSchema, *, deleted: bool = False) -> StoredVersion:
        """The version of ``subject`` with this content (7.0: a soft-deleted one only with
        ``deleted``), its references compared once resolved as they are stored; 40401 when
        the subject has no version that ``deleted`` admits, else 40403 ``Schema not found``
        (42201 for a reference to nothing)."""
        references = self.resolve_references(parsed.references)
        found = self._under_subject(subject, parsed.canonical, references)
        if found is not None and (deleted or not found.deleted):
            return found
        if not self._has(subject, deleted):
            raise errors.subject_not_found(subject)
        raise errors.schema_not_found()

    def live_versions(self, subject: str) -> list[StoredVersion]:
        """The subject's versions that are not soft-deleted, oldest first."""
        return sorted(
            (v for v in self._stored(subject).values() if not v.deleted), key=lambda v: v.version
        )

    def compatibility(self, subject: str | None, *, default_to_global: bool = True) -> str:
        """The subject's level, else (``default_to_global``) the global one, else the
        server default; 40408 for a subject without its own when not ``default_to_global``."""
        if subject is not None:
            level = self._configs.get(subject)
            if level is not None:
                return level
            if not default_to_global:
                raise errors.subject_level_compatibility_not_configured(subject)
        return self._configs.get(None, self._default_level)

    def mode(self, subject: str | None, *, default_to_global: bool = True) -> str:
        """7.0's rule: a global READONLY_OVERRIDE wins; else the subject's mode, else
        (``default_to_global``) the global one (READWRITE unless set); 40409 otherwise."""
        global_mode = self._modes.get(None, READWRITE)
        if subject is None or global_mode == READONLY_OVERRIDE:
            return global_mode
        mode = self._modes.get(subject)
        if mode is not None:
            return mode
        if not default_to_global:
            raise errors.subject_level_mode_not_configured(subject)
        return global_mode

    def max_id(self) -> int:
        return max(self._max_schema_id, self._noop_max_id)

    def schema_ids(self) -> list[int]:
        """Every id some stored version (soft-deleted too) has, ascending."""
        return sorted(self._ids)

    # -- writes: validate, then say what to append -------------------------------------------
    def plan_register(
        self,
        subject: str,
        parsed: ParsedSchema,
        *,
        request_id: int | None,
        request_version: int | None,
        compat: CompatCheck,
        id_floor: int = 0,
    ) -> Plan:
        """Answer ``{"id": n}``; an empty ``records`` when the schema already is a live version.
        References are stored resolved (version -1: the referenced subject's latest live
        version now, as Confluent stores them; 42201 for one that is missing). A new id is
        above both ``max_id`` and ``id_floor`` (the writer's highest id handed out in a write
        whose outcome it does not know yet). The subject's validity is the caller's
        (``check_subject``, before parsing)."""
        text, references = parsed.canonical, self.resolve_references(parsed.references)
        explicit_id = request_id is not None and request_id >= 0
        explicit_version = request_version is not None and request_version > 0
        # Fast path (before the mode checks): already a live version of the subject.
        found = self._under_subject(subject, text, references)
        if found is not None and not found.deleted and (not explicit_id or request_id == found.id):
            return Plan([], {"id": found.id})
        mode = self.mode(subject)
        if mode in (READONLY, READONLY_OVERRIDE):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")
        if explicit_id or explicit_version:  # 7.0: an id or a version (newer: only an id)
            if mode != IMPORT:
                raise errors.operation_not_permitted(f"Subject {subject} is not in import mode")
        elif mode != READWRITE:
            raise errors.operation_not_permitted(f"Subject {subject} is not in read-write mode")
        schema_id = request_id if explicit_id else None
        # The same content anywhere (any subject, soft-deleted too, any schema type): its id.
        known = self._content.get((text, references))
        if known is not None and known in self._ids and schema_id in (None, known):
            schema_id = known
        versions = self._stored(subject)
        live = self.live_versions(subject)
        if mode != IMPORT and live:
            level = self.compatibility(subject)
            if level != "NONE" and compat(level, live):
                raise errors.incompatible_schema(subject)
        version = request_version if explicit_version else max(versions, default=0) + 1
        assert version is not None
        if schema_id is None:
            schema_id = max(self.max_id(), id_floor) + 1
        elif self._bound_elsewhere(schema_id, text):
            raise errors.operation_not_permitted(
                f"Overwrite new schema with id {schema_id} is not permitted."
            )
        value = SchemaValue(
            subject=subject,
            version=version,
            id=schema_id,
            schema=text,
            deleted=False,
            schema_type=parsed.schema_type,
            references=references,
        )
        records: list[tuple[Key, Value | None]] = [(SchemaKey(subject, version), value)]
        # Soft-deleted lower versions with this id go (7.0); newer Confluent keeps the ones
        # still referenced, which kafkette follows so that no reference is left dangling.
        for old in sorted(versions.values(), key=lambda v: v.version):
            if (
                old.deleted
                and old.id == schema_id
                and old.version < version
                and not self._referenced(subject, old.version)
            ):
                records.append((SchemaKey(subject, old.version), None))
        return Plan(records, {"id": schema_id})

    def plan_delete_version(self, subject: str, version_text: str, *, permanent: bool) -> Plan:
        """Answer the version number deleted. Checks in 7.0's order: 42202, 40406, 40401 /
        40402, 42205, 42206, 40407."""
        number = parse_version(version_text)
        target = self._get(subject, number, True)
        if target is not None and not permanent and target.deleted:
            raise errors.version_soft_deleted(subject, version_text)
        if target is None:
            if not self._has(subject, True):
                raise errors.subject_not_found(subject)
            raise errors.version_not_found(number)
        self._writable(subject)
        if self._referenced(subject, target.version):
            raise errors.reference_exists(subject, target.version)
        key = SchemaKey(subject, target.version)
        if permanent:
            if not target.deleted:
                raise errors.version_not_soft_deleted(subject, target.version)
            records: list[tuple[Key, Value | None]] = [(key, None)]
            records += self._noop_if_max_lost([target])
        else:
            records = [(key, _schema_value(target, deleted=True))]
            if all(v.version == target.version for v in self.live_versions(subject)):
                records += self._subject_settings_dropped(subject)
        return Plan(records, target.version)

    def plan_delete_subject(self, subject: str, *, permanent: bool) -> Plan:
        """Answer the versions deleted (soft: the live ones; permanent: all). Checks in 7.0's
        order: 40401, 40404, 42205, then per version ascending 42206 and 40405."""
        if not self._has(subject, True):
            raise errors.subject_not_found(subject)
        if not permanent and not self._has(subject, False):
            raise errors.subject_soft_deleted(subject)
        self._writable(subject)
        targets = self._stored(subject).values() if permanent else self.live_versions(subject)
        targets = sorted(targets, key=lambda v: v.version)
        for stored in targets:
            if self._referenced(subject, stored.version):  # 7.0: same-subject referrers too
                raise errors.reference_exists(subject, stored.version)
            if permanent and not stored.deleted:
                raise errors.subject_not_soft_deleted(subject)
        numbers = [v.version for v in targets]
        records: list[tuple[Key, Value | None]]
        if permanent:  # 7.0 tombstones ascending (newer Confluent: descending)
            records = [(SchemaKey(subject, n), None) for n in numbers]
            records += self._noop_if_max_lost(targets)
        else:
            records = [(DeleteSubjectKey(subject), DeleteSubjectValue(subject, numbers[-1]))]
            records += self._subject_settings_dropped(subject)
        return Plan(records, numbers)

    def plan_config(self, subject: str | None, level: str | None) -> Plan:
        """``level`` (as ``check_level`` returns it, upper-cased) is set, answered as stored:
        ``{"compatibility": level}`` (7.0 echoes the body as sent). None deletes the
        config, answered with the level it had."""
        if level is not None:
            self._writable(subject)
            return Plan(
                [(ConfigKey(subject), ConfigValue(subject, level))], {"compatibility": level}
            )
        if subject is None:  # DELETE /config: newer Confluent only; back to the default
            self._writable(None)
            previous = self.compatibility(None)
            records: list[tuple[Key, Value | None]] = []
            if None in self._configs:
                records.append((ConfigKey(None), None))
            return Plan(records, {"compatibilityLevel": previous})
        previous_level = self._configs.get(subject)
        if previous_level is None:  # sic: 40401, not 40408
            raise errors.subject_not_found(subject)
        self._writable(subject)
        return Plan([(ConfigKey(subject), None)], {"compatibilityLevel": previous_level})

    def plan_mode(self, subject: str | None, mode: str | None, *, force: bool) -> Plan:
        """``mode`` (as ``check_mode`` returns it, upper-cased) is set, answered as stored:
        ``{"mode": mode}`` (7.0 echoes the body as sent). Entering IMPORT needs no live
        subject in scope unless ``force``, and writes CLEAR_SUBJECT first. None deletes
        ``subject``'s mode (there is no ``DELETE /mode``), answered with the mode it had.
        ``mode.mutability`` (42205 ``Mode changes are not allowed``) is the caller's."""
        if mode is not None:
            records: list[tuple[Key, Value | None]] = []
            if mode == IMPORT and self.mode(subject) != IMPORT and not force:
                live = self.subjects() if subject is None else self._has(subject, False)
                if live:
                    raise errors.operation_not_permitted(
                        "Cannot import since found existing subjects"
                    )
                records.append((ClearSubjectKey(subject), ClearSubjectValue(subject)))
            records.append((ModeKey(subject), ModeValue(subject, mode)))
            return Plan(records, {"mode": mode})
        assert subject is not None, "the global mode is set, never deleted"
        global_mode = self._modes.get(None)
        previous_mode = (
            global_mode if global_mode == READONLY_OVERRIDE else self._modes.get(subject)
        )
        if previous_mode is None:  # sic: 40401, not 40409
            raise errors.subject_not_found(subject)
        return Plan([(ModeKey(subject), None)], {"mode": previous_mode})

    def plan_noop(self) -> Plan:
        """The leader's takeover record: NOOP carrying the highest id ever given."""
        top = self.max_id()
        return Plan([(NoopKey(), NoopValue(top))], {"maxId": top})
