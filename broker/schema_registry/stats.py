"""Counters of the registry's HTTP requests, kept by ``api.py`` and read by the metrics
collector and the console: plain integers in the event loop's thread, no locks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RegistryStats:
    """``requests`` by (method, endpoint template such as ``/subjects/{subject}/versions``,
    HTTP status); ``errors`` by Confluent error code; ``seconds`` summed by endpoint, with
    ``requests`` giving the count for a mean."""

    requests: Counter[tuple[str, str, int]] = field(default_factory=Counter)
    errors: Counter[int] = field(default_factory=Counter)
    seconds: Counter[str] = field(default_factory=Counter)

    def count(
        self, method: str, endpoint: str, status: int, error_code: int | None, took: float
    ) -> None:
        self.requests[(method, endpoint, status)] += 1
        if error_code is not None:
            self.errors[error_code] += 1
        self.seconds[endpoint] += took
