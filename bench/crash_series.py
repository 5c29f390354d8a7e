"""kill -9 series under idempotent acks=all load: counts lost and duplicated values.

A script, not a test (the CI test, ``tests/broker/test_crash_idempotent.py``,
runs a few rounds of the same load, which lives here in ``bench.harness.crash_load``).
For each mode, one ``kafkette serve`` subprocess is SIGKILLed ``--rounds``
times at seeded random points while a confluent-kafka idempotent producer
(acks=all, 5 in flight) and a consumer group run; each time it restarts on the
same data dir and port. Modes: Kafka's defaults (no fsync) and
``log.flush.interval.messages=1``.

    python -m bench.crash_series [--rounds 10] [--seed 1] [--mode default|flush1]

Prints, per mode: values produced / acknowledged / stored, lost (acknowledged
but not stored at its offset), duplicated (stored more than once), offset
gaps, committed-offset regressions, producer-id reuse, and kill-to-ready
restart times. Goal: zero lost, zero duplicated, in both modes.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from bench.harness.raw_wire import free_port
from bench.harness.serve_process import RestartedServe

BROKER_ARGS = ("--config", "num.partitions=3", "--config", "group.initial.rebalance.delay.ms=0")
MODES = {
    "default": (),
    "flush1": ("--config", "log.flush.interval.messages=1"),
}
TOPIC_CONFIGS = {"segment.bytes": "262144", "retention.ms": "-1"}


def load_crash_module() -> ModuleType:
    from bench.harness import crash_load  # confluent-kafka: imported when a series runs

    return crash_load


def series_broker(workdir: Path, mode: str, extra: Sequence[str]) -> RestartedServe:
    """The broker of one mode's series (both series): its own data dir and log under
    ``workdir``, a free port kept across restarts."""
    data_dir, log_path = workdir / f"data-{mode}", workdir / f"broker-{mode}.log"
    return RestartedServe(data_dir, free_port(), [*BROKER_ARGS, *extra], log_path)


def print_restart_times(mode: str, restarts: list[float]) -> None:
    """One line of kill-to-ready figures; both series print it the same way."""
    if restarts:
        print(
            f"{mode:8s} kill-to-ready restart: median {statistics.median(restarts):.2f}s "
            f"max {max(restarts):.2f}s over {len(restarts)} restarts"
        )


def run_mode(crash_load, mode: str, rounds: int, seed: int, workdir: Path) -> bool:
    broker = series_broker(workdir, mode, MODES[mode])
    started = time.monotonic()
    try:
        result = crash_load.run_series(
            broker.start, broker.kill, TOPIC_CONFIGS, rounds, seed,
            log=lambda line: print(f"  [{mode}] {line}", flush=True),
        )
    finally:
        broker.stop()
    elapsed = time.monotonic() - started
    print(f"{mode:8s} {result.summary()} seconds={elapsed:.0f}")
    print_restart_times(mode, broker.restart_seconds)
    for label, items in (
        ("lost", result.lost), ("duplicated", result.duplicated), ("gaps", result.gaps),
        ("failed", result.failed), ("commit regressions", result.commit_regressions),
        ("producer id reuse", result.producer_id_reuse),
        ("stalled", [result.stalled] if result.stalled else []),
    ):
        if items:
            print(f"{mode:8s}   {label}: {items[:5]}")
    return result.ok


def series_main(
    description: str, default_rounds: int, modes: dict, workdir_prefix: str,
    load_module, run_mode,
) -> int:
    """Command line shared by the kill -9 series: rounds, seed, modes, keep.

    Each mode runs on its own data dir under one temporary workdir, which is
    kept when asked or when anything failed (its broker logs are the evidence).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=default_rounds,
                        help="kill -9 rounds per mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=sorted(modes), action="append",
                        help="default: every mode")
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and logs")
    args = parser.parse_args()
    load = load_module()
    workdir = Path(tempfile.mkdtemp(prefix=workdir_prefix))
    ok = True
    try:
        for mode in args.mode or list(modes):
            ok &= run_mode(load, mode, args.rounds, args.seed, workdir)
    finally:
        if args.keep or not ok:
            print(f"data dirs and broker logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


def main() -> int:
    return series_main(
        __doc__.split("\n\n")[0], 10, MODES, "kafkette-crash-series-",
        load_crash_module, run_mode,
    )


if __name__ == "__main__":
    sys.exit(main())
