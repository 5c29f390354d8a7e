"""How long the KIP-848 server assignors take on the event loop (they run inside a
heartbeat): 2,000 partitions over 100 members, a fresh assignment, then a rebalance
after one member leaves and one joins (the sticky path), and members with uneven
subscriptions. Prints seconds per call (uniform, uneven: 4.4 s before the balance loop
stopped re-sorting after every move, 0.26 s after).

    .venv/bin/python bench/consumer_assignor_bench.py
"""

from __future__ import annotations

import time
import uuid

from kafkette.broker.groups.consumer.assignors import ASSIGNORS, AssignorMember, AssignorTopic


def main(partitions: int = 2000, members: int = 100, topics: int = 20) -> None:
    tids = [uuid.uuid4() for _ in range(topics)]
    view = {t: AssignorTopic(f"t{i}", partitions // topics) for i, t in enumerate(tids)}
    everyone = frozenset(tids)
    for name, assignor in ASSIGNORS.items():
        specs = {f"m{i:03d}": AssignorMember(everyone) for i in range(members)}
        start = time.perf_counter()
        target = assignor(specs, view)
        fresh = time.perf_counter() - start
        specs = {m: AssignorMember(everyone, target[m]) for m in specs if m != "m000"}
        specs["m999"] = AssignorMember(everyone)
        start = time.perf_counter()
        assignor(specs, view)
        sticky = time.perf_counter() - start
        # Uneven subscriptions (member i takes topics 0..i%topics): the balance loop's case.
        specs = {f"m{i:03d}": AssignorMember(frozenset(tids[: 1 + i % topics]))
                 for i in range(members)}
        start = time.perf_counter()
        assignor(specs, view)
        uneven = time.perf_counter() - start
        print(f"{name:8s} {partitions} partitions x {members} members: "
              f"fresh {fresh:.3f} s, rebalance {sticky:.3f} s, uneven subscriptions "
              f"{uneven:.3f} s")


if __name__ == "__main__":
    main()
