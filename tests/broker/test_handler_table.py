"""The API table: every advertised API has a handler, imported on its first request.

``broker/handlers/__init__.py`` keeps API key -> ``module.function``; the table imports a
handler's module on the first lookup and keeps the function, so a lookup after that is a
plain dict lookup and ``kafkette serve`` starts without the handlers of unused features.
"""

from __future__ import annotations

import inspect

import pytest

from kafkette.broker.handlers import HANDLER_LOCATIONS, HANDLERS, HandlerTable, resolve
from kafkette.wire.apis import SUPPORTED, ApiKey


def test_every_advertised_api_has_a_handler_location() -> None:
    assert set(HANDLER_LOCATIONS) == set(SUPPORTED)


@pytest.mark.parametrize("key", sorted(HANDLER_LOCATIONS), ids=lambda key: key.name)
def test_every_location_resolves_to_an_async_handler(key: ApiKey) -> None:
    handler = resolve(HANDLER_LOCATIONS[key])
    assert inspect.iscoroutinefunction(handler)
    assert f"{handler.__module__}.{handler.__name__}".endswith(HANDLER_LOCATIONS[key])


def test_a_handler_is_resolved_once_then_looked_up_as_in_a_dict() -> None:
    table = HandlerTable()
    assert ApiKey.METADATA not in table
    first = table[ApiKey.METADATA]
    assert table.get(ApiKey.METADATA) is first  # cached in the dict itself
    assert table[ApiKey.METADATA] is first
    assert first is resolve(HANDLER_LOCATIONS[ApiKey.METADATA])


def test_resolve_all_fills_the_table() -> None:
    table = HandlerTable()
    table.resolve_all()
    assert set(table) == set(SUPPORTED)
    assert HANDLERS[ApiKey.API_VERSIONS] is table[ApiKey.API_VERSIONS]


def test_a_key_without_a_handler_raises_key_error() -> None:
    with pytest.raises(KeyError):
        HandlerTable()[9999]  # type: ignore[index]
