"""Counters of the registry's HTTP requests, kept by ``api.py`` and read by the metrics
collector and the console: plain integers in the event loop's thread, no locks. Every key
comes from a fixed set (methods outside ``METHODS`` are counted as ``OTHER``; endpoints are
route templates), so no client can grow the counters or the metrics' label sets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE"})
OTHER_METHOD = "OTHER"


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
        method = method if method in METHODS else OTHER_METHOD
        self.requests[(method, endpoint, status)] += 1
        if error_code is not None:
            self.errors[error_code] += 1
        self.seconds[endpoint] += took
