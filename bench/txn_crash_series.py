"""kill -9 series during transactions: counts transactions split, lost or wrongly committed.

A script, not a test (the CI test, ``tests/broker/test_crash_transactions.py``,
runs a few rounds of the same load, which lives here in ``bench.harness.txn_crash_load``).
One ``kafkette serve`` subprocess is SIGKILLed ``--rounds`` times at seeded
random moments (some aimed at EndTxn and the markers) while two confluent-kafka
transactional producers run numbered commit/abort transactions over five
partitions with ``send_offsets_to_transaction``; each time it restarts on the
same data dir and port. Modes: Kafka's defaults (no fsync) and
``log.flush.interval.messages=1``.

    python -m bench.txn_crash_series [--rounds 30] [--seed 1] [--mode default|flush1]

Prints, per mode: transactions run, commits and aborts the clients saw acknowledged,
commits with no answer, commits and aborts in the log, records visible to
read_committed, restart times, and every failure found (goal: none).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from types import ModuleType

from bench.crash_series import print_restart_times, series_broker, series_main

MODES = {
    "default": (),
    "flush1": ("--config", "log.flush.interval.messages=1"),
}
TOPIC_CONFIGS = {"segment.bytes": "16384", "retention.ms": "-1"}
EXTRA = ("--config", "transaction.state.log.segment.bytes=65536")


def load_module() -> ModuleType:
    from bench.harness import txn_crash_load  # confluent-kafka: imported when a series runs

    return txn_crash_load


def run_mode(load, mode: str, rounds: int, seed: int, workdir: Path) -> bool:
    broker = series_broker(workdir, mode, (*MODES[mode], *EXTRA))
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
    print_restart_times(mode, broker.restart_seconds)
    for name, items in result.failures().items():
        print(f"{mode:8s}   {name}: {items if isinstance(items, str) else items[:5]}")
    return result.ok


def main() -> int:
    return series_main(
        __doc__.split("\n\n")[0], 30, MODES, "kafkette-txn-crash-series-",
        load_module, run_mode,
    )


if __name__ == "__main__":
    sys.exit(main())
