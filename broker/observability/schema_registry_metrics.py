"""The schema registry on ``/metrics``: its HTTP requests and errors, and its state at a glance.

Counters from ``RegistryStats`` (bumped by the registry's API per request, read here at
scrape time) and gauges from the registry's summary, both through ``BrokerStateView``.
Confluent's registry exports JMX only (``kafka.schema.registry``), with no common
Prometheus naming, so these are kafkette's own ``kafkette_schema_registry_*`` names.
Registered only for a broker that serves a registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

if TYPE_CHECKING:
    from kafkette.broker.state_view import BrokerStateView

PREFIX = "kafkette_schema_registry"


class SchemaRegistryCollector:
    """Requests by method, endpoint template and status; errors by Confluent error code;
    seconds spent per endpoint; subjects, schemas, max id and leadership."""

    def __init__(self, view: BrokerStateView) -> None:
        self._view = view

    def collect(self) -> Iterator[Metric]:
        counters = self._view.schema_registry_counters()
        summary = self._view.schema_registry()
        if counters is None or summary is None:
            return
        requests = CounterMetricFamily(
            f"{PREFIX}_requests",
            "Schema registry HTTP requests answered, by method, endpoint template (such as "
            "/subjects/{subject}/versions; 'unmatched' for no route) and HTTP status.",
            labels=["method", "endpoint", "status"],
        )
        for method, endpoint, status, count in counters.requests:
            requests.add_metric([method, endpoint, str(status)], count)
        yield requests
        errors = CounterMetricFamily(
            f"{PREFIX}_errors",
            "Schema registry answers carrying an error, by Confluent error code (40401 "
            "subject not found, 42201 invalid schema, 409 incompatible, ...).",
            labels=["error_code"],
        )
        for code, count in counters.errors:
            errors.add_metric([str(code)], count)
        yield errors
        seconds = CounterMetricFamily(
            f"{PREFIX}_request_seconds",
            "Seconds spent answering schema registry requests, summed by endpoint template "
            "(divide by the requests' count for a mean).",
            labels=["endpoint"],
        )
        for endpoint, total in counters.seconds:
            seconds.add_metric([endpoint], total)
        yield seconds
        for name, help_text, number in (
            ("subjects", "Subjects with a live version.", summary.subjects),
            ("schemas", "Distinct schema ids stored, soft-deleted ones too.", summary.schemas),
            ("max_id", "The highest schema id given out so far.", summary.max_id),
            ("leader", "1 when this broker's registry takes the writes.", summary.is_leader),
        ):
            gauge = GaugeMetricFamily(f"{PREFIX}_{name}", help_text)
            gauge.add_metric([], int(number))
            yield gauge
