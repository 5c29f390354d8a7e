"""``python -m bench``: run the workloads on each broker, alone, alternating, for several rounds.

Order: for each round, for each workload, each broker in turn (A B A B ...), every time on a
freshly started broker with fresh storage, so no run inherits another's data or warm caches
and slow drift (thermal, page cache) spreads evenly over the brokers. Results go to
``bench/results/`` (git-ignored) as JSON, Markdown and PNG; every process started is stopped on
exit, error, Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from .brokers import Broker, RunningBroker, all_brokers
from .processes import ProcessRegistry, RssSampler
from .profiling import PySpyRecording
from .report import markdown, medians, print_report, summarize, write_chart, write_json
from .suites import DEFAULT_WORKLOADS, WORKLOADS
from .targets import evaluate
from .workloads import (
    CONSUMER_QUEUE_DEFAULTS,
    FULL,
    QUICK,
    UNPAUSED,
    Context,
    Sizes,
    WorkloadError,
    fill_config,
)

DEFAULT_RESULTS = Path(__file__).resolve().parents[1] / "results"
IDLE_SETTLE_S = 1.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="kafkette performance, side by side with tansu and Apache Kafka.",
    )
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, 1 round (about 10 minutes for three brokers)")
    parser.add_argument("--rounds", type=int, default=None,
                        help="rounds per broker and workload (default 3, or 1 with --quick)")
    parser.add_argument("--brokers", default="kafkette,tansu,kafka",
                        help="comma-separated, from: kafkette, kafkette-before "
                             "($KAFKETTE_BEFORE_BIN), kafkette-observed, tansu, kafka")
    parser.add_argument("--workloads", default=",".join(DEFAULT_WORKLOADS),
                        help=f"comma-separated, from: {', '.join(WORKLOADS)} (default: all but "
                             "scaling and idle-partitions)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS,
                        help="folder for JSON/Markdown/PNG results (default bench/results)")
    parser.add_argument("--start-timeout", type=float, default=90.0,
                        help="seconds a broker may take to answer Metadata")
    parser.add_argument("--profile", action="store_true",
                        help="sample kafkette with py-spy during each workload (SVG flame graphs "
                             "in the results folder; figures of profiled runs are perturbed)")
    parser.add_argument("--kafkette-config", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to kafkette serve as --config KEY=VALUE (repeatable)")
    parser.add_argument("--consumer-config", action="append", default=[], metavar="KEY=VALUE",
                        help="librdkafka setting for the consume workloads' consumer (repeatable),"
                             " e.g. fetch.queue.backoff.ms=0; the queue limits used are reported")
    args = parser.parse_args(argv)
    args.consumer_settings = dict(CONSUMER_QUEUE_DEFAULTS)
    for item in args.consumer_config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--consumer-config wants KEY=VALUE, got {item!r}")
        args.consumer_settings[key.strip()] = value.strip()
    args.broker_names = _split(parser, args.brokers, all_brokers())
    args.workload_names = _split(parser, args.workloads, WORKLOADS)
    if args.rounds is None:
        args.rounds = 1 if args.quick else 3
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def _split(parser: argparse.ArgumentParser, text: str, known: dict) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        parser.error(f"unknown or empty choice {unknown}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names))


def _environment(brokers: dict[str, Broker], sizes: Sizes, args: argparse.Namespace) -> dict:
    import confluent_kafka
    import kafka

    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            timeout=5, check=False, cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
    except OSError:
        commit = ""
    return {
        "started": dt.datetime.now().isoformat(timespec="seconds"),
        "commit": commit,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "kafka_python": kafka.__version__,
        "brokers": {name: broker.version() for name, broker in brokers.items()},
        "quick": args.quick,
        "rounds": args.rounds,
        "workloads": args.workload_names,
        "sizes": {key: str(value) for key, value in vars(sizes).items()},
        "consumer_settings": args.consumer_settings,
        "fill_producer_settings": {size: fill_config(size) for size in (100, 1024)},
    }


def _raise_keyboard_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


class Runner:
    """Runs the plan; owns the registry, the scratch folder and the list of finished runs."""

    def __init__(self, args: argparse.Namespace, brokers: dict[str, Broker], sizes: Sizes):
        self.args = args
        self.brokers = brokers
        self.sizes = sizes
        self.registry = ProcessRegistry()
        self.scratch = Path(tempfile.mkdtemp(prefix="kafkette-bench-"))
        self.runs: list[dict] = []
        self.broken: dict[str, str] = {}
        self.stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")

    def run_one(
        self, round_no: int, workload: str, name: str, note: Callable[[str], None]
    ) -> dict:
        run: dict = {"round": round_no, "broker": name, "workload": workload,
                     "metrics": {}, "error": None}
        if name in self.broken:
            run["error"] = f"not run: {self.broken[name]}"
            return run
        workdir = self.scratch / f"r{round_no}-{workload}-{name}"
        broker = None
        try:
            note("starting")
            broker = self.brokers[name].start(self.registry, workdir, self.args.start_timeout)
            run["metrics"]["start_s"] = broker.start_s
            time.sleep(IDLE_SETTLE_S)
            if not broker.alive():
                raise WorkloadError(f"broker exited with code {broker.proc.returncode} when idle")
            run["metrics"]["idle_rss_mb"] = broker.rss_mb()
            with RssSampler(broker.proc.pid) as sampler, self._profiler(run, broker):
                context = Context(
                    broker, self.sizes, sampler, note, dict(self.args.consumer_settings)
                )
                run["metrics"].update(WORKLOADS[workload](context))
            if not broker.alive():
                raise WorkloadError(f"broker exited with code {broker.proc.returncode}")
        except Exception as error:
            detail = f"{type(error).__name__}: {error}"
            if broker is not None and not broker.alive():
                detail += f"\nbroker exited ({broker.proc.returncode}); log tail:\n"
                detail += broker.log_tail()
            if not isinstance(error, WorkloadError | RuntimeError | TimeoutError):
                detail += "\n" + traceback.format_exc(limit=4)
            run["error"] = detail
            if broker is None:  # could not even start: do not try again on every step
                self.broken[name] = detail.splitlines()[0]
            else:  # keep the whole broker log of a failed run; its work folder is removed
                kept_name = f"{self.stamp}-{name}-{workload}-r{round_no}.log"
                kept = self.args.results / "failed" / kept_name
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(broker.log_path, kept)
                run["broker_log"] = str(kept)
        finally:
            if broker is not None:
                broker.stop()
            shutil.rmtree(workdir, ignore_errors=True)
        return run

    def _profiler(self, run: dict, broker: RunningBroker) -> AbstractContextManager:
        if not self.args.profile or broker.name != "kafkette":
            return nullcontext()
        folder = self.args.results / "profiles"
        folder.mkdir(parents=True, exist_ok=True)
        output = folder / f"{self.stamp}-{run['workload']}-r{run['round']}.svg"
        run["profile"] = str(output)
        return PySpyRecording(self.registry, broker.proc.pid, output)

    def close(self) -> None:
        self.registry.stop_all()
        shutil.rmtree(self.scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    args = parse_args(argv)
    console = Console(width=None if sys.stdout.isatty() else 150)
    known = all_brokers(args.kafkette_config)
    labels = {name: broker.label for name, broker in known.items()}
    brokers: dict[str, Broker] = {}
    notes: list[str] = []
    for name in args.broker_names:
        reason = known[name].unavailable_reason()
        if reason:
            notes.append(f"{known[name].label}: skipped, {reason}")
            console.print(f"[yellow]{notes[-1]}[/yellow]")
        else:
            brokers[name] = known[name]
    if not brokers:
        console.print("[red]no broker to run[/red]")
        return 2
    sizes = QUICK if args.quick else FULL
    names = list(brokers)
    plan = [
        (round_no, workload, name)
        for round_no in range(1, args.rounds + 1)
        for workload in args.workload_names
        for name in names
    ]
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    previous_sigint = signal.signal(signal.SIGINT, signal.default_int_handler)
    runner = Runner(args, brokers, sizes)
    document = {"environment": _environment(brokers, sizes, args)}
    load = os.getloadavg()[0]
    if load > (os.cpu_count() or 1) * 0.5:
        notes.append(
            f"machine busy at start (1-minute load {load:.1f} on {os.cpu_count()} CPUs): "
            "figures are noisy, compare ratios from the same run only"
        )
        console.print(f"[yellow]{notes[-1]}[/yellow]")
    if {"consume", "consume-unpaused"} & set(args.workload_names):
        notes.append(
            "consume: topics filled with fixed batches ("
            + ", ".join(f"{size} B: {fill_config(size)['batch.num.messages']} records"
                        for size in (100, 1024))
            + " a batch, linger.ms=100, uncompressed); consumer settings: "
            + ", ".join(f"{key}={value}" for key, value in args.consumer_settings.items())
        )
    if "consume-unpaused" in args.workload_names:
        notes.append(
            "consume-unpaused: the same consumer with "
            + ", ".join(f"{key}={value}" for key, value in UNPAUSED.items())
        )
    interrupted = False
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task("starting", total=len(plan))
            for round_no, workload, name in plan:
                prefix = f"round {round_no}/{args.rounds} {workload:<20} {labels[name]:<12}"

                def note(text: str, prefix: str = prefix) -> None:
                    progress.update(task, description=f"{prefix} {text}")

                if not console.is_terminal:  # no live bar in a log file: one line per step
                    console.print(f"{prefix} ...")
                run = runner.run_one(round_no, workload, name, note)
                runner.runs.append(run)
                if run["error"] and not run["error"].startswith("not run"):
                    progress.console.print(
                        f"[red]{labels[name]} {workload} round {round_no} failed:[/red] "
                        f"{run['error']}"
                    )
                progress.advance(task)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: stopping brokers, writing partial results[/yellow]")
    finally:
        runner.close()
        signal.signal(signal.SIGTERM, previous_sigterm)
        signal.signal(signal.SIGINT, previous_sigint)
    for name, reason in runner.broken.items():
        notes.append(f"{labels[name]}: failed to start, {reason}")
    failures = [run for run in runner.runs if run["error"] and not run["error"].startswith("not")]
    for run in failures:
        notes.append(
            f"{labels[run['broker']]} {run['workload']} round {run['round']} failed: "
            f"{run['error'].splitlines()[0]}"
        )
    if args.profile:
        notes.append("profiled with py-spy: kafkette's figures in this run are perturbed")
    summary = summarize(runner.runs)
    verdicts = evaluate(medians(summary), labels)
    print_report(console, summary, names, labels, verdicts, notes)
    document["environment"]["loadavg_at_end"] = os.getloadavg()
    document.update(
        {"interrupted": interrupted, "notes": notes, "runs": runner.runs, "summary": summary,
         "targets": verdicts}
    )
    _write_results(
        args.results, runner.stamp, document, summary, names, labels, verdicts, notes, console
    )
    if interrupted:
        return 130
    return 1 if failures or runner.broken else 0


def _write_results(
    folder: Path, stamp: str, document: dict, summary: dict, names: list[str],
    labels: dict[str, str], verdicts: list[dict], notes: list[str], console: object,
) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"{stamp}.json", folder / f"{stamp}.md"]
    write_json(written[0], document)
    written[1].write_text(markdown(summary, names, labels, verdicts, notes))
    if write_chart(folder / f"{stamp}.png", summary, names, labels):
        written.append(folder / f"{stamp}.png")
    for path in written:
        shutil.copyfile(path, folder / f"latest{path.suffix}")
    console.print("results: " + ", ".join(str(path) for path in written))


if __name__ == "__main__":
    sys.exit(main())
