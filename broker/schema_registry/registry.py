"""The registry's facade: what ``api.py`` calls, one method per REST operation.

Reads answer from ``SubjectsState`` (this broker's fold of ``_schemas``); writes go through
one lock: may this broker write (``RegistryLeadership.writable``, else ``NotLeader(url)``
and the API forwards), plan against the state, append the records, answer once they are
applied here. Parsing and compatibility checks (protoc, large JSON diffs) run in one worker
thread at a time (a ``CapacityLimiter(1)`` of their own, so they neither stall the event loop
nor queue behind disk work); stored versions parsed once are kept per id and dependencies
(a small LRU).

A register is parsed first (outside the locks: it may be slow), then planned in the worker
thread under ``store.apply_lock`` (the tail held off): its references are resolved again
there, and the schema parsed again if one now names another text, so what is stored (with
resolved reference versions) matches the state it is checked against. Ids handed out in a
write whose outcome is unknown are not handed out again in the same leadership (``_reserved``).

Request bodies are validated here, as Confluent words it (research notes §2.4, §3): a missing
or blank ``schema`` is 42201 ``Empty schema``, an unknown ``schemaType`` 42201; subjects,
levels and modes by ``subjects.check_*`` (42208, 42203, 42204) before anything is forwarded.
Answers are Confluent 7.0's shapes.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import trio

from kafkette.broker.schema_registry import errors, formats
from kafkette.broker.schema_registry.errors import NotLeader, RegistryError, UncertainWrite
from kafkette.broker.schema_registry.formats import (
    Dependency,
    ParsedSchema,
    Reference,
    SchemaFormatError,
    levels,
)
from kafkette.broker.schema_registry.leader import RegistryLeadership
from kafkette.broker.schema_registry.stats import RegistryStats
from kafkette.broker.schema_registry.store import SchemaStore
from kafkette.broker.schema_registry.subjects import (
    Plan,
    StoredVersion,
    SubjectsState,
    check_level,
    check_mode,
    check_subject,
)

if TYPE_CHECKING:
    from kafkette.broker.schema_registry.config import SchemaRegistryConfig
    from kafkette.broker.server import Broker

PARSED_CACHE_SIZE = 1024
# How long a follower waits for an id it has not applied yet (one replica fetch: the
# followers' long poll is replica.fetch.wait.max.ms, 500 ms).
NEW_ID_WAIT_S = 1.0
# (store failure, timeout) texts per write, Confluent's where it has them.
_REGISTER = (
    "Register schema operation failed while writing to the Kafka store",
    "Register operation timed out",
)
_DELETE_VERSION = (
    "Delete Schema Version operation failed while writing to the Kafka store",
    "Delete Schema Version operation timed out",
)
_CONFIG = ("Failed to update compatibility level", "Update compatibility level operation timed out")
_MODE = ("Failed to update mode", "Update mode operation timed out")


@dataclass(frozen=True)
class RegistrySummary:
    """The registry at a glance (broker/state_view.py, the console, metrics)."""

    url: str
    is_leader: bool
    leader_url: str | None
    subjects: int  # with a live version
    schemas: int  # distinct ids stored (soft-deleted versions' too)
    max_id: int
    mode: str  # global
    compatibility: str  # global


@dataclass(frozen=True)
class _Body:
    """A register/lookup/compatibility body once validated."""

    schema_type: str
    text: str
    references: tuple[Reference, ...]
    id: int | None
    version: int | None


class SchemaRegistry:
    def __init__(self, broker: Broker, config: SchemaRegistryConfig, advertised_url: str) -> None:
        self.broker = broker
        self.config = config
        self.url = advertised_url
        self.stats = RegistryStats()
        self.store = SchemaStore(broker, config, SubjectsState(config.default_level))
        self.leadership = RegistryLeadership(broker, self.store, advertised_url)
        self._write_lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(1)
        # What a plan's worker thread runs under while the plan holds ``_limiter`` itself
        # (so it never waits for the limiter while holding ``apply_lock``): never contended.
        self._held = trio.CapacityLimiter(1)
        # (id, dependencies) -> the stored schema parsed; touched in the worker thread only
        # (one at a time), emptied when the store rebuilds its state (``generation``).
        self._parsed: OrderedDict[tuple[int, tuple], ParsedSchema] = OrderedDict()
        self._parsed_generation = 0
        # (leadership token, the highest id planned in it): a write whose outcome is unknown
        # may still be applied; its id is not given again in the same leadership.
        self._reserved = (0, 0)

    @property
    def state(self) -> SubjectsState:
        return self.store.state

    async def start(self, nursery: trio.Nursery) -> None:
        """The topic (created or checked: ``StartupError``), the tail (the whole topic
        applied before this returns), then leadership (a single node takes over now)."""
        await self.store.ensure_topic(create=self.store.creatable())
        await nursery.start(self.store.run_tail)
        await self.leadership.start(nursery)

    # -- worker-thread work -----------------------------------------------------------

    async def _in_thread(self, work: functools.partial[object]) -> object:
        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    def _stored_parsed(
        self, version: StoredVersion, deps: Mapping[str, Dependency]
    ) -> ParsedSchema:
        """Worker thread: a stored version parsed (cached by id)."""
        if self._parsed_generation != self.store.generation:
            self._parsed.clear()
            self._parsed_generation = self.store.generation
        # Keyed by what was parsed too: a reference stored as "latest" (a topic written
        # elsewhere) may name another text later.
        key = (version.id, tuple(deps.items()))
        cached = self._parsed.get(key)
        if cached is not None:
            self._parsed.move_to_end(key)
            return cached
        try:
            parsed = formats.parse(version.schema_type, version.text, version.references, deps)
        except SchemaFormatError as exc:
            raise errors.store_error(
                f"Stored schema {version.id} of subject {version.subject} cannot be parsed: {exc}"
            ) from None
        self._parsed[key] = parsed
        while len(self._parsed) > PARSED_CACHE_SIZE:
            self._parsed.popitem(last=False)
        return parsed

    async def _render(self, version: StoredVersion, fmt: str | None) -> str:
        """The stored text, or its ``format=`` rendering (``serialized``, ``resolved``)."""
        if not fmt or fmt == "default":
            return version.text
        deps = self.state.dependencies(version.references)

        def render() -> str:
            return formats.render(self._stored_parsed(version, deps), fmt)

        return await self._in_thread(functools.partial(render))  # type: ignore[return-value]

    async def _parse_new(
        self, body: _Body, normalize: bool
    ) -> tuple[ParsedSchema, Mapping[str, Dependency]]:
        """The request's schema parsed, and the dependencies it was parsed with."""
        deps = self.state.dependencies(body.references)
        work = functools.partial(_parse, body, deps, normalize)
        return await self._in_thread(work), deps  # type: ignore[return-value]

    # -- reads ------------------------------------------------------------------------

    async def subjects(self, *, deleted: bool, deleted_only: bool, prefix: str) -> list[str]:
        return self.state.subjects(deleted=deleted, deleted_only=deleted_only, prefix=prefix)

    def versions_listed(
        self, *, prefix: str, deleted: bool, latest_only: bool
    ) -> list[StoredVersion]:
        """``GET /schemas``: every version (with ``deleted``, soft-deleted ones too) of the
        subjects with ``prefix``, or the latest of each with ``latest_only``; subjects in
        Java's order, versions ascending. The values are immutable: encode them anywhere."""
        state = self.state
        found: list[StoredVersion] = []
        for subject in state.subjects(deleted=deleted, prefix=prefix):
            numbers = state.versions(subject, deleted=deleted)
            for number in numbers[-1:] if latest_only else numbers:
                found.append(state.version(subject, str(number), deleted=deleted))
        return found

    async def versions(self, subject: str, *, deleted: bool, deleted_only: bool) -> list[int]:
        return self.state.versions(subject, deleted=deleted, deleted_only=deleted_only)

    async def get_version(
        self, subject: str, version: str, *, deleted: bool, fmt: str | None
    ) -> dict:
        stored = self.state.version(subject, version, deleted=deleted)
        return version_entity(stored, await self._render(stored, fmt))

    async def get_schema(self, schema_id: int, *, subject: str | None, fmt: str | None) -> dict:
        # ``subject`` is a hint only (research §2.5): an id has one text whichever subject.
        await self._await_new_id(schema_id)
        stored = self.state.schema_by_id(schema_id)
        answer: dict[str, object] = {}
        if stored.schema_type != "AVRO":
            answer["schemaType"] = stored.schema_type
        answer["schema"] = await self._render(stored, fmt)
        if stored.references:
            answer["references"] = _references(stored.references)
        return answer

    async def _await_new_id(self, schema_id: int) -> None:
        """A follower asked for an id above any it has applied: the leader may have given
        it a moment ago (a consumer reading what a producer registered through another
        broker), and a follower learns of a commit one replica fetch later. Wait for
        that, at most ``NEW_ID_WAIT_S``, rather than answer 40403 at once. A broker with no
        copy of the topic applies nothing: no wait."""
        if self.leadership.is_leader or schema_id <= self.state.max_id():
            return
        if not self.store.has_local_copy():
            return
        with trio.move_on_after(NEW_ID_WAIT_S):
            while schema_id > self.state.max_id():
                await self.store.wait_applied(self.store.applied_offset + 1, NEW_ID_WAIT_S)

    async def schema_subjects(self, schema_id: int, *, deleted: bool) -> list[str]:
        return self.state.subjects_of(schema_id, deleted=deleted)

    async def schema_versions(self, schema_id: int, *, deleted: bool) -> list[dict]:
        return [
            {"subject": subject, "version": version}
            for subject, version in self.state.versions_of(schema_id, deleted=deleted)
        ]

    async def referenced_by(self, subject: str, version: str) -> list[int]:
        return self.state.referenced_by(subject, version)

    async def lookup(self, subject: str, body: dict, *, normalize: bool, deleted: bool) -> dict:
        parsed, _ = await self._parse_new(_register_body(body), normalize)
        found = self.state.lookup(subject, parsed, deleted=deleted)
        return version_entity(found, parsed.canonical)

    async def check_compatibility(
        self, subject: str, version: str | None, body: dict, *, verbose: bool, normalize: bool
    ) -> dict:
        state = self.state
        if version is None:
            previous = state.live_versions(subject)
        else:
            try:
                previous = [state.version(subject, version, deleted=False)]
            except RegistryError as exc:
                if exc.error_code not in (40401, 40402):
                    raise
                if version.strip().lower() in ("latest", "-1"):
                    previous = []  # latest of a missing or empty subject: compatible
                elif version.strip().isdigit():  # no 40401 here (research §2.8)
                    raise errors.version_not_found(int(version)) from None
                else:
                    raise
        level = state.compatibility(subject, default_to_global=True)
        try:
            request = _register_body(body)
            deps = state.dependencies(request.references)
        except RegistryError as exc:
            if verbose and exc.error_code == 42201:
                return {"is_compatible": False, "messages": [exc.message]}
            raise
        previous_deps = [(v, state.dependencies(v.references)) for v in previous]

        def check() -> list[str]:
            new = _parse(request, deps, normalize)
            old = [(v.version, self._stored_parsed(v, d)) for v, d in previous_deps]
            return _compared(level, new, old)

        try:
            messages: list[str] = await self._in_thread(functools.partial(check))  # type: ignore[assignment]
        except RegistryError as exc:
            if verbose and exc.error_code == 42201:
                return {"is_compatible": False, "messages": [exc.message]}
            raise
        answer: dict[str, object] = {"is_compatible": not messages}
        if verbose:
            answer["messages"] = messages
        return answer

    async def get_config(self, subject: str | None, *, default_to_global: bool) -> dict:
        level = self.state.compatibility(subject, default_to_global=default_to_global)
        return {"compatibilityLevel": level}

    async def get_mode(self, subject: str | None, *, default_to_global: bool) -> dict:
        return {"mode": self.state.mode(subject, default_to_global=default_to_global)}

    # -- writes -----------------------------------------------------------------------

    async def register(self, subject: str, body: dict, *, normalize: bool) -> dict:
        check_subject(subject)
        request = _register_body(body)
        parsed, parsed_deps = await self._parse_new(request, normalize)
        # Confluent's fast path, on any broker: already a live version -> its id.
        try:
            found = self.state.lookup(subject, parsed, deleted=False)
        except RegistryError:
            found = None
        if found is not None and request.id in (None, found.id):
            return {"id": found.id}
        async with self._write_lock:
            token = await self.leadership.writable()
            store = self.store
            floor = self._reserved[1] if self._reserved[0] == token else 0

            def plan() -> Plan:  # worker thread, the tail held off (it reads the state)
                state = store.state
                # The references as they stand now (a delete may have run since the parse):
                # one that is gone is 42201, one that names another text is parsed again.
                deps = state.dependencies(request.references)
                new = parsed if deps == parsed_deps else _parse(request, deps, normalize)

                def compat(level: str, live: Sequence[StoredVersion]) -> list[str]:
                    old = [
                        (v.version, self._stored_parsed(v, state.dependencies(v.references)))
                        for v in live
                    ]
                    return _compared(level, new, old)

                return state.plan_register(
                    subject, new, request_id=request.id, request_version=request.version,
                    compat=compat, id_floor=floor,
                )  # fmt: skip

            # The parse limiter first: waiting for it (a lookup parsing) while holding the
            # apply lock would hold the tail off for as long.
            async with self._limiter, store.apply_lock:
                planned: Plan = await trio.to_thread.run_sync(plan, limiter=self._held)
            if planned.records:
                schema_id = _answer_dict(planned.answer, "id")["id"]
                self._reserved = (token, max(floor, schema_id))
            await self._append(planned, token, _REGISTER)
        return _answer_dict(planned.answer, "id")

    async def delete_version(self, subject: str, version: str, *, permanent: bool) -> int:
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_delete_version(subject, version, permanent=permanent)
            await self._append(plan, token, _DELETE_VERSION)
        return plan.answer  # type: ignore[return-value]

    async def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        texts = (
            f"Error while deleting the subject {subject}",
            "Delete subject operation timed out",
        )
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_delete_subject(subject, permanent=permanent)
            await self._append(plan, token, texts)
        return plan.answer  # type: ignore[return-value]

    async def set_config(self, subject: str | None, body: dict) -> dict:
        level = check_level(subject, body.get("compatibility"))
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_config(subject, level)
            await self._append(plan, token, _CONFIG)
        return _answer_dict(plan.answer, "compatibility")

    async def delete_config(self, subject: str | None) -> dict:
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_config(subject, None)
            await self._append(plan, token, _CONFIG)
        return _answer_dict(plan.answer, "compatibilityLevel")

    async def set_mode(self, subject: str | None, body: dict, *, force: bool) -> dict:
        mode = check_mode(subject, body.get("mode"))
        if not self.config.mode_mutability:
            raise errors.operation_not_permitted("Mode changes are not allowed")
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_mode(subject, mode, force=force)
            await self._append(plan, token, _MODE)
        return _answer_dict(plan.answer, "mode")

    async def delete_mode(self, subject: str) -> dict:
        if not self.config.mode_mutability:
            raise errors.operation_not_permitted("Mode changes are not allowed")
        async with self._write_lock:
            token = await self.leadership.writable()
            plan = self.state.plan_mode(subject, None, force=False)
            await self._append(plan, token, _MODE)
        return _answer_dict(plan.answer, "mode")

    async def _append(self, plan: Plan, token: int, texts: tuple[str, str]) -> None:
        if not plan.records:
            return
        try:
            await self.store.append(
                plan.records, failed=texts[0], timed_out=texts[1],
                check=self.leadership.check(token),
            )  # fmt: skip
        except NotLeader:
            raise NotLeader(self.leadership.other_leader_url()) from None
        except UncertainWrite:
            self.leadership.write_uncertain(token)  # before the write lock is let go
            raise

    # -- at a glance ------------------------------------------------------------------

    def summary(self) -> RegistrySummary:
        state = self.state
        return RegistrySummary(
            url=self.url,
            is_leader=self.leadership.is_leader,
            leader_url=self.leadership.leader_url(),
            subjects=len(state.subjects()),
            schemas=len(state.schema_ids()),
            max_id=state.max_id(),
            mode=state.mode(None),
            compatibility=state.compatibility(None),
        )


# -- helpers (pure) --------------------------------------------------------------------


def _parse(body: _Body, deps: Mapping[str, Dependency], normalize: bool) -> ParsedSchema:
    """Worker thread: the request's schema parsed, or 42201 with the parser's reason."""
    try:
        return formats.parse(
            body.schema_type, body.text, body.references, deps, normalize=normalize
        )
    except SchemaFormatError as exc:
        raise errors.invalid_schema(str(exc)) from None


def _int_field(body: dict, name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise errors.invalid_schema(f"Invalid {name} {value!r}")
    return value


def _register_body(body: object) -> _Body:
    """A register/lookup/compatibility body validated (422 42201 otherwise)."""
    if not isinstance(body, dict):
        raise errors.invalid_schema("Empty schema")
    text = body.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise errors.invalid_schema("Empty schema")
    schema_type = body.get("schemaType")
    if schema_type is None:
        schema_type = "AVRO"
    if not isinstance(schema_type, str) or schema_type not in formats.SCHEMA_TYPES:
        raise errors.invalid_schema(f"Invalid schema type {schema_type}")
    raw_refs = body.get("references")
    if raw_refs is None:
        raw_refs = []
    if not isinstance(raw_refs, list):
        raise errors.invalid_schema(f"Invalid schema references {raw_refs!r}")
    references = []
    for raw in raw_refs:
        if not isinstance(raw, dict):
            raise errors.invalid_schema(f"Invalid schema reference {raw!r}")
        name, subject, version = raw.get("name"), raw.get("subject"), raw.get("version")
        if (
            not isinstance(name, str) or not name
            or not isinstance(subject, str) or not subject
            or isinstance(version, bool) or not isinstance(version, int)
        ):  # fmt: skip
            raise errors.invalid_schema(
                f"Invalid schema reference {{name='{name}', subject='{subject}',"
                f" version={version}}}"
            )
        references.append(Reference(name, subject, version))
    schema_id = _int_field(body, "id")
    version = _int_field(body, "version")
    return _Body(
        schema_type,
        text,
        tuple(references),
        schema_id if schema_id is not None and schema_id >= 0 else None,
        version if version is not None and version > 0 else None,
    )


def _references(references: Sequence[Reference]) -> list[dict]:
    return [{"name": r.name, "subject": r.subject, "version": r.version} for r in references]


def version_entity(stored: StoredVersion, text: str | None = None) -> dict:
    """7.0's Schema entity: schemaType only when not AVRO, references only when any."""
    answer: dict[str, object] = {
        "subject": stored.subject,
        "version": stored.version,
        "id": stored.id,
    }
    if stored.schema_type != "AVRO":
        answer["schemaType"] = stored.schema_type
    if stored.references:
        answer["references"] = _references(stored.references)
    answer["schema"] = stored.text if text is None else text
    return answer


def _answer_dict(answer: object, key: str) -> dict:
    """A plan's answer as the JSON object the API sends (a bare value under ``key``)."""
    return answer if isinstance(answer, dict) else {key: answer}


def _compared(
    level: str, new: ParsedSchema, old: Sequence[tuple[int, ParsedSchema]]
) -> list[str]:
    """``levels.check_level``, with a comparison past its step budget (formats/budget.py)
    answered 42201: no verdict, the schema is too complex to compare, not incompatible."""
    try:
        return levels.check_level(level, new, old)
    except SchemaFormatError as exc:
        raise errors.invalid_schema(str(exc)) from None
