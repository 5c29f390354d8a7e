"""``kafkette produce`` / ``kafkette consume`` throughput beside kcat's, on the same broker.

    python -m bench.cli_throughput [--records 200000] [--size 100] [--rounds 3] [--json]

One kafkette (``python -m kafkette serve``, fresh data dir, free port) serves every run.
Each round, for each tool:

* produce: the same file of N lines of S bytes (no keys), ``kcat -P -l FILE`` vs
  ``kafkette produce --file FILE``, each to its own new topic (1 partition). Both wait for
  acks=all (librdkafka's and kafkette produce's default).
* consume: the same topic (the one kafkette produce wrote), from the beginning to the end,
  ``kcat -C -e -q`` vs ``kafkette consume -e``, both with their default ``%s\\n``-like
  output, written to /dev/null.

Printed per run: records/s (wall clock, process start to exit: what a user waits for), the
tool's CPU seconds per million records (from the child's rusage: the figure that survives a
busy machine), the broker's CPU seconds per million records (/proc/PID/stat), and the
kafkette/kcat ratio of the best round of each. ``uptime`` before and after says how loaded
the machine was; on a busy 2-core machine wall-clock figures of both tools move together.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness.raw_wire import free_port
from bench.harness.serve_process import ServeProcess, serve_args

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (the broker is one process), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def uptime() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def start_broker(data_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """``kafkette serve`` on a free port in its own session, once ready; log beside data_dir."""
    args = [*serve_args(data_dir, f"127.0.0.1:{free_port()}"), "--log-level", "WARNING"]
    serve = ServeProcess(args, data_dir.with_suffix(".log"), new_session=True).wait_ready(60)
    return serve.proc, serve.bootstrap


def timed(argv: list[str], broker_pid: int) -> dict[str, float]:
    """Run ``argv`` (stdout to /dev/null); wall seconds, its CPU seconds, the broker's."""
    broker_before = cpu_seconds(broker_pid)
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    error = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {error.strip()[-300:]}")
    return {"wall_s": wall, "tool_cpu_s": usage.ru_utime + usage.ru_stime,
            "broker_cpu_s": cpu_seconds(broker_pid) - broker_before}


def figures(run: dict[str, float], records: int) -> dict[str, float]:
    return {
        "records_per_s": records / run["wall_s"],
        "tool_cpu_s_per_M": run["tool_cpu_s"] * 1e6 / records,
        "broker_cpu_s_per_M": run["broker_cpu_s"] * 1e6 / records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="bytes per record")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    if not Path(KCAT).exists():
        raise SystemExit("kcat not found: install it (apt-get install kcat)")

    kafkette = [sys.executable, "-m", "kafkette"]
    load_before = uptime()
    with tempfile.TemporaryDirectory(prefix="cli-throughput-") as tmp:
        work = Path(tmp)
        lines = work / "records.txt"
        line = (b"x" * (args.size - 8))
        with open(lines, "wb") as out:
            for i in range(args.records):
                out.write(b"%08d" % i + line + b"\n")
        broker, bootstrap = start_broker(work / "data")
        results: dict[str, list[dict[str, float]]] = {
            "produce kcat": [], "produce kafkette": [],
            "consume kcat": [], "consume kafkette": []}
        try:
            for round_number in range(args.rounds):
                kcat_topic, our_topic = f"kcat-{round_number}", f"kafkette-{round_number}"
                runs = {
                    "produce kcat": [KCAT, "-P", "-q", "-b", bootstrap, "-t", kcat_topic,
                                     "-l", str(lines)],
                    "produce kafkette": [*kafkette, "produce", our_topic, "-b", bootstrap,
                                         "--file", str(lines)],
                    "consume kcat": [KCAT, "-C", "-q", "-e", "-b", bootstrap, "-t", our_topic,
                                     "-o", "beginning"],
                    "consume kafkette": [*kafkette, "consume", our_topic, "-b", bootstrap,
                                         "-e"],
                }
                for name, argv in runs.items():
                    results[name].append(figures(timed(argv, broker.pid), args.records))
        finally:
            os.killpg(broker.pid, signal.SIGTERM)
            broker.wait(timeout=30)
    best = {name: max(runs, key=lambda r: r["records_per_s"]) for name, runs in results.items()}
    report = {
        "records": args.records, "size": args.size, "rounds": args.rounds,
        "load_before": load_before, "load_after": uptime(), "best": best,
        "ratio_kafkette_over_kcat": {
            kind: best[f"{kind} kafkette"]["records_per_s"] / best[f"{kind} kcat"]["records_per_s"]
            for kind in ("produce", "consume")},
        "all": results,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{args.records:,} records x {args.size} B, best of {args.rounds} rounds; "
          f"load average before {load_before}, after {report['load_after']}")
    print(f"{'run':<18}{'records/s':>12}{'tool CPU s/M':>14}{'broker CPU s/M':>16}")
    for name, run in best.items():
        print(f"{name:<18}{run['records_per_s']:>12,.0f}{run['tool_cpu_s_per_M']:>14.2f}"
              f"{run['broker_cpu_s_per_M']:>16.2f}")
    for kind, ratio in report["ratio_kafkette_over_kcat"].items():
        print(f"{kind}: kafkette {ratio:.2f}x kcat's records/s")


if __name__ == "__main__":
    main()
