"""Kafka's quota arithmetic, as its QuotaUtils tests state it: a rate over sampled windows
whose span is never shorter than ``num - 1`` windows, and the throttle that brings it
back to the quota. No broker: plain numbers (the throttling itself is checked with real
clients in test_client_quotas.py)."""

from __future__ import annotations

from kafkette.broker.quotas.manager import QuotaManager
from kafkette.broker.quotas.rate import SampledRate


def test_rate_twice_the_quota_throttles_for_one_span() -> None:
    # quota 50/s, 3 samples of 1 s: 200 at once is 100/s over the 2 s minimum span
    rate = SampledRate(num=3, window_ms=1000, now_ms=0.0)
    rate.record(200.0, 0.0)
    assert rate.per_second(0.0) == 100.0
    assert rate.throttle_ms(50.0, 0.0) == 2000.0
    assert rate.throttle_ms(100.0, 0.0) == 0.0  # exactly at the quota: not throttled


def test_old_samples_are_forgotten() -> None:
    rate = SampledRate(num=2, window_ms=1000, now_ms=0.0)
    rate.record(1000.0, 0.0)
    # 0.5 s elapsed, no whole window yet: the span is that plus one window (Kafka's Rate)
    assert rate.per_second(500.0) == 1000.0 / 1.5
    assert rate.per_second(2500.0) == 0.0  # all samples older than num windows: gone


def test_precedence_is_kafkas() -> None:
    manager = QuotaManager()
    manager.update({
        (("client-id", None),): {"producer_byte_rate": 8.0},
        (("client-id", "c1"),): {"producer_byte_rate": 7.0},
        (("user", None),): {"producer_byte_rate": 6.0, "consumer_byte_rate": 60.0},
        (("client-id", "c1"), ("user", None)): {"producer_byte_rate": 4.0},
        (("user", "alice"),): {"producer_byte_rate": 3.0},
        (("client-id", "c1"), ("user", "alice")): {"producer_byte_rate": 1.0},
    })  # fmt: skip
    assert manager.resolve("alice", "c1")["producer_byte_rate"] == (
        1.0, ("producer_byte_rate", "alice", "c1"))
    assert manager.resolve("alice", "c2")["producer_byte_rate"] == (
        3.0, ("producer_byte_rate", "alice", ""))
    assert manager.resolve("bob", "c1")["producer_byte_rate"] == (
        4.0, ("producer_byte_rate", "bob", "c1"))
    # each key on its own: consumer_byte_rate only at the default user
    assert manager.resolve("alice", "c1")["consumer_byte_rate"] == (
        60.0, ("consumer_byte_rate", "alice", ""))
    manager.update({(("client-id", None),): {"producer_byte_rate": 8.0}})
    assert manager.resolve("bob", "c9")["producer_byte_rate"] == (
        8.0, ("producer_byte_rate", "", "c9"))
    assert manager.active and not manager.ip_active
    manager.update({})
    assert not manager.active and manager.resolve("bob", "c9") == {}


def test_a_full_rate_table_drops_idle_rates_not_active_ones() -> None:
    """Kafka's quota sensors expire after inactivity: making room for new clients drops
    the idle rates (their rate is 0), not the one of a client being throttled now."""
    manager = QuotaManager(window_num=2)
    manager.max_rates = 3
    manager.update({(("client-id", None),): {"producer_byte_rate": 100.0}})

    def record(client: str, value: float, now: float) -> float:
        return manager.record(manager.resolve("", client), "producer_byte_rate", value, now)

    record("idle-1", 1.0, 0.0)
    record("idle-2", 1.0, 0.0)
    assert record("busy", 1000.0, 5000.0) > 0  # over its quota: throttled
    record("new", 1.0, 5001.0)  # the table is full: idle-1 and idle-2 go
    assert record("busy", 1.0, 5002.0) > 0  # still throttled: its rate was kept
    rates = manager._rates
    assert {key[2] for key in rates} == {"busy", "new"}


def test_a_rate_table_full_of_active_clients_stays_bounded() -> None:
    manager = QuotaManager(window_num=2)
    manager.max_rates = 10
    manager.update({(("client-id", None),): {"producer_byte_rate": 100.0}})
    for i in range(100):
        manager.record(manager.resolve("", f"c{i}"), "producer_byte_rate", 1.0, float(i))
        assert len(manager._rates) <= 10
    assert ("producer_byte_rate", "", "c99") in manager._rates
