"""Fault schedules: a few words per step, fixed ones by name and random ones by seed.

A schedule is text, so a report prints exactly what ran and a run can be repeated by pasting
it: steps separated by ``;``, each ``ACTION TARGET...`` with targets named by role, resolved
once when the schedule starts (``leader`` is the leader of the topic's partition 0 then, and
stays that broker):

  isolate X | rejoin X            X off the bridge / back on it
  partition X,Y / Z               no packet between the two sides (others reach both)
  block X Y | refuse X Y          X's packets to Y dropped / X's new connections to Y refused
  unblock X Y                     lift block/refuse
  kill X | restart X              SIGKILL / start again (a broker or zk)
  freeze X | thaw X               SIGSTOP / SIGCONT
  fill-disk X | free-disk X       the broker's small data disk full / freed
  flap X N OFF ON                 N times: isolate X for OFF s, rejoin for ON s
  wait S                          let S seconds pass
  heal                            everything back: links, frozen and killed processes, disks
  roles                           resolve the roles again (after a heal: the leader now...)

Roles: ``leader``, ``follower`` and ``follower2`` (partition 0's other replicas),
``followers`` (both), ``controller``, ``zk``, and ``b1``..``bN``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

FIXED: dict[str, str] = {
    # What the issue lists as tried by hand, now kept.
    "leader-isolated": "isolate leader; wait 20; heal",
    "zk-isolated": "isolate zk; wait 15; heal",
    "follower-isolated": "isolate follower; wait 12; heal",
    "controller-isolated": "isolate controller; wait 12; heal",
    "leader-flapping": "flap leader 5 2 2; heal",
    "leader-past-session-3x": (
        "isolate leader; wait 9; rejoin leader; wait 5; isolate leader; wait 9; "
        "rejoin leader; wait 5; isolate leader; wait 9; heal"
    ),
    # One-way and partial cuts.
    "leader-cut-from-followers": "partition leader / followers; wait 15; heal",
    "followers-refused-by-leader": "refuse follower leader; refuse follower2 leader; wait 15; heal",
    "leader-drops-follower-packets": "block follower leader; wait 12; heal",
    "zk-one-way-from-leader": "block leader zk; wait 12; heal",
    # Network faults combined with process and disk faults.
    "leader-isolated-then-killed": "isolate leader; wait 8; kill leader; wait 3; heal",
    "zk-frozen-follower-isolated": "freeze zk; isolate follower; wait 10; heal",
    "controller-isolated-leader-frozen": "isolate controller; freeze leader; wait 10; heal",
    "zk-killed-leader-isolated": "isolate leader; kill zk; wait 8; restart zk; wait 8; heal",
    "follower-disk-full": "fill-disk follower; wait 12; heal",
    "follower-disk-full-leader-isolated": (
        "fill-disk follower; wait 4; isolate leader; wait 12; heal"
    ),
}

ROLES = ("leader", "follower", "follower2", "controller", "zk")


@dataclass(frozen=True)
class Step:
    action: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return " ".join((self.action, *self.args))


ARITY = {
    "isolate": 1, "rejoin": 1, "partition": 3, "block": 2, "refuse": 2, "unblock": 2,
    "kill": 1, "restart": 1, "freeze": 1, "thaw": 1, "fill-disk": 1, "free-disk": 1,
    "flap": 4, "wait": 1, "heal": 0, "roles": 0,
}  # fmt: skip


def parse(text: str) -> list[Step]:
    """Steps of a schedule's text; ValueError naming the step that is not one."""
    steps = []
    for part in text.split(";"):
        words = part.split()
        if not words:
            continue
        action, args = words[0], tuple(words[1:])
        if action not in ARITY or len(args) != ARITY[action]:
            raise ValueError(f"not a step: {part.strip()!r}")
        steps.append(Step(action, args))
    if not steps or steps[-1].action != "heal":
        steps.append(Step("heal", ()))
    return steps


def needs_small_disk(text: str) -> bool:
    return "fill-disk" in text


def random_schedule(rng: random.Random) -> str:
    """Two to four overlapping faults with waits between, then heal."""
    faults: list[str] = []
    undo: list[str] = []
    used: set[str] = set()
    for _ in range(rng.randint(2, 4)):
        target = rng.choice([r for r in ROLES if r not in used] or ["leader"])
        used.add(target)
        kind = rng.choice(_KINDS_FOR.get(target, _BROKER_KINDS))
        other = rng.choice([r for r in ("leader", "follower", "zk") if r != target])
        if kind == "flap":
            times, off, on = rng.randint(2, 5), rng.randint(1, 3), rng.randint(1, 3)
            faults.append(f"flap {target} {times} {off} {on}")
        else:
            fault, undone = _FAULTS[kind]
            faults.append(fault.format(target=target, other=other))
            undo.append(undone.format(target=target, other=other))
        faults.append(f"wait {rng.randint(2, 12)}")
    if undo and rng.random() < 0.5:  # sometimes undo one fault before the rest
        faults.append(rng.choice(undo))
        faults.append(f"wait {rng.randint(1, 6)}")
    faults.append("heal")
    return "; ".join(faults)


# A fault and the step that undoes it.
_FAULTS = {
    "isolate": ("isolate {target}", "rejoin {target}"),
    "freeze": ("freeze {target}", "thaw {target}"),
    "kill": ("kill {target}", "restart {target}"),
    "block": ("block {target} {other}", "unblock {target} {other}"),
    "refuse": ("refuse {target} {other}", "unblock {target} {other}"),
    "fill-disk": ("fill-disk {target}", "free-disk {target}"),
}
_BROKER_KINDS = ("isolate", "freeze", "kill", "block", "refuse", "flap", "fill-disk")
_KINDS_FOR = {
    "zk": ("isolate", "freeze", "kill", "block"),
    "controller": ("isolate", "freeze", "kill", "block", "refuse", "flap"),
    "leader": ("isolate", "freeze", "kill", "block", "refuse", "flap"),
}
