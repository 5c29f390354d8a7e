"""kill -9 series during transactions: counts transactions split, lost or wrongly committed.

A script, not a test (the CI test, ``tests/broker/test_crash_transactions.py``,
runs a few rounds of the same load). One ``kafkette serve`` subprocess is
SIGKILLed ``--rounds`` times at seeded random moments (some aimed at EndTxn and
the markers) while two confluent-kafka transactional producers run numbered
commit/abort transactions over five partitions with ``send_offsets_to_transaction``;
each time it restarts on the same data dir and port. Modes: Kafka's defaults (no
fsync) and ``log.flush.interval.messages=1``.

    .venv/bin/python bench/txn_crash_series.py [--rounds 30] [--seed 1] [--mode default|flush1]

Prints, per mode: transactions run, commits and aborts the clients saw acknowledged,
commits with no answer, commits and aborts in the log, records visible to
read_committed, restart times, and every failure found (goal: none).
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from crash_series import BrokerProcess, free_port

LOAD_MODULE = Path(__file__).resolve().parent.parent / "tests" / "broker" / "txn_crash_load.py"
MODES = {
    "default": (),
    "flush1": ("--config", "log.flush.interval.messages=1"),
}
TOPIC_CONFIGS = {"segment.bytes": "16384", "retention.ms": "-1"}
EXTRA = ("--config", "transaction.state.log.segment.bytes=65536")


def load_module():
    spec = importlib.util.spec_from_file_location("kafkette_txn_crash_load", LOAD_MODULE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run_mode(load, mode: str, rounds: int, seed: int, workdir: Path) -> bool:
    data_dir = workdir / f"data-{mode}"
    broker = BrokerProcess(
        data_dir, free_port(), (*MODES[mode], *EXTRA), workdir / f"broker-{mode}.log"
    )
    started = time.monotonic()
    try:
        result = load.run_series(
            broker.start,
            broker.kill,
            TOPIC_CONFIGS,
            rounds,
            seed,
            log=lambda line: print(f"  [{mode}] {line}", flush=True),
        )
    finally:
        broker.stop()
    elapsed = time.monotonic() - started
    print(f"{mode:8s} {result.summary()} seconds={elapsed:.0f}")
    print(f"{mode:8s} client errors: {dict(result.client_errors)}")
    restarts = broker.restart_seconds
    if restarts:
        print(
            f"{mode:8s} kill-to-ready restart: median {statistics.median(restarts):.2f}s "
            f"max {max(restarts):.2f}s over {len(restarts)} restarts"
        )
    for name, items in result.failures().items():
        print(f"{mode:8s}   {name}: {items if isinstance(items, str) else items[:5]}")
    return result.ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30, help="kill -9 rounds per mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--mode", choices=sorted(MODES), action="append", help="default: every mode"
    )
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and logs")
    args = parser.parse_args()
    load = load_module()
    workdir = Path(tempfile.mkdtemp(prefix="kafkette-txn-crash-series-"))
    ok = True
    try:
        for mode in args.mode or list(MODES):
            ok &= run_mode(load, mode, args.rounds, args.seed, workdir)
    finally:
        if args.keep or not ok:
            print(f"data dirs and broker logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
