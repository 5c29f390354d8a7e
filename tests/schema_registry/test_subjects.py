"""The registry state alone (no broker), driven as the registry drives it: plan a write, put
its records through the ``_schemas`` bytes and ``apply`` them at increasing offsets, then read.
Each test pins one of Confluent 7.0.16's rules (research §2.3-2.7, §4); schemas are made-up
canonical texts and compatibility is a fake callable (the formats are tested elsewhere)."""

from __future__ import annotations

import contextlib

import pytest

from kafkette.broker.schema_registry.errors import RegistryError
from kafkette.broker.schema_registry.formats import Dependency, ParsedSchema, Reference
from kafkette.broker.schema_registry.records import (
    ClearSubjectKey,
    ClearSubjectValue,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    NoopValue,
    SchemaKey,
    SchemaValue,
    decode,
    encode_key,
    encode_value,
)
from kafkette.broker.schema_registry.subjects import (
    Plan,
    SubjectsState,
    check_level,
    check_mode,
    check_subject,
    parse_version,
)


class Registry:
    """A registry of one: writes are planned, then committed through the record bytes."""

    def __init__(self, default_level: str = "BACKWARD") -> None:
        self.state = SubjectsState(default_level)
        self.log: list[tuple[bytes, bytes | None]] = []
        self.compat_calls: list[tuple[str, list[int]]] = []

    def commit(self, plan: Plan) -> object:
        for key, value in plan.records:
            self.append(key, value)
        return plan.answer

    def append(self, key, value) -> None:
        raw = (encode_key(key), encode_value(value))
        decoded = decode(*raw)
        assert decoded == (key, value)
        self.state.apply(*decoded, offset=len(self.log))
        self.log.append(raw)

    def plan_register(self, subject, text, *, refs=(), type_="AVRO", id=None, version=None,
                      incompatible=False):  # fmt: skip
        def compat(level, live):
            self.compat_calls.append((level, [v.version for v in live]))
            return ["READER_FIELD_MISSING_DEFAULT_VALUE"] if incompatible else []

        parsed = ParsedSchema(type_, text, tuple(refs))
        return self.state.plan_register(
            subject, parsed, request_id=id, request_version=version, compat=compat
        )

    def register(self, subject, text, **kw) -> int:
        return self.commit(self.plan_register(subject, text, **kw))["id"]

    def delete_version(self, subject, version, *, permanent=False):
        return self.commit(self.state.plan_delete_version(subject, version, permanent=permanent))

    def delete_subject(self, subject, *, permanent=False):
        return self.commit(self.state.plan_delete_subject(subject, permanent=permanent))

    def config(self, subject, level):  # validated first, as the facade does
        level = None if level is None else check_level(subject, level)
        return self.commit(self.state.plan_config(subject, level))

    def mode(self, subject, mode, *, force=False):
        mode = None if mode is None else check_mode(subject, mode)
        return self.commit(self.state.plan_mode(subject, mode, force=force))

    def replayed(self) -> SubjectsState:
        state = SubjectsState()
        for offset, raw in enumerate(self.log):
            state.apply(*decode(*raw), offset=offset)
        return state

    def compacted(self) -> SubjectsState:
        """The state a restart reads after compaction: the latest record per key, tombstones
        and the records they delete gone."""
        latest: dict[bytes, tuple[int, bytes | None]] = {}
        for offset, (key, value) in enumerate(self.log):
            latest[key] = (offset, value)
        state = SubjectsState()
        for key, (offset, value) in sorted(latest.items(), key=lambda kv: kv[1][0]):
            if value is not None:
                state.apply(*decode(key, value), offset=offset)
        return state


@contextlib.contextmanager
def fails(code: int, message: str | None = None):
    """pytest.raises for a RegistryError with that code (and exact message)."""
    with pytest.raises(RegistryError) as info:
        yield info
    assert info.value.error_code == code, info.value.message
    if message is not None:
        assert info.value.message == message


def snapshot(state: SubjectsState) -> dict:
    return {
        subject: [
            (v.version, v.id, v.text, v.deleted)
            for v in (
                state.version(subject, str(n), deleted=True)
                for n in state.versions(subject, deleted=True)
            )
        ]
        for subject in state.subjects(deleted=True)
    } | {"max_id": state.max_id(), "global": (state.compatibility(None), state.mode(None))}


# -- registration -------------------------------------------------------------------------


def test_first_registration_gets_id_1_version_1():
    r = Registry()
    assert r.register("s", "A") == 1
    got = r.state.version("s", "1")
    assert (got.subject, got.version, got.id, got.text, got.schema_type) == ("s", 1, 1, "A", "AVRO")
    assert r.state.version("s", "latest") == got == r.state.schema_by_id(1)
    assert r.compat_calls == []  # nothing to be compatible with


def test_fast_path_live_version_returns_its_id_without_check_or_record():
    r = Registry()
    r.register("s", "A")
    r.register("s", "B")
    plan = r.plan_register("s", "A", incompatible=True)  # an older version's schema
    assert plan == Plan([], {"id": 1})
    assert r.compat_calls == [("BACKWARD", [1])]  # only B's registration was checked


def test_same_content_in_another_subject_reuses_the_id():
    r = Registry()
    assert r.register("s1", "A") == 1
    assert r.register("s2", "B") == 2
    assert r.register("s2", "A") == 1
    assert r.state.version("s2", "2").id == 1
    assert r.state.subjects_of(1) == ["s1", "s2"]
    assert r.state.versions_of(1) == [("s1", 1), ("s2", 2)]


def test_dedupe_ignores_schema_type_but_not_references():
    r = Registry()
    ref = Reference("x", "s1", 1)
    assert r.register("s1", "A") == 1
    assert r.register("s2", "A", type_="JSON") == 1
    assert r.state.version("s2", "1").schema_type == "JSON"
    assert r.register("s3", "A", refs=[ref]) == 2
    assert r.register("s4", "A", refs=[ref]) == 2


def test_next_version_counts_soft_deleted_versions():
    r = Registry()
    r.register("s", "A")
    r.register("s", "B")
    r.delete_version("s", "2")
    r.register("s", "C")
    assert r.state.versions("s") == [1, 3]
    assert r.state.versions("s", deleted=True) == [1, 2, 3]


def test_hard_deleted_subject_restarts_at_version_1_and_never_reuses_ids():
    r = Registry()
    r.register("s", "A")
    r.delete_subject("s")
    r.delete_subject("s", permanent=True)
    with fails(40401):
        r.state.versions("s", deleted=True)
    assert r.register("s", "A") == 2  # the same content: its old id is gone, a new one
    assert r.state.version("s", "1").id == 2
    with fails(40403, "Schema 1 not found"):
        r.state.schema_by_id(1)


def test_compat_gets_the_effective_level_and_live_versions_oldest_first():
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "2")
    r.config("s", "FULL_TRANSITIVE")
    r.compat_calls.clear()
    r.register("s", "D")
    assert r.compat_calls == [("FULL_TRANSITIVE", [1, 3])]


def test_incompatible_raises_409_and_appends_nothing():
    r = Registry()
    r.register("t-value", "A")
    with fails(
        409, 'Schema being registered is incompatible with an earlier schema for subject "t-value"'
    ):
        r.plan_register("t-value", "B", incompatible=True)
    assert r.state.versions("t-value") == [1]


@pytest.mark.parametrize(
    ("setup", "calls"),
    [
        pytest.param(lambda r: r.config(None, "NONE"), [], id="global-none"),
        pytest.param(lambda r: r.config("s", "NONE"), [], id="subject-none"),
        pytest.param(lambda r: r.delete_version("s", "1"), [], id="no-live-version"),
        pytest.param(lambda r: r.config("other", "NONE"), [("BACKWARD", [1])], id="other-subject"),
        pytest.param(lambda r: r.config(None, "forward"), [("FORWARD", [1])], id="global-level"),
    ],
)
def test_when_compat_runs(setup, calls):
    r = Registry()
    r.register("s", "A")
    setup(r)
    r.compat_calls.clear()
    if calls:
        with fails(409):
            r.plan_register("s", "B", incompatible=True)
    else:
        r.register("s", "B", incompatible=True)
    assert r.compat_calls == calls


def test_default_level_comes_from_the_server_config():
    r = Registry(default_level="full")
    r.register("s", "A")
    r.register("s", "B")
    assert r.compat_calls == [("FULL", [1])]
    assert r.state.compatibility("s") == "FULL"


@pytest.mark.parametrize(
    ("mode", "kw", "message"),
    [
        ("READONLY", {}, "Subject s is in read-only mode"),
        ("READONLY", {"id": 5}, "Subject s is in read-only mode"),
        ("IMPORT", {}, "Subject s is not in read-write mode"),
        ("READWRITE", {"id": 5}, "Subject s is not in import mode"),
        ("READWRITE", {"version": 3}, "Subject s is not in import mode"),  # 7.0: version too
    ],
)
def test_register_mode_checks(mode, kw, message):
    r = Registry()
    r.register("s", "A")
    r.mode("s", mode, force=True)
    with fails(42205, message):
        r.plan_register("s", "B", **kw)
    assert r.register("s", "A") == 1  # the fast path comes before the mode check


def test_global_readonly_override_wins_over_the_subject_mode():
    r = Registry()
    r.mode("s", "READWRITE")
    r.mode(None, "READONLY_OVERRIDE")
    assert r.state.mode("s") == "READONLY_OVERRIDE"
    with fails(42205, "Subject s is in read-only mode"):
        r.plan_register("s", "A")


def test_import_uses_id_and_version_verbatim_without_compat():
    r = Registry()
    r.mode(None, "IMPORT")
    assert r.register("s", "A", id=42, version=7, incompatible=True) == 42
    assert r.register("s", "B", id=40, incompatible=True) == 40  # version computed: 8
    assert r.state.versions("s") == [7, 8]
    assert r.compat_calls == []
    r.mode(None, "READWRITE")
    assert r.register("t", "C") == 43  # max id seen + 1


def test_import_id_bound_to_another_schema_is_refused():
    r = Registry()
    r.register("s", "A")
    r.mode(None, "IMPORT", force=True)
    with fails(42205, "Overwrite new schema with id 1 is not permitted."):
        r.plan_register("t", "B", id=1)
    assert r.register("t", "A", id=1) == 1  # same schema, another subject: fine
    assert r.register("u", "A", id=9) == 9  # explicit id over the content's id


def test_reregistering_after_soft_delete_reuses_id_and_tombstones_the_old_version():
    r = Registry()
    r.register("s", "A")
    r.register("s", "B")
    r.delete_version("s", "1")
    plan = r.plan_register("s", "A")
    assert plan.records == [
        (SchemaKey("s", 3), SchemaValue("s", 3, 1, "A")),
        (SchemaKey("s", 1), None),
    ]
    r.commit(plan)
    assert r.state.versions("s", deleted=True) == [2, 3]
    assert r.state.versions_of(1) == [("s", 3)]


def test_soft_deleted_version_still_referenced_is_not_tombstoned():
    # Newer Confluent's rule (7.0 tombstones it and leaves the reference dangling).
    r = Registry()
    r.register("dep", "D")
    r.register("dep", "E")
    r.delete_version("dep", "1")
    r.register("main", "M", refs=[Reference("d", "dep", 1)])  # soft-deleted ones resolve
    plan = r.plan_register("dep", "D")
    assert plan.records == [(SchemaKey("dep", 3), SchemaValue("dep", 3, 1, "D"))]


def test_new_ids_start_above_the_writers_floor():
    # The leader handed out id 3 in a write whose outcome it does not know (not applied
    # here yet): a new schema gets 4, not 3 again; an already known content keeps its id.
    r = Registry()
    r.register("s", "A")
    parsed = ParsedSchema("AVRO", "B")
    plan = r.state.plan_register(
        "s", parsed, request_id=None, request_version=None, compat=lambda *a: [], id_floor=3
    )
    assert plan.answer == {"id": 4}
    r.register("t", "C")
    again = r.state.plan_register(
        "u", ParsedSchema("AVRO", "C"), request_id=None, request_version=None,
        compat=lambda *a: [], id_floor=9,
    )  # fmt: skip
    assert again.answer == {"id": 2}


def test_new_ids_start_above_noop_max_id_and_plan_noop_carries_it():
    r = Registry()
    r.register("s", "A")
    assert r.state.plan_noop() == Plan([(NoopKey(), NoopValue(1))], {"maxId": 1})
    r.append(NoopKey(), NoopValue(10))
    r.append(NoopKey(), None)  # Confluent's own NOOP: ignored
    assert r.state.max_id() == 10
    assert r.register("s", "B") == 11
    assert r.state.plan_noop().records == [(NoopKey(), NoopValue(11))]


def test_permanent_delete_of_the_max_id_writes_a_noop_so_compaction_cannot_lose_it():
    r = Registry()
    r.register("s", "A")
    r.register("t", "B")
    r.delete_subject("t")
    plan = r.state.plan_delete_subject("t", permanent=True)
    assert plan.records == [(SchemaKey("t", 1), None), (NoopKey(), NoopValue(2))]
    r.commit(plan)
    restarted = r.compacted()
    assert restarted.max_id() == 2
    # Without the NOOP a restart would give id 2 again; not deleting the max id needs none.
    r.delete_version("s", "1")
    assert r.state.plan_delete_version("s", "1", permanent=True).records == [
        (SchemaKey("s", 1), None)
    ]


@pytest.mark.parametrize(
    "check",
    [
        lambda: check_subject("a\x00b"),
        lambda: check_level("a\x9fb", "FULL"),
        lambda: check_mode("a\nb", "READONLY"),
    ],
    ids=["register", "config", "mode"],
)
def test_subject_with_control_character_is_42208(check):
    with fails(42208):
        check()


@pytest.mark.parametrize(
    ("subject", "value", "check", "outcome"),
    [
        ("s", " full ", check_level, "FULL"),
        ("s", "sometimes", check_level, 42203),
        ("a\x01", "sometimes", check_level, 42203),  # the level before the subject (7.0)
        (None, 7, check_level, 42203),
        ("s", "readonly_override", check_mode, "READONLY_OVERRIDE"),
        ("s", "sometimes", check_mode, 42204),
        ("a\x01", "sometimes", check_mode, 42208),  # the subject before the mode (7.0)
        (None, None, check_mode, 42204),
    ],
)
def test_config_and_mode_requests_are_validated_in_7_0_order(subject, value, check, outcome):
    if isinstance(outcome, int):
        with fails(outcome):
            check(subject, value)
    else:
        assert check(subject, value) == outcome


def test_plan_applies_nothing():
    r = Registry()
    r.register("s", "A")
    before = snapshot(r.state)
    r.plan_register("s", "B")
    r.state.plan_delete_subject("s", permanent=False)
    r.state.plan_config("s", "NONE")
    r.state.plan_mode(None, "IMPORT", force=True)
    assert snapshot(r.state) == before


# -- reads ----------------------------------------------------------------------------------


def test_latest_is_the_highest_live_version():
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "3")
    assert r.state.version("s", "latest").version == 2
    assert r.state.version("s", "-1", deleted=True).version == 2  # deleted does not apply
    r.delete_subject("s")
    with fails(40401, "Subject 's' not found."):
        r.state.version("s", "latest")
    with fails(40402, "Version -1 not found."):
        r.state.version("s", "latest", deleted=True)


@pytest.mark.parametrize(
    ("subject", "version", "deleted", "code"),
    [
        ("nope", "1", False, 40401),
        ("s", "9", False, 40402),
        ("s", "2", False, 40402),  # soft-deleted, the subject has live versions
        ("s", "2", True, None),
        ("gone", "1", False, 40401),  # only soft-deleted versions: not found without deleted
        ("gone", "2", True, 40402),
        ("gone", "1", True, None),
    ],
)
def test_version_not_found_codes(subject, version, deleted, code):
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "2")
    r.register("gone", "A")
    r.delete_subject("gone")
    if code is None:
        assert r.state.version(subject, version, deleted=deleted).version == int(version)
    else:
        with fails(code):
            r.state.version(subject, version, deleted=deleted)


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ("1", 1),
        (" 2 ", 2),
        ("+3", 3),
        ("latest", -1),
        ("LATEST", -1),
        ("-1", -1),
        ("2147483647", 2147483647),
        ("0", "The specified version '0' is not a valid version id."),
        ("-2", "The specified version '-2' is not a valid version id."),
        ("+0", "The specified version '0' is not a valid version id."),
        ("abc", "The specified version 'abc' is not a valid version id."),
        ("1.0", "The specified version '1.0' is not a valid version id."),
        ("2147483648", "The specified version '2147483648' is not a valid version id."),
        ("", "The specified version '' is not a valid version id."),
    ],
)
def test_parse_version(text, result):
    if isinstance(result, int):
        assert parse_version(text) == result
    else:
        with fails(42202) as info:
            parse_version(text)
        assert info.value.message == (
            result + ' Allowed values are between [1, 2^31-1] and the string "latest"'
        )


@pytest.mark.parametrize(
    ("subject", "text", "deleted", "found"),
    [
        ("s", "A", False, 1),
        ("s", "B", False, 40403),  # soft-deleted; the subject has live versions
        ("s", "B", True, 2),
        ("s", "Z", False, 40403),
        ("nope", "A", False, 40401),
        ("gone", "A", False, 40401),  # only soft-deleted versions: the subject is not found
        ("gone", "A", True, 1),
        ("gone", "Z", True, 40403),
    ],
)
def test_lookup(subject, text, deleted, found):
    r = Registry()
    r.register("s", "A")
    r.register("s", "B")
    r.delete_version("s", "2")
    r.register("gone", "A")
    r.delete_subject("gone")
    parsed = ParsedSchema("AVRO", text)
    if found > 1000:
        with fails(found):
            r.state.lookup(subject, parsed, deleted=deleted)
    else:
        assert r.state.lookup(subject, parsed, deleted=deleted).version == found


def test_ids_resolve_while_any_version_is_stored():
    r = Registry()
    r.register("s", "A")
    r.register("t", "A")
    r.delete_subject("s")
    assert r.state.schema_by_id(1).text == "A"
    assert r.state.subjects_of(1) == ["t"]
    assert r.state.subjects_of(1, deleted=True) == ["s", "t"]
    r.delete_subject("t")
    assert r.state.versions_of(1) == []
    assert r.state.schema_by_id(1).deleted
    r.delete_subject("s", permanent=True)
    r.delete_subject("t", permanent=True)
    with fails(40403, "Schema 1 not found"):
        r.state.schema_by_id(1)
    with fails(40403, "Schema not found"):
        r.state.versions_of(1)
    with fails(40403, "Schema not found"):
        r.state.subjects_of(7)


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, ["a", "b"]),
        ({"deleted": True}, ["a", "b", "c"]),
        ({"deleted_only": True}, ["b", "c"]),
        ({"deleted": True, "deleted_only": True}, ["b", "c"]),
        ({"prefix": "b"}, ["b"]),
        ({"prefix": ":*:"}, ["a", "b"]),
        ({"prefix": ":*:b"}, ["b"]),  # 7.0: "b..." in every context (here: the default one)
    ],
)
def test_subjects_listing(kw, expected):
    r = Registry()
    for subject in "cba":
        r.register(subject, subject.upper())
    r.register("b", "B2")
    r.delete_version("b", "1")
    r.delete_subject("c")
    assert r.state.subjects(**kw) == expected


def test_versions_listing():
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "2")
    assert r.state.versions("s") == [1, 3]
    assert r.state.versions("s", deleted=True) == [1, 2, 3]
    assert r.state.versions("s", deleted_only=True) == [2]
    r.delete_subject("s")
    with fails(40401):
        r.state.versions("s")
    assert r.state.versions("s", deleted_only=True) == [1, 2, 3]


# -- deletes --------------------------------------------------------------------------------


SOFT_DELETED_2 = "Subject 's' Version 2 was soft deleted.Set permanent=true to delete permanently"
REFERENCED_3 = (
    "One or more references exist to the schema {magic=1,keytype=SCHEMA,subject=s,version=3}."
)
NOT_SOFT_DELETED_1 = "Subject 's' Version 1 was not deleted first before being permanently deleted"
SUBJECT_SOFT_DELETED = "Subject 'gone' was soft deleted.Set permanent=true to delete permanently"


def _delete_fixture() -> Registry:
    """s: 1 live, 2 soft-deleted, 3 live and referenced by r-1; ro: read-only."""
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "2")
    r.register("r", "R", refs=[Reference("c", "s", 3)])
    r.register("ro", "X")
    r.mode("ro", "READONLY")
    return r


@pytest.mark.parametrize(
    ("subject", "version", "permanent", "outcome"),
    [
        ("s", "x", False, (42202, None)),
        ("s", "2", False, (40406, SOFT_DELETED_2)),
        ("s", " 2", False, (40406, None)),  # the version as given in the path
        ("nope", "1", False, (40401, "Subject 'nope' not found.")),
        ("s", "7", True, (40402, "Version 7 not found.")),
        ("ro", "9", False, (40402, None)),  # not found before read-only
        ("ro", "1", False, (42205, "Subject ro is in read-only mode")),
        ("s", "3", False, (42206, REFERENCED_3)),
        ("s", "3", True, (42206, None)),  # referenced before not-soft-deleted
        ("s", "1", True, (40407, NOT_SOFT_DELETED_1)),
        ("r", "latest", True, (40407, None)),  # latest is live: always 40407
        ("s", "1", False, 1),
        ("s", "2", True, 2),
        ("s", "latest", False, (42206, None)),  # latest is 3, referenced
        ("r", "latest", False, 1),
    ],
)
def test_delete_version_checks_in_order(subject, version, permanent, outcome):
    r = _delete_fixture()
    if isinstance(outcome, int):
        assert r.delete_version(subject, version, permanent=permanent) == outcome
        assert r.log[-1][0] == encode_key(SchemaKey(subject, outcome))
    else:
        with fails(*outcome):
            r.state.plan_delete_version(subject, version, permanent=permanent)


def test_soft_delete_version_writes_deleted_and_permanent_a_tombstone():
    r = Registry()
    r.register("s", "A", type_="JSON")
    r.register("s", "B")
    assert r.state.plan_delete_version("s", "1", permanent=False).records == [
        (SchemaKey("s", 1), SchemaValue("s", 1, 1, "A", True, "JSON"))
    ]
    r.delete_version("s", "1")
    assert r.state.plan_delete_version("s", "1", permanent=True).records == [
        (SchemaKey("s", 1), None)
    ]


@pytest.mark.parametrize("last_live_goes", [True, False])
def test_soft_version_delete_leaving_no_live_version_drops_subject_config_and_mode(last_live_goes):
    r = Registry()
    r.register("s", "A")
    if not last_live_goes:
        r.register("s", "B")
    r.config("s", "NONE")
    r.mode("s", "READWRITE")
    plan = r.state.plan_delete_version("s", "1", permanent=False)
    dropped = [(ModeKey("s"), None), (ConfigKey("s"), None)]
    assert plan.records[1:] == (dropped if last_live_goes else [])
    r.commit(plan)
    with fails(40408) if last_live_goes else contextlib.nullcontext():
        r.state.compatibility("s", default_to_global=False)
    with fails(40409) if last_live_goes else contextlib.nullcontext():
        r.state.mode("s", default_to_global=False)


@pytest.mark.parametrize(
    ("subject", "permanent", "outcome"),
    [
        ("nope", False, (40401, "Subject 'nope' not found.")),
        ("nope", True, (40401, None)),
        ("gone", False, (40404, SUBJECT_SOFT_DELETED)),
        ("ro", False, (42205, "Subject ro is in read-only mode")),
        ("s", False, (42206, REFERENCED_3)),
        ("r", True, (40405, "Subject 'r' was not deleted first before being permanently deleted")),
        ("gone", True, [1, 2]),
        ("r", False, [1]),
    ],
)
def test_delete_subject_checks_in_order(subject, permanent, outcome):
    r = _delete_fixture()
    r.register("gone", "G1")
    r.register("gone", "G2")
    r.delete_subject("gone")
    if isinstance(outcome, list):
        assert r.delete_subject(subject, permanent=permanent) == outcome
    else:
        with fails(*outcome):
            r.state.plan_delete_subject(subject, permanent=permanent)


def test_soft_subject_delete_writes_delete_subject_up_to_the_highest_live_version():
    r = Registry()
    for text in "ABC":
        r.register("s", text)
    r.delete_version("s", "3")
    r.config("s", "FULL")
    r.mode("s", "READWRITE")
    plan = r.state.plan_delete_subject("s", permanent=False)
    assert plan == Plan(
        [
            (DeleteSubjectKey("s"), DeleteSubjectValue("s", 2)),
            (ModeKey("s"), None),  # 7.0: a soft subject delete drops the subject's mode
            (ConfigKey("s"), None),  # and its compatibility config
        ],
        [1, 2],
    )
    r.commit(plan)
    assert r.state.versions("s", deleted_only=True) == [1, 2, 3]
    assert r.state.compatibility("s") == "BACKWARD"
    plan = r.state.plan_delete_subject("s", permanent=True)
    assert plan.records == [  # 7.0: ascending; the NOOP keeps max id 3 (kafkette)
        *((SchemaKey("s", n), None) for n in (1, 2, 3)),
        (NoopKey(), NoopValue(3)),
    ]
    assert plan.answer == [1, 2, 3]


def test_delete_subject_record_marks_only_versions_up_to_its_version():
    r = Registry()
    r.register("s", "A")
    r.register("s", "B")
    r.append(DeleteSubjectKey("s"), DeleteSubjectValue("s", 1))
    assert r.state.versions("s") == [2]
    r.append(DeleteSubjectKey("s"), None)  # a null value means nothing
    assert r.state.versions("s") == [2]


@pytest.mark.parametrize(("subject", "left"), [("s", {"t": [1, 2]}), (None, {"t": [2]})])
def test_clear_subject_forgets_soft_deleted_versions(subject, left):
    r = Registry()
    r.register("s", "A")
    r.register("t", "B")
    r.register("t", "C")
    r.delete_subject("s")
    r.delete_version("t", "1")
    r.append(ClearSubjectKey(subject), ClearSubjectValue(subject))
    assert {s: r.state.versions(s, deleted=True) for s in r.state.subjects(deleted=True)} == left
    if subject is not None:
        assert r.register("s", "X") == 4  # numbering starts over; ids never do
        assert r.state.versions("s") == [1]


# -- references -----------------------------------------------------------------------------


def _refs_fixture() -> Registry:
    r = Registry()
    r.register("leaf", "L")
    r.register("mid", "M", refs=[Reference("leaf.avsc", "leaf", 1)])
    r.register("mid", "M2", refs=[Reference("leaf.avsc", "leaf", 1)])
    r.register(
        "top", "T", refs=[Reference("mid.avsc", "mid", 1), Reference("leaf.avsc", "leaf", 1)]
    )
    return r


def test_dependencies_are_the_transitive_closure_keyed_by_name():
    r = _refs_fixture()
    deps = r.state.dependencies([Reference("top.avsc", "top", 1)])
    assert list(deps) == ["leaf.avsc", "mid.avsc", "top.avsc"]  # each after its own
    assert deps["mid.avsc"] == Dependency(
        "mid.avsc", "AVRO", "M", (Reference("leaf.avsc", "leaf", 1),)
    )
    assert r.state.dependencies([]) == {}
    r.register("old", "O")
    r.register("old", "O2")
    r.delete_version("old", "1")  # soft-deleted versions still resolve
    assert r.state.dependencies([Reference("o", "old", 1)])["o"].text == "O"
    latest = r.state.dependencies([Reference("m", "mid", -1)])
    assert latest["m"].text == "M2"
    assert r.state.resolve_references([Reference("m", "mid", -1), Reference("l", "leaf", 1)]) == (
        Reference("m", "mid", 2),
        Reference("l", "leaf", 1),
    )


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        (Reference("x", "nope", 1), 'No schema reference found for subject "nope" and version 1'),
        (Reference("x", "leaf", 2), 'No schema reference found for subject "leaf" and version 2'),
        (Reference("x", "leaf", 0), 'No schema reference found for subject "leaf" and version 0'),
    ],
)
def test_missing_reference_is_42201_naming_it(ref, message):
    r = _refs_fixture()
    with fails(42201, message):
        r.state.dependencies([Reference("mid.avsc", "mid", 1), ref])
    with fails(42201, message):
        r.state.resolve_references([ref])


def test_latest_references_are_stored_resolved_and_protect_the_version_they_name():
    r = Registry()
    r.register("dep", "D1")
    r.register("dep", "D2", incompatible=False)
    plan = r.plan_register("main", "M", refs=[Reference("d", "dep", -1)])
    assert plan.records[0][1].references == (Reference("d", "dep", 2),)
    r.commit(plan)
    assert r.state.version("main", "1").references == (Reference("d", "dep", 2),)
    assert r.state.referenced_by("dep", "2") == [3]
    with fails(42206):  # the version "latest" named when main was registered
        r.state.plan_delete_version("dep", "2", permanent=False)
    # A lookup with "latest" finds it while dep's latest is still that version.
    assert r.state.lookup("main", ParsedSchema("AVRO", "M", (Reference("d", "dep", -1),))).id == 3
    with fails(42201, 'No schema reference found for subject "nope" and version -1'):
        r.plan_register("other", "O", refs=[Reference("n", "nope", -1)])


def test_an_id_held_by_two_versions_of_a_subject_resolves_while_either_is_stored():
    r = Registry()
    r.register("dep", "D")
    r.register("dep", "E")
    r.delete_version("dep", "1")
    r.register("main", "M", refs=[Reference("d", "dep", 1)])
    assert r.register("dep", "D") == 1  # version 3; the referenced soft-deleted 1 is kept
    assert r.state.versions("dep", deleted=True) == [1, 2, 3]
    r.delete_version("dep", "3")
    r.delete_version("dep", "3", permanent=True)
    assert r.state.schema_by_id(1).version == 1
    assert r.state.versions_of(1, deleted=True) == [("dep", 1)]
    assert r.replayed().versions_of(1, deleted=True) == [("dep", 1)]


def test_reference_cycles_end():
    r = Registry()
    r.append(SchemaKey("a", 1), SchemaValue("a", 1, 1, "A", references=(Reference("b", "b", 1),)))
    r.append(SchemaKey("b", 1), SchemaValue("b", 1, 2, "B", references=(Reference("a", "a", 1),)))
    assert set(r.state.dependencies([Reference("a", "a", 1)])) == {"a", "b"}


def test_referenced_by_lists_ids_of_live_referrers():
    r = _refs_fixture()
    assert r.state.referenced_by("leaf", "1") == [2, 3, 4]
    assert r.state.referenced_by("leaf", "latest") == [2, 3, 4]
    with fails(40402):
        r.state.referenced_by("leaf", "2")
    with fails(42206, REFERENCED_3.replace("s,version=3", "mid,version=1")):
        r.state.plan_delete_version("mid", "1", permanent=False)
    with fails(42206):
        r.state.plan_delete_subject("leaf", permanent=False)
    r.delete_subject("top")  # a soft-deleted referrer no longer counts
    assert r.state.referenced_by("leaf", "1") == [2, 3]
    assert r.state.referenced_by("mid", "1") == []
    r.delete_version("mid", "1")
    assert r.state.referenced_by("leaf", "1") == [3]
    r.delete_subject("mid")
    assert r.delete_subject("leaf") == [1]


# -- config and mode -------------------------------------------------------------------------


def test_config_levels():
    r = Registry()
    assert r.state.plan_config("s", "FULL").records == [(ConfigKey("s"), ConfigValue("s", "FULL"))]
    assert r.config("s", "FULL") == {"compatibility": "FULL"}  # as stored (7.0: as sent)
    assert r.config(None, "NONE") == {"compatibility": "NONE"}
    assert r.state.compatibility("s") == "FULL"
    assert r.state.compatibility("t") == "NONE"
    assert r.state.compatibility(None, default_to_global=False) == "NONE"
    with fails(40408, "Subject 't' does not have subject-level compatibility configured"):
        r.state.compatibility("t", default_to_global=False)
    assert r.config("s", None) == {"compatibilityLevel": "FULL"}
    with fails(40401, "Subject 's' not found."):  # sic: not 40408
        r.state.plan_config("s", None)
    assert r.config(None, None) == {"compatibilityLevel": "NONE"}
    assert r.state.compatibility(None) == "BACKWARD"
    assert r.state.plan_config(None, None) == Plan([], {"compatibilityLevel": "BACKWARD"})


@pytest.mark.parametrize(
    ("subject", "message"),
    [("s", "Subject s is in read-only mode"), (None, "Subject null is in read-only mode")],
)
def test_config_writes_refused_in_read_only(subject, message):
    r = Registry()
    r.config(subject, "FULL")
    r.mode(subject, "READONLY")
    with fails(42205, message):
        r.state.plan_config(subject, "NONE")
    with fails(42205, message):
        r.state.plan_config(subject, None)


def test_modes():
    r = Registry()
    assert r.state.mode(None) == "READWRITE"
    with fails(42204, "Invalid mode. Valid values are READWRITE, READONLY, and IMPORT."):
        check_mode("s", "sometimes")
    assert r.mode("s", "READONLY") == {"mode": "READONLY"}  # as stored (7.0: as sent)
    assert r.state.mode("s") == "READONLY"
    assert r.state.mode("t") == "READWRITE"
    with fails(40409, "Subject 't' does not have subject-level mode configured"):
        r.state.mode("t", default_to_global=False)
    assert r.mode("s", None) == {"mode": "READONLY"}
    with fails(40401, "Subject 's' not found."):  # sic: not 40409
        r.state.plan_mode("s", None, force=False)


@pytest.mark.parametrize(
    ("subject", "force", "outcome"),
    [
        ("s", False, 42205),  # a live subject: no import
        (None, False, 42205),  # globally: any live subject
        ("empty", False, [ClearSubjectKey("empty"), ModeKey("empty")]),
        ("gone", False, [ClearSubjectKey("gone"), ModeKey("gone")]),  # soft-deleted only
        ("s", True, [ModeKey("s")]),
        (None, True, [ModeKey(None)]),
        ("already", False, [ModeKey("already")]),  # already IMPORT: no check
    ],
)
def test_entering_import(subject, force, outcome):
    r = Registry()
    r.register("s", "A")
    r.register("gone", "B")
    r.delete_subject("gone")
    r.register("already", "C")
    r.mode("already", "IMPORT", force=True)
    if isinstance(outcome, int):
        with fails(outcome, "Cannot import since found existing subjects"):
            r.state.plan_mode(subject, "IMPORT", force=force)
    else:
        plan = r.state.plan_mode(subject, "IMPORT", force=force)
        assert [key for key, _ in plan.records] == outcome
        r.commit(plan)
        assert r.state.mode(subject) == "IMPORT"
        if subject == "gone":
            assert r.state.subjects(deleted=True) == ["already", "s"]


def test_global_import_clears_every_subject():
    r = Registry()
    r.register("s", "A")
    r.delete_subject("s")
    plan = r.state.plan_mode(None, "IMPORT", force=False)
    assert plan.records == [
        (ClearSubjectKey(None), ClearSubjectValue(None)),
        (ModeKey(None), ModeValue(None, "IMPORT")),
    ]
    r.commit(plan)
    assert r.state.subjects(deleted=True) == []


# -- the fold ---------------------------------------------------------------------------------


def test_a_record_giving_an_id_to_another_schema_is_ignored():
    r = Registry()
    r.register("s", "A")
    r.append(SchemaKey("t", 1), SchemaValue("t", 1, 1, "OTHER"))
    assert r.state.ignored == 1
    with fails(40401):
        r.state.versions("t")
    r.append(SchemaKey("t", 1), SchemaValue("t", 1, 1, "A", schema_type="JSON"))
    assert r.state.versions("t") == [1]  # same text, any type: fine


def test_config_and_mode_records_fold():
    r = Registry()
    r.append(ConfigKey(None), ConfigValue(None, "FULL"))
    r.append(ConfigKey("s"), ConfigValue("s", "NONE"))
    r.append(ModeKey("s"), ModeValue("s", "IMPORT"))
    assert (r.state.compatibility("t"), r.state.compatibility("s"), r.state.mode("s")) == (
        "FULL",
        "NONE",
        "IMPORT",
    )
    r.append(ConfigKey("s"), None)
    r.append(ModeKey("s"), None)
    assert (r.state.compatibility("s"), r.state.mode("s")) == ("FULL", "READWRITE")


def test_replaying_the_log_reaches_the_same_state():
    r = _refs_fixture()
    r.register("s", "A")
    r.register("s", "B")
    r.delete_version("s", "1")
    r.register("s", "A")
    r.delete_subject("top")
    r.delete_subject("top", permanent=True)
    r.config("s", "FULL")
    r.mode(None, "IMPORT", force=True)
    r.register("imp", "I", id=100, version=5)
    replayed = r.replayed()
    assert snapshot(replayed) == snapshot(r.state)
    assert replayed.referenced_by("leaf", "1") == r.state.referenced_by("leaf", "1") == [2, 3]
    assert r.state.max_id() == 100
