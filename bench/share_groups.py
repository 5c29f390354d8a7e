"""How fast a share group (KIP-932) delivers from one partition with 1, 4 and 16 consumers,
beside a classic consumer group of one on the same partition, and what an acknowledgement
costs in round-trip time.

    python -m bench.share_groups [--records 100000] [--consumers 1,4,16]
        [--modes implicit,explicit] [--brokers kafkette,kafka] [--rounds 1]
        [--value-size 100] [--group-config KEY=VALUE] [--kafkette-config KEY=VALUE]
        [--profile DIR] [--json]

Each broker is started fresh and alone (``bench.harness.brokers``; Apache Kafka from
``KAFKA_HOME``, else the reference distribution's ``kafka-ref home``). One 1-partition topic
is filled with ``--records`` records of ``--value-size`` bytes, cut into batches by record
count as the consume workload does (``bench.harness.workloads.fill_config``: 163 records of
100 B), so both brokers store and serve the same batches. Then every setup reads all of it,
each with a fresh group:

- ``classic x1``: one confluent-kafka ``Consumer`` in a classic group (subscribe,
  ``auto.offset.reset=earliest``), with librdkafka's local-queue pause lifted
  (``bench.harness.workloads.UNPAUSED``: at 100 B the default pause is a 1 s client timer,
  see ``bench/consume_pauses.py``); ``consume(500)`` per call. Run on both brokers.
- ``share xK implicit``: K confluent-kafka ``ShareConsumer``s in one share group
  (``share.auto.offset.reset=earliest`` set with IncrementalAlterConfigs on the GROUP),
  default ``share.acknowledgement.mode=implicit``: a poll's records are accepted with the
  next ShareFetch. kafkette only.
- ``share xK explicit``: the same, with ``share.acknowledgement.mode=explicit``: every record
  of a poll is ACCEPTed, then ``commit_sync()`` (a ShareAcknowledge round trip, answered once
  the share partition's state is written to ``__share_group_state``) before the next poll.
  The ack latency is that call's duration, p50/p99 over every commit of every member.

Every consumer is its own process (``python -m bench.share_groups member ...``; the
librdkafka client and its Python loop must not share one GIL, and 16 in one process would
measure the client): each subscribes, says ``ready`` and waits; the share members join the
group in the background (librdkafka heartbeats without polling, and sends no ShareFetch
before the first poll), so once all are ready and ``--settle`` seconds have passed they are
released together. The clock runs from the first record any member receives to the last
record received (explicit: to the end of the commit that acknowledged it). Members stop when
the sum of their counts (one 8-byte slot each in a shared file) reaches the record count.

Each run is checked: every offset of the topic was delivered exactly once over all members
(and, for share members, with delivery count 1), and every commit answered without error;
otherwise the bench fails loudly (exit 1) with the offsets that were lost or duplicated.

The table gives records/s, the ratio to the classic consumer on kafkette and to the classic
consumer on Apache Kafka, and the ack latency p50/p99 (explicit runs). Below it, per setup:
the timed seconds; the broker's CPU seconds per million records (utime+stime from
``/proc``, from the release to the last member's result); how many members received
records; records per commit (explicit); the busiest member's share of a core (near 1.0: the
client set the pace); and librdkafka's error lines in the members' stderr (the first distinct
ones are printed: e.g. a response it could not parse and dropped). ``--profile DIR`` writes
a py-spy flame graph of kafkette per share run.

Apache Kafka 4.0 runs only the classic consumer: its share groups are the early-access v0
protocol (off unless enabled, and only ShareGroupHeartbeat/ShareFetch v0), which librdkafka
2.16's ShareConsumer (ShareGroupHeartbeat v1) does not speak; the bench prints what Kafka's
ApiVersions advertised as the reason. Figures depend on the machine (2 cores shared by the
broker and up to 16 client processes): compare within one run.
"""

from __future__ import annotations

import argparse
import array
import json
import math
import mmap
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.harness.processes import one_line_each

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120.0
CLASSIC = "classic"
SHARE_GROUP_HEARTBEAT, SHARE_FETCH = 76, 78
REFERENCE_REASON = (
    "Kafka 4.0's share groups are an early-access protocol (v0) that librdkafka 2.16 "
    "does not speak"
)


class MeasurementError(Exception):
    """A run that failed or delivered wrongly: reported, and the bench exits 1."""


# The member: one consumer in its own process ------------------------------------------


def _member(spec: dict) -> dict:
    """Consume until the members' summed count reaches ``spec['records']``; write the offsets
    received to ``spec['offsets']``; return timings and what went wrong."""
    from confluent_kafka import AcknowledgeType, Consumer, ShareConsumer

    records, index, kind = spec["records"], spec["index"], spec["kind"]
    common = {"bootstrap.servers": spec["bootstrap"], "group.id": spec["group"],
              "client.id": f"share-bench-{index}", "broker.address.family": "v4"}
    explicit = kind == "explicit"
    if kind == CLASSIC:
        consumer = Consumer({**common, "auto.offset.reset": "earliest",
                             "enable.auto.commit": True, **spec["consumer_config"]})
    else:
        consumer = ShareConsumer({**common, "share.acknowledgement.mode": kind})
    consumer.subscribe([spec["topic"]])
    with open(spec["counts"], "r+b") as file:
        shared = mmap.mmap(file.fileno(), 0)
    counts = memoryview(shared).cast("q")
    offsets = array.array("q")
    redelivered = 0
    latencies: list[float] = []
    errors: list[str] = []
    first = last = 0.0
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        consumer.close()  # the parent gave up before the start
        return {}
    usage = os.times()
    released = time.monotonic()
    deadline = released + spec["timeout"]
    received = 0
    try:
        while time.monotonic() < deadline and not errors:
            if sum(counts) >= records:
                break
            if kind == CLASSIC:
                batch = consumer.consume(num_messages=500, timeout=0.1)
            else:
                batch = consumer.poll(0.1)
            if not batch:
                continue
            now = time.monotonic()
            first = first or now
            last = now
            for message in batch:
                if message.error() is not None:
                    errors.append(str(message.error()))
                    continue
                offsets.append(message.offset())
                if kind != CLASSIC:
                    if message.delivery_count() != 1:
                        redelivered += 1
                    if explicit:
                        consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if explicit:
                started = time.monotonic()
                answer = consumer.commit_sync(30)
                last = time.monotonic()
                latencies.append(last - started)
                errors += [f"commit_sync: {tp}: {e}" for tp, e in answer.items() if e]
            received += len(batch)
            counts[index] = received
        if sum(counts) < records and not errors:
            errors.append(f"timed out after {spec['timeout']:.0f} s with {sum(counts)} of "
                          f"{records} records delivered")
        if kind == "implicit":  # the last poll's records: accepted by this commit
            answer = consumer.commit_sync(30)
            errors += [f"final commit_sync: {tp}: {e}" for tp, e in answer.items() if e]
    finally:
        cpu = os.times()
        busy = (cpu.user + cpu.system) - (usage.user + usage.system)
        wall = time.monotonic() - released
        with open(spec["offsets"], "wb") as out:
            offsets.tofile(out)
        counts.release()
        shared.close()
    result = {"first": first, "last": last, "received": received, "redelivered": redelivered,
              "latencies": latencies, "errors": errors[:5], "cpu_share": busy / wall}
    print(json.dumps(result), flush=True)
    consumer.close()
    return result


def member_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    try:
        _member(spec)
    except Exception as error:  # one JSON line whatever happens: the parent reads it
        print(json.dumps({"errors": [f"{type(error).__name__}: {error}"]}), flush=True)
        return 1
    return 0


# The parent: brokers, fill, runs, checks ------------------------------------------------


@dataclass
class Run:
    """One setup's figures on one broker."""

    setup: str
    records_per_s: float
    seconds: float
    broker_cpu_s_per_m: float
    latencies_ms: list[float] = field(default_factory=list)
    members_with_records: int = 0
    records_per_poll: float = 0.0
    busiest_member_cpu: float = 0.0
    client_log_errors: int = 0
    client_log_sample: list[str] = field(default_factory=list)


class Members:
    """K member processes: started, released together, results read; killed on close."""

    def __init__(self, specs: list[dict], logs: list[Path]) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.procs: list[subprocess.Popen[str]] = []
        for spec, log in zip(specs, logs, strict=True):
            with open(log, "w") as stderr:
                self.procs.append(subprocess.Popen(
                    [sys.executable, "-m", "bench.share_groups", "member", json.dumps(spec)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                    env=env, cwd=REPO, start_new_session=True,
                ))

    def __enter__(self) -> Members:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:  # after its result line a member closes its consumer; else kill it
                    proc.wait(timeout=15 if exc_type is None else 0)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass
                    proc.wait(timeout=10)
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass

    def go(self) -> None:
        for proc in self.procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()

    def lines(self, timeout_s: float) -> list[str]:
        """One line from every member, or MeasurementError when one exits or time runs out."""
        return one_line_each(self.procs, timeout_s, "members", MeasurementError)

def _check_exactly_once(records: int, offset_files: list[Path]) -> None:
    """Every offset 0..records-1 delivered once over all members, or MeasurementError."""
    seen = bytearray(records)
    duplicated: list[int] = []
    outside: list[int] = []
    for path in offset_files:
        offsets = array.array("q")
        offsets.frombytes(path.read_bytes())
        for offset in offsets:
            if not 0 <= offset < records:
                outside.append(offset)
            elif seen[offset]:
                duplicated.append(offset)
            else:
                seen[offset] = 1
    missing = [offset for offset in range(records) if not seen[offset]]
    if duplicated or missing or outside:
        raise MeasurementError(
            f"not exactly once: {len(duplicated)} duplicated (first {duplicated[:5]}), "
            f"{len(missing)} missing (first {missing[:5]}), {len(outside)} outside 0..{records - 1}"
        )


def measure(broker_pid: int, bootstrap: str, topic: str, kind: str, consumers: int,
            args: argparse.Namespace, scratch: Path, profile: Path | None) -> Run:
    """One setup: a fresh group of ``consumers`` members reads the whole topic."""
    from bench.harness.processes import ProcessRegistry, cpu_seconds

    group = f"share-bench-{kind}-{consumers}-{uuid.uuid4().hex[:6]}"
    if kind != CLASSIC:
        _set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest",
                                              **dict(args.group_config)})
    run_dir = Path(tempfile.mkdtemp(prefix=f"{kind}-{consumers}-", dir=scratch))
    counts = run_dir / "counts"
    counts.write_bytes(bytes(8 * consumers))
    from bench.harness.workloads import UNPAUSED

    specs = [{
        "bootstrap": bootstrap, "topic": topic, "group": group, "kind": kind,
        "records": args.records, "index": i, "counts": str(counts),
        "offsets": str(run_dir / f"member-{i}.offsets"), "timeout": args.timeout,
        "consumer_config": dict(UNPAUSED),
    } for i in range(consumers)]
    logs = [run_dir / f"member-{i}.log" for i in range(consumers)]
    with Members(specs, logs) as members:
        for index, line in enumerate(members.lines(60.0)):
            if line.strip() != "ready":
                raise MeasurementError(f"member {index} not ready: {line.strip()[:300]}")
        time.sleep(args.settle)  # the share members' first heartbeats: joined, assigned
        recording = None
        if profile is not None and kind != CLASSIC:
            from bench.harness.profiling import PySpyRecording

            profile.mkdir(parents=True, exist_ok=True)
            recording = PySpyRecording(ProcessRegistry(), broker_pid,
                                       profile / f"{kind}-{consumers}.svg")
            recording.__enter__()
        cpu_before = cpu_seconds(broker_pid)
        try:
            members.go()
            results = [json.loads(line) for line in members.lines(args.timeout + 60)]
        finally:
            cpu_used = cpu_seconds(broker_pid) - cpu_before
            if recording is not None:
                recording.__exit__(None, None, None)
    errors = [f"member {i}: {e}" for i, r in enumerate(results) for e in r.get("errors", [])]
    if errors:
        raise MeasurementError("; ".join(errors[:5]))
    redelivered = sum(r["redelivered"] for r in results)
    if redelivered:
        raise MeasurementError(f"{redelivered} records delivered with a delivery count above 1")
    _check_exactly_once(args.records, [Path(s["offsets"]) for s in specs])
    active = [r for r in results if r["received"]]
    seconds = max(r["last"] for r in active) - min(r["first"] for r in active)
    latencies = [1000 * x for r in results for x in r["latencies"]]
    polls = sum(len(r["latencies"]) for r in results)
    log_errors = [line for log in logs for line in _client_errors(log)]
    return Run(
        setup=_setup_name(kind, consumers),
        records_per_s=args.records / seconds if seconds > 0 else math.inf,
        seconds=seconds,
        broker_cpu_s_per_m=cpu_used / args.records * 1e6,
        latencies_ms=latencies,
        members_with_records=len(active),
        records_per_poll=args.records / polls if polls else 0.0,
        busiest_member_cpu=max(r["cpu_share"] for r in results),
        client_log_errors=len(log_errors),
        client_log_sample=sorted(set(log_errors))[:3],
    )


def _client_errors(log: Path) -> list[str]:
    """librdkafka's error lines (level 3, e.g. a response it could not parse) in a member's
    stderr, without their time stamp and client name."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line.split("|", 3)[-1].split("]: ", 1)[-1] for line in lines if line.startswith("%3|")]


def _setup_name(kind: str, consumers: int) -> str:
    return f"{CLASSIC} x{consumers}" if kind == CLASSIC else f"share x{consumers} {kind}"


def _set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
               for name, value in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)


def fill(bootstrap: str, records: int, value_size: int) -> str:
    """A fresh 1-partition topic holding ``records`` records, batched by count."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from bench.harness.workloads import fill_config

    topic = f"share-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=60)
    failures: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, **fill_config(value_size),
                         "queue.buffering.max.messages": 1_000_000,
                         "delivery.report.only.error": True}, on_delivery=on_delivery)
    value = bytes(value_size)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, value, partition=0)
                break
            except BufferError:
                producer.poll(0.005)
        if i % 10_000 == 0:
            producer.poll(0)
    left = producer.flush(120)
    if failures or left:
        raise MeasurementError(f"fill: {len(failures)} failed, {left} unacknowledged: "
                               f"{failures[:1]}")
    return topic


def share_apis(host: str, port: int) -> dict[int, tuple[int, int] | None]:
    """What ApiVersions advertises for ShareGroupHeartbeat and ShareFetch."""
    from bench.harness.probe import api_versions

    with socket.create_connection((host, port), timeout=10) as sock:
        ranges = api_versions(sock)
    return {key: ranges.get(key) for key in (SHARE_GROUP_HEARTBEAT, SHARE_FETCH)}


def run_broker(name: str, args: argparse.Namespace, scratch: Path) -> dict[str, Run | str]:
    """Every setup on one fresh broker: a Run, or the reason there is none."""
    from bench.harness.brokers import all_brokers
    from bench.harness.processes import ProcessRegistry

    setups = [(CLASSIC, 1)]
    if name == "kafkette":
        setups += [(kind, k) for kind in args.modes for k in args.consumers]
    out: dict[str, Run | str] = {}
    broker = all_brokers(args.kafkette_config)[name]
    reason = broker.unavailable_reason()
    if reason:
        return {_setup_name(*s): f"unavailable: {reason}" for s in setups}
    registry = ProcessRegistry()
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=scratch))
    try:
        running = broker.start(registry, workdir, START_TIMEOUT_S)
    except Exception as exc:  # reported; the other broker still runs
        return {_setup_name(*s): f"did not start: {str(exc).splitlines()[0]}" for s in setups}
    try:
        if name == "kafka":
            try:
                apis = share_apis(running.host, running.port)
                out["share"] = (f"{REFERENCE_REASON} (its ApiVersions: ShareGroupHeartbeat "
                                f"{_versions(apis[SHARE_GROUP_HEARTBEAT])}, ShareFetch "
                                f"{_versions(apis[SHARE_FETCH])})")
            except Exception as exc:  # the reason stands without the evidence
                out["share"] = f"{REFERENCE_REASON} (ApiVersions: {exc})"
        started = time.monotonic()
        topic = fill(running.bootstrap, args.records, args.value_size)
        print(f"  {name}: filled {args.records} records in {time.monotonic() - started:.1f} s",
              file=sys.stderr, flush=True)
        for kind, consumers in setups:
            setup = _setup_name(kind, consumers)
            try:
                run = measure(running.proc.pid, running.bootstrap, topic, kind, consumers,
                              args, workdir, args.profile if name == "kafkette" else None)
                out[setup] = run
                print(f"  {name}: {setup}: {run.records_per_s:,.0f} records/s",
                      file=sys.stderr, flush=True)
            except Exception as exc:  # a failed check is the answer for this setup
                out[setup] = f"FAILED: {type(exc).__name__}: {str(exc)[:400]}"
                print(f"  {name}: {setup}: {out[setup]}", file=sys.stderr, flush=True)
            if not running.alive():
                for rest in setups:
                    out.setdefault(_setup_name(*rest),
                                   f"FAILED: broker exited: {running.log_tail(3)}")
                break
    finally:
        running.stop()
        registry.stop_all()
    return out


def _versions(found: tuple[int, int] | None) -> str:
    return "not advertised" if found is None else f"v{found[0]}-v{found[1]}"


def _median_run(runs: list[Run]) -> Run:
    """The median figures over rounds (latencies pooled)."""
    rate = statistics.median(r.records_per_s for r in runs)
    return Run(
        setup=runs[0].setup,
        records_per_s=rate,
        seconds=statistics.median(r.seconds for r in runs),
        broker_cpu_s_per_m=statistics.median(r.broker_cpu_s_per_m for r in runs),
        latencies_ms=[x for r in runs for x in r.latencies_ms],
        members_with_records=min(r.members_with_records for r in runs),
        records_per_poll=statistics.median(r.records_per_poll for r in runs),
        busiest_member_cpu=max(r.busiest_member_cpu for r in runs),
        client_log_errors=sum(r.client_log_errors for r in runs),
        client_log_sample=sorted({x for r in runs for x in r.client_log_sample})[:3],
    )


def _percentile(values: list[float], fraction: float) -> float:
    from bench.harness.metrics import percentile

    return percentile(values, fraction)


def report(rounds: dict[str, list[dict[str, Run | str]]], args: argparse.Namespace) -> bool:
    """Prints the table; returns whether every run succeeded."""
    ok = True
    medians: dict[tuple[str, str], Run | str] = {}
    setups: list[str] = []
    for broker, runs in rounds.items():
        for setup in runs[0]:
            if setup == "share":
                continue
            if broker == "kafkette" and setup not in setups:
                setups.append(setup)
            good = [r[setup] for r in runs if isinstance(r[setup], Run)]
            bad = sorted({r[setup] for r in runs if isinstance(r[setup], str)})
            if bad and not all(b.startswith("unavailable") for b in bad):
                ok = False
            medians[(broker, setup)] = _median_run(good) if good else "; ".join(bad)
    classic = medians.get(("kafkette", "classic x1"))
    kafka = medians.get(("kafka", "classic x1"))
    print(f"share groups vs a classic group, one partition, {args.records:,} records of "
          f"{args.value_size} B, median of {args.rounds} round(s):")
    header = (f"  {'setup':<22}{'records/s':>12}{'vs classic':>12}{'vs Kafka classic':>18}"
              f"{'ack p50 / p99 ms':>19}")
    print(header)
    notes: list[str] = []
    rows = [("kafkette", s) for s in setups]
    if "kafka" in rounds:
        rows.insert(1, ("kafka", "classic x1"))
    for broker, setup in rows:
        run = medians.get((broker, setup))
        label = setup if broker == "kafkette" else f"{setup} (Kafka 4.0)"
        if not isinstance(run, Run):
            print(f"  {label:<22}{'n/a':>12}")
            notes.append(f"  {broker} {setup}: {run}")
            continue
        versus = (f"{run.records_per_s / classic.records_per_s:.2f}"
                  if isinstance(classic, Run) and broker == "kafkette" else "-")
        theirs = (f"{run.records_per_s / kafka.records_per_s:.2f}"
                  if isinstance(kafka, Run) else "-")
        latency = "-"
        if run.latencies_ms:
            latency = (f"{_percentile(run.latencies_ms, 0.5):.1f} / "
                       f"{_percentile(run.latencies_ms, 0.99):.1f}")
        print(f"  {label:<22}{run.records_per_s:>12,.0f}{versus:>12}{theirs:>18}{latency:>19}")
    if "kafka" in rounds:
        share = [r.get("share") for r in rounds["kafka"] if isinstance(r.get("share"), str)]
        print(f"  share groups on Kafka 4.0: n/a: {share[0] if share else REFERENCE_REASON}")
    print(f"  {'':<32}{'seconds':>8}{'broker CPU':>12}{'members':>9}{'records':>9}"
          f"{'busiest':>9}{'client':>8}")
    print(f"  {'':<32}{'':>8}{'s/M rec':>12}{'fed':>9}{'/commit':>9}"
          f"{'member':>9}{'errors':>8}")
    for broker, setup in rows:
        run = medians.get((broker, setup))
        if isinstance(run, Run):
            per_commit = f"{run.records_per_poll:.0f}" if run.records_per_poll else "-"
            print(f"  {broker + ' ' + setup:<32}{run.seconds:>8.2f}{run.broker_cpu_s_per_m:>12.2f}"
                  f"{run.members_with_records:>9}{per_commit:>9}"
                  f"{run.busiest_member_cpu:>9.2f}{run.client_log_errors:>8}")
    for broker, setup in rows:
        run = medians.get((broker, setup))
        if isinstance(run, Run) and run.client_log_sample:
            print(f"  librdkafka errors in {broker} {setup}:")
            for line in run.client_log_sample:
                print(f"    {line[:240]}")
    for note in notes:
        print(note)
    if args.json:
        print(json.dumps({
            f"{b}/{s}": (r.__dict__ | {"latencies_ms": len(r.latencies_ms)})
            if isinstance(r, Run) else r for (b, s), r in medians.items()}))
    return ok


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["member"]:
        return member_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records in the topic")
    parser.add_argument("--value-size", type=int, default=100, help="bytes per record value")
    parser.add_argument("--consumers", default="1,4,16", help="share group sizes")
    parser.add_argument("--modes", default="implicit,explicit", help="implicit, explicit")
    parser.add_argument("--brokers", default="kafkette,kafka", help="from: kafkette, kafka")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per broker")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="seconds between the last member ready and the start")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--group-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a share group config for every share run (repeatable)")
    parser.add_argument("--kafkette-config", action="append", default=[], metavar="KEY=VALUE",
                        help="passed to kafkette serve --config (repeatable)")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR",
                        help="py-spy flame graph of kafkette per share run into DIR")
    parser.add_argument("--json", action="store_true", help="also print the medians as JSON")
    args = parser.parse_args(argv)
    args.consumers = [int(k) for k in args.consumers.split(",") if k.strip()]
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if any(m not in ("implicit", "explicit") for m in args.modes):
        parser.error("--modes: implicit, explicit")
    names = [n.strip() for n in args.brokers.split(",") if n.strip()]
    if not names or any(n not in ("kafkette", "kafka") for n in names):
        parser.error("--brokers: from kafkette, kafka")
    try:
        args.group_config = [tuple(c.split("=", 1)) for c in args.group_config]
    except ValueError:
        parser.error("--group-config KEY=VALUE")
    rounds: dict[str, list[dict[str, Run | str]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory(prefix="share-bench-") as scratch:
        for _ in range(args.rounds):
            for name in names:
                rounds[name].append(run_broker(name, args, Path(scratch)))
    if report(rounds, args):
        return 0
    print("FAILED: a run failed or did not deliver every record exactly once (see above)",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
