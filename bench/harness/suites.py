"""Every workload ``python -m bench --workloads`` can run, by name, in the default order.

The basic ones live in bench/workloads.py; Kafka's Java perf tools and the scaling workloads in
their own modules (they build on workloads.py, so the registry cannot live there).
"""

from __future__ import annotations

from collections.abc import Callable

from .java_perf import java_perf, java_perf_100b
from .scaling import idle_partitions, scaling
from .workloads import WORKLOADS as BASIC
from .workloads import Context

WORKLOADS: dict[str, Callable[[Context], dict[str, float]]] = {
    **BASIC,
    "java-perf": java_perf,
    "java-perf-100b": java_perf_100b,
    "scaling": scaling,
    "idle-partitions": idle_partitions,
}
# What a bare ``python -m bench`` runs: everything but the slow, separately-run groups.
DEFAULT_WORKLOADS = [name for name in WORKLOADS if name not in ("scaling", "idle-partitions")]
