"""Broker memory under a burst of huge requests (``queued.max.request.bytes``).

A script, not a test: prints figures. A fresh ``kafkette serve`` (its own temporary data
dir) gets ``--clients`` connections that each send one ``--frame-mib`` MiB request at
once (an ApiVersions request padded to that size: the broker reads the whole frame,
answers it and ignores the padding, as Kafka does). Meanwhile a prober sends small
ApiVersions requests on its own connection. Figures: the broker's RSS before, its peak
(VmHWM) during the burst, the time until every huge request is answered, and the prober's
latencies (the broker keeps serving small requests while big frames wait for memory).

    .venv/bin/python bench/request_memory_bench.py [--clients 5] [--frame-mib 100]
        [--config queued.max.request.bytes=...]

The issue's figure before the pool: five concurrent 100 MiB requests took RSS to 410 MB.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import tempfile
import threading
import time
from pathlib import Path

from bench.harness.serve_process import ServeProcess

MIB = 1024 * 1024


def frame_header(correlation_id: int, frame_bytes: int) -> bytes:
    client = b"memory-bench"
    header = struct.pack(">hhih", 18, 0, correlation_id, len(client)) + client
    return struct.pack(">i", frame_bytes) + header


def read_answer(sock: socket.socket) -> int:
    head = sock.recv(8, socket.MSG_WAITALL)
    size, correlation_id = struct.unpack(">ii", head)
    sock.recv(size - 4, socket.MSG_WAITALL)
    return correlation_id


def memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / 1e6
    raise KeyError(field)


def huge_request(port: int, correlation_id: int, frame_bytes: int, zeros: memoryview,
                 done: list[float], started: float) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
        header = frame_header(correlation_id, frame_bytes)
        sock.sendall(header)
        remaining = frame_bytes - (len(header) - 4)
        while remaining:
            chunk = zeros[: min(remaining, len(zeros))]
            sock.sendall(chunk)
            remaining -= len(chunk)
        assert read_answer(sock) == correlation_id
        done.append(time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=5)
    parser.add_argument("--frame-mib", type=int, default=100)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    frame_bytes = args.frame_mib * MIB - 4 - 1  # under socket.request.max.bytes
    with tempfile.TemporaryDirectory() as data_dir:
        command = ["--listen", "127.0.0.1:0", "--data-dir", str(Path(data_dir) / "data"),
                   "--log-level", "WARNING"]
        for item in args.config:
            command += ["--config", item]
        serve = ServeProcess(command, Path(data_dir) / "broker.log").wait_ready(60)
        proc, port = serve.proc, serve.port
        try:
            time.sleep(0.5)
            idle_rss = memory_mb(proc.pid, "VmRSS")
            zeros = memoryview(bytes(4 * MIB))
            done: list[float] = []
            started = time.perf_counter()
            senders = [
                threading.Thread(target=huge_request,
                                 args=(port, i + 1, frame_bytes, zeros, done, started))
                for i in range(args.clients)
            ]
            for sender in senders:
                sender.start()
            latencies: list[float] = []
            with socket.create_connection(("127.0.0.1", port), timeout=60) as probe:
                correlation_id = 10_000
                while any(sender.is_alive() for sender in senders):
                    correlation_id += 1
                    sent = time.perf_counter()
                    small = frame_header(correlation_id, 0)[4:]
                    probe.sendall(struct.pack(">i", len(small)) + small)
                    assert read_answer(probe) == correlation_id
                    latencies.append(time.perf_counter() - sent)
                    time.sleep(0.01)
            for sender in senders:
                sender.join()
            peak = memory_mb(proc.pid, "VmHWM")
            after = memory_mb(proc.pid, "VmRSS")
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"{args.clients} x {args.frame_mib} MiB requests, configs {args.config or 'defaults'}")
    print(f"  broker RSS idle {idle_rss:.1f} MB, peak {peak:.1f} MB, after {after:.1f} MB")
    print(f"  all answered in {max(done):.2f} s (first {min(done):.2f} s)")
    print(f"  small requests meanwhile: {len(latencies)}, "
          f"p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"max {max(latencies) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
