"""The Schemas pages and their JSON: the broker's schema registry, read-only.

The subjects (``/schemas``, ``/api/schemas``) and one subject's live version
(``/schema?subject=S&version=N``, ``/api/schema?...``; the latest without ``version``),
read through ``BrokerStateView`` from the registry's state, never over its HTTP API. The
subject is a query parameter, as a group id is: a subject may hold ``/`` or ``%2F``. Writes
(register, delete, config) stay with the registry's own REST API.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import trio
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from kafkette.broker.state_view import SchemaSubjectSummary, SchemaVersionView

from . import pages

if TYPE_CHECKING:
    from .app import Console

ACTIVE = "/schemas"
OFF = "This broker serves no schema registry: start it with --schema-registry."


class SchemaPages:
    """The routes' endpoints (bound methods, so Starlette calls them with the request)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.view = console.view

    async def subjects(self, request: Request) -> Response:
        registry = self.view.schema_registry()
        if registry is None:
            return self.console.not_found(OFF, ACTIVE)
        body = pages.schemas(registry, self.view.schema_subjects())
        return self.console.page("Schemas", body, ACTIVE)

    async def subject(self, request: Request) -> Response:
        name = request.query_params.get("subject", "")
        try:
            found = self._find(name, request.query_params.get("version"))
        except ValueError as exc:
            return self.console.page("Schemas", pages.message(str(exc)), ACTIVE, status=400)
        if isinstance(found, str):
            return self.console.not_found(found, ACTIVE)
        subject, version = found

        def render() -> HTMLResponse:  # in a worker thread: a schema can be large
            return self.console.page(
                f"Subject {name}", pages.schema_subject(subject, version), ACTIVE
            )

        return await trio.to_thread.run_sync(render, limiter=self.console.read_limiter)

    async def api_subjects(self, request: Request) -> Response:
        registry = self.view.schema_registry()
        if registry is None:
            return JSONResponse({"error": "no schema registry on this broker"}, status_code=404)
        subjects = [asdict(s) for s in self.view.schema_subjects()]
        return JSONResponse({"registry": asdict(registry), "subjects": subjects})

    async def api_subject(self, request: Request) -> Response:
        try:
            found = self._find(
                request.query_params.get("subject", ""), request.query_params.get("version")
            )
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        if isinstance(found, str):
            return JSONResponse({"error": found}, status_code=404)
        subject, version = found
        data = asdict(subject)
        shown = asdict(version)
        shown["schema"] = shown.pop("text")
        shown["referenced_by"] = [{"subject": s, "version": n} for s, n in version.referenced_by]
        data["version"] = shown
        return JSONResponse(data)

    def _find(
        self, name: str, version_text: str | None
    ) -> tuple[SchemaSubjectSummary, SchemaVersionView] | str:
        """The subject and its version (None, empty or ``latest``: the latest live one),
        or why not (a 404's text). ValueError: ``version`` is no version number."""
        version = _version(version_text)
        subject = self.view.schema_subject(name)
        if subject is None:
            if not self.view.schema_registry_enabled():
                return OFF
            return f"No subject {name!r} with a live version."
        found = self.view.schema_version(name, version)
        if found is None:
            return f"Subject {name!r} has no live version {version}."
        return subject, found


def _version(text: str | None) -> int | None:
    if text is None or text.strip().lower() in ("", "latest"):
        return None
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        shown = repr(text[:32]) + ("..." if len(text) > 32 else "")
        raise ValueError(f"version must be a version number or latest, not {shown}")
    return number
