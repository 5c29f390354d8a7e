"""Network partitions and process faults against a kafkette cluster, checked after each.

    python -m bench.nemesis --runs N --seed S            random schedules, reproducible by seed
    python -m bench.nemesis --fixed [NAME ...]           the named schedules CI runs a part of
    python -m bench.nemesis --schedule "isolate leader; wait 20; heal"

Each schedule gets a fresh cluster (ZooKeeper and three brokers, each in its own network
namespace; bench/harness/nemesis/), an idempotent acks=all producer in the root namespace
and one stranded in the leader's, and with ``--workloads`` a consumer group, a transactional
consume-transform-produce and a share group. Printed per schedule: its steps with their
times, records acknowledged / lost / duplicated, recovery time and the findings of the
checker; at the end the totals. Exit 1 when any schedule had a finding, 2 when the machine
cannot run it (needs root, ``ip``, ``nft``). Schedule grammar: bench/harness/nemesis/schedules.py.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.nemesis.network import unavailable_reason
from bench.harness.nemesis.runner import WORKLOADS, Result, run_schedule
from bench.harness.nemesis.schedules import FIXED, parse, random_schedule


def _plan(args: argparse.Namespace) -> list[tuple[str, str, int | None]]:
    if args.schedule:
        parse(args.schedule)  # a typo is a usage error before anything starts
        return [("given", args.schedule, None)]
    if args.fixed is not None:
        names = args.fixed or list(FIXED)
        unknown = [name for name in names if name not in FIXED]
        if unknown:
            raise SystemExit(f"unknown schedules {unknown}; known: {', '.join(FIXED)}")
        return [(name, FIXED[name], None) for name in names]
    plan = []
    for run in range(args.runs):
        seed = args.seed + run
        plan.append((f"random-{seed}", random_schedule(random.Random(seed)), seed))
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.nemesis", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n", 1)[1],
    )  # fmt: skip
    parser.add_argument("--runs", type=int, default=5, help="random schedules (default 5)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first (default 1)")
    parser.add_argument("--fixed", nargs="*", metavar="NAME", help="named schedules (all if none)")
    parser.add_argument("--schedule", help="one schedule given as text")
    parser.add_argument("--workloads", default="group,txn",
                        help=f"consumers beside the producers: any of {','.join(WORKLOADS)} "
                        "or none (default group,txn)")  # fmt: skip
    parser.add_argument("--rate", type=float, default=150.0, help="root producer records/s")
    parser.add_argument(
        "--acks",
        default="all",
        choices=("all", "1"),
        help="the producers' acks (1: losses are measured, not findings)",
    )
    parser.add_argument(
        "--unclean",
        action="store_true",
        help="unclean.leader.election.enable=true (losses measured, not findings)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and logs")
    args = parser.parse_args(argv)
    workloads = tuple(w for w in args.workloads.split(",") if w and w != "none")
    if set(workloads) - set(WORKLOADS):
        parser.error(f"--workloads: one of {','.join(WORKLOADS)}")
    reason = unavailable_reason()
    if reason is not None:
        print(f"bench.nemesis: cannot run here: {reason}", file=sys.stderr)
        return 2
    plan = _plan(args)
    base = Path(tempfile.mkdtemp(prefix="kafkette-nemesis-"))
    results: list[Result] = []
    began = time.monotonic()
    try:
        for index, (name, schedule, seed) in enumerate(plan, 1):
            print(f"[{index}/{len(plan)}] {name}: {schedule}", flush=True)
            result = run_schedule(
                base / name, name, schedule, workloads=workloads, rate=args.rate, seed=seed,
                acks=args.acks, unclean=args.unclean, say=lambda line: print(line, flush=True),
            )  # fmt: skip
            results.append(result)
            print(f"  {result.summary()}", flush=True)
            for finding in result.findings:
                print(f"  FINDING {finding}", flush=True)
            if result.logs and args.keep:
                (base / name / "failure.txt").write_text(result.logs)
    finally:
        _totals(results, time.monotonic() - began)
        if args.keep:
            print(f"data and logs kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return 0 if all(result.ok for result in results) else 1


def _totals(results: list[Result], seconds: float) -> None:
    acked = sum(r.acked for r in results)
    lost = sum(r.lost for r in results)
    duplicated = sum(r.duplicated for r in results)
    failing = [r.name for r in results if not r.ok]
    recovery = max((r.recovery_s for r in results), default=0.0)
    print(
        f"total: {len(results)} schedules in {seconds:.0f}s, acked={acked} lost={lost} "
        f"duplicated={duplicated}, slowest recovery {recovery:.1f}s, "
        f"with findings: {', '.join(failing) or 'none'}"
    )


if __name__ == "__main__":
    sys.exit(main())
