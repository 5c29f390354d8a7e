"""Which quota applies to a request, and how long its client is throttled.

Resolution is Kafka's default quota callback, one quota key at a time: the first of
these entities that has a value for the key gives the bound (``<default>`` being the
entity whose name is None):

1. user + client-id            5. <default> user + <default> client-id
2. user + <default> client-id  6. <default> user
3. user                        7. client-id
4. <default> user + client-id  8. <default> client-id

The entity also says who shares the rate: a quota set on a client-id is shared by every
user with that client id, a default user quota is one rate per user, and so on (the
matched entity's types, with the request's own names). No value anywhere: no limit.

``active`` is False while no produce, fetch or request quota exists: the dispatch
then does nothing more than read that flag (broker/network/answer.py). Resolutions are
kept per (user, client id) until the quotas change; rates per sharing key. Past
``MAX_RATES`` of them the idle ones are dropped (no record within the windows: their
rate is 0, as Kafka's quota sensors expire after inactivity); if too few are idle (a
client cycling through client ids), the least recently used go too: memory stays
bounded, and the rates of clients active right now are the last to go.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from typing import TypeVar

import trio

from kafkette.broker.quotas.entities import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    IP,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    USER,
    Entity,
)
from kafkette.broker.quotas.rate import SampledRate
from kafkette.broker.quotas.store import Quotas

K = TypeVar("K")
MAX_RATES = 100_000
# When the idle rates free less than this share of MAX_RATES, the least recently used go
# too, down to (1 - share): a prune is then needed only every that many new keys.
PRUNE_SHARE = 0.1
ENFORCED_KEYS = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)

# (quota key, user or "", client id or "")
RateKey = tuple[str, str, str]
# quota key -> (bound, rate key); a key without a quota is absent
Resolved = dict[str, tuple[float, RateKey]]


def _candidates(user: str, client_id: str) -> Iterator[tuple[Entity, str, str]]:
    """Entities in precedence order, each with the user and client id its rate is kept for."""
    yield ((CLIENT_ID, client_id), (USER, user)), user, client_id
    yield ((CLIENT_ID, None), (USER, user)), user, client_id
    yield ((USER, user),), user, ""
    yield ((CLIENT_ID, client_id), (USER, None)), user, client_id
    yield ((CLIENT_ID, None), (USER, None)), user, client_id
    yield ((USER, None),), user, ""
    yield ((CLIENT_ID, client_id),), "", client_id
    yield ((CLIENT_ID, None),), "", client_id


def _prune(rates: dict[K, SampledRate], now_ms: float, limit: int) -> None:
    """Make room in a full ``rates``: the idle first, then the least recently used."""
    for key in [k for k, rate in rates.items() if rate.idle(now_ms)]:
        del rates[key]
    keep = int(limit * (1 - PRUNE_SHARE))
    if len(rates) > keep:
        by_last_use = sorted(rates, key=lambda k: rates[k].last_ms)
        for key in by_last_use[: len(rates) - keep]:
            del rates[key]


class TaskTimer(trio.abc.Instrument):
    """Time the event loop spends running each watched task (request_percentage: the
    handler's own work, not the time it waits, as Kafka counts request-thread time).
    Installed only while a request_percentage quota exists."""

    def __init__(self) -> None:
        # Weak keys: a connection that ends in the middle of a request (an error) leaves
        # nothing behind.
        self.busy: weakref.WeakKeyDictionary[trio.lowlevel.Task, float] = (
            weakref.WeakKeyDictionary()
        )
        self.step_started = time.perf_counter()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.step_started = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        if task in self.busy:
            self.busy[task] += time.perf_counter() - self.step_started


class QuotaManager:
    def __init__(self, window_num: int = 11, window_seconds: int = 1) -> None:
        self.window_num = window_num
        self.window_ms = window_seconds * 1000
        self.active = False
        self.times_requests = False  # a request_percentage quota exists
        self.ip_active = False  # a connection_creation_rate quota exists
        self._ip_rates: dict[str, SampledRate] = {}
        self.timer: TaskTimer | None = None
        self._quotas: Quotas = {}
        self._resolved: dict[tuple[str, str], Resolved] = {}
        self._rates: dict[RateKey, SampledRate] = {}
        self.max_rates = MAX_RATES

    def update(self, quotas: Quotas) -> None:
        """The store's quotas changed (or were loaded): resolve again from now on."""
        self._quotas = quotas
        self._resolved.clear()
        keys = {key for values in quotas.values() for key in values}
        self.active = any(key in keys for key in ENFORCED_KEYS)
        self.times_requests = REQUEST_PERCENTAGE in keys
        self.ip_active = CONNECTION_CREATION_RATE in keys
        self._install_timer(self.times_requests)

    def _install_timer(self, wanted: bool) -> None:
        try:
            if wanted and self.timer is None:
                self.timer = TaskTimer()
                trio.lowlevel.add_instrument(self.timer)
            elif not wanted and self.timer is not None:
                trio.lowlevel.remove_instrument(self.timer)
                self.timer = None
        except RuntimeError:  # not in trio (loaded before the broker runs): at start
            pass

    def resolve(self, user: str, client_id: str) -> Resolved:
        cached = self._resolved.get((user, client_id))
        if cached is not None:
            return cached
        resolved: Resolved = {}
        for entity, rate_user, rate_client in _candidates(user, client_id):
            values = self._quotas.get(entity)
            if not values:
                continue
            for key in ENFORCED_KEYS:
                if key in values and key not in resolved:
                    resolved[key] = (values[key], (key, rate_user, rate_client))
        if len(self._resolved) > MAX_RATES:
            self._resolved.clear()
        self._resolved[(user, client_id)] = resolved
        return resolved

    def record(self, resolved: Resolved, key: str, value: float, now_ms: float) -> float:
        """Record ``value`` against the ``key`` quota; the throttle time in ms (0: none)."""
        quota = resolved.get(key)
        if quota is None:
            return 0.0
        bound, rate_key = quota
        rate = self._rates.get(rate_key)
        if rate is None:
            if len(self._rates) >= self.max_rates:
                _prune(self._rates, now_ms, self.max_rates)
            rate = self._rates[rate_key] = SampledRate(self.window_num, self.window_ms, now_ms)
        rate.record(value, now_ms)
        throttle = rate.throttle_ms(bound, now_ms)
        if key == REQUEST_PERCENTAGE:
            # Kafka bounds a request-time throttle by one window.
            throttle = min(throttle, float(self.window_ms))
        return throttle

    def connection_throttle_ms(self, ip: str, now_ms: float) -> float:
        """A new connection from ``ip``: 0 to accept it, else how long to hold it before
        closing it (KIP-612: the ip's quota, or the default ip quota; one rate per ip). A
        refused connection is not counted, as Kafka takes it back."""
        values = self._quotas.get(((IP, ip),)) or self._quotas.get(((IP, None),)) or {}
        bound = values.get(CONNECTION_CREATION_RATE)
        if bound is None:
            return 0.0
        rate = self._ip_rates.get(ip)
        if rate is None:
            if len(self._ip_rates) >= self.max_rates:
                _prune(self._ip_rates, now_ms, self.max_rates)
            rate = self._ip_rates[ip] = SampledRate(self.window_num, self.window_ms, now_ms)
        rate.record(1.0, now_ms)
        throttle = rate.throttle_ms(bound, now_ms)
        if throttle > 0:
            rate.record(-1.0, now_ms)
        return min(throttle, float(self.window_ms))

    def unrecord(self, resolved: Resolved, key: str, value: float, now_ms: float) -> None:
        """Take back a recorded value (a throttled Fetch answered empty, as Kafka does)."""
        quota = resolved.get(key)
        if quota is not None and (rate := self._rates.get(quota[1])) is not None:
            rate.record(-value, now_ms)
