"""kafkette's performance targets (issue 8), judged on the medians of a run. Never timed tests.

A relative target compares kafkette's median with a peer's median of the same figure: for a
higher-is-better figure it is met when kafkette >= factor x peer, for a lower-is-better one when
kafkette <= factor x peer. An absolute target compares kafkette's median with a limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .metrics import describe

SUBJECT = "kafkette"


@dataclass(frozen=True)
class Target:
    name: str
    metric: str
    factor: float | None = None
    peer: str | None = None
    limit: float | None = None

    def text(self, labels: dict[str, str]) -> str:
        metric = describe(self.metric)
        sign = ">=" if metric.higher_is_better else "<="
        if self.peer is not None:
            return f"{self.name} {sign} {self.factor:.1f}x {labels.get(self.peer, self.peer)}"
        return f"{self.name} {sign} {self.limit:g} {metric.unit}"


def _targets() -> list[Target]:
    targets: list[Target] = []
    for acks in ("1", "all"):
        for peer in ("tansu", "kafka"):
            targets.append(Target(
                f"produce 1 KiB acks={acks}", f"produce.confluent.1KiB.acks={acks}.records_per_s",
                1.0, peer,
            ))
    for peer in ("tansu", "kafka"):
        targets.append(Target("consume 1 KiB", "consume.1KiB.records_per_s", 1.0, peer))
    for acks in ("1", "all"):
        targets.append(Target(
            f"produce 100 B acks={acks}", f"produce.confluent.100B.acks={acks}.records_per_s",
            0.8, "kafka",
        ))
    targets.append(Target("e2e p99 at 10,000 rec/s", "e2e.p99_ms", 1.0, "kafka"))
    targets.append(Target("start time", "start_s", limit=0.3))
    targets.append(Target("idle RSS", "idle_rss_mb", limit=60.0))
    return targets


TARGETS = _targets()


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def evaluate(
    medians: dict[str, dict[str, float]], labels: dict[str, str]
) -> list[dict[str, object]]:
    """Judge every target. ``medians``: {broker: {metric: median}}. Status: met/not met/n/a."""
    verdicts = []
    for target in TARGETS:
        metric = describe(target.metric)
        mine = medians.get(SUBJECT, {}).get(target.metric)
        verdict: dict[str, object] = {"target": target.text(labels), "metric": target.metric,
                                      "kafkette": mine}
        if target.peer is not None:
            theirs = medians.get(target.peer, {}).get(target.metric)
            verdict["peer"] = target.peer
            verdict["peer_value"] = theirs
            bound = target.factor * theirs if _finite(theirs) else None
        else:
            bound = target.limit
        if not _finite(mine):
            status = "n/a (kafkette not measured)"
        elif not _finite(bound):
            status = f"n/a ({labels.get(target.peer, target.peer)} not measured)"
        else:
            met = mine >= bound if metric.higher_is_better else mine <= bound
            status = "met" if met else "not met"
            if target.peer is not None and theirs:
                verdict["ratio"] = mine / theirs
        verdict["status"] = status
        verdicts.append(verdict)
    return verdicts
