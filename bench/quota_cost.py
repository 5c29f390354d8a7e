"""Per-request cost of client quotas in the connection loop.

Times, with ``timeit``: what every request pays while no produce/fetch/request quota
exists (the default: one attribute read and a flag test, then ``is not None`` twice),
and what a request pays while one applies to it (the cached resolution of its user and
client id, one rate record and the throttle computation; with ``quota.window.num`` 11).
Prints nanoseconds per request. Run: ``python -m bench.quota_cost``.
"""

from __future__ import annotations

import timeit
from types import SimpleNamespace

from kafkette.broker.quotas.manager import QuotaManager

NUMBER = 200_000


def main() -> None:
    idle = SimpleNamespace(client_quotas=QuotaManager())

    def no_quota() -> None:
        quotas = idle.client_quotas if idle.client_quotas.active else None
        if quotas is not None:
            raise AssertionError
        if quotas is not None:
            raise AssertionError

    manager = QuotaManager()
    manager.update({(("client-id", "c1"),): {"producer_byte_rate": 1e12}})
    clock = iter(range(10**9))

    def with_quota() -> None:
        resolved = manager.resolve("ANONYMOUS", "c1")
        manager.record(resolved, "producer_byte_rate", 16384, float(next(clock)))

    def other_client() -> None:  # a quota exists, none applies to this client
        resolved = manager.resolve("ANONYMOUS", "c2")
        manager.record(resolved, "producer_byte_rate", 16384, 0.0)

    for name, fn in (
        ("no quota configured", no_quota),
        ("quota applies (produce)", with_quota),
        ("quota exists, not this client's", other_client),
    ):
        best = min(timeit.repeat(fn, number=NUMBER, repeat=5)) / NUMBER
        print(f"{name:34s} {best * 1e9:8.0f} ns/request")


if __name__ == "__main__":
    main()
