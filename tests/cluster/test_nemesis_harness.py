"""The fault-injection harness itself: its cuts cut, its checks catch what they promise.

The schedules' verdicts (tests/cluster/test_partitions.py) are only worth what the network
faults and the checker are: here a cut link, a refused direction and a partial cut are
observed from real sockets in real namespaces, a network left behind by a killed run is swept,
and each check of ``log_check`` is shown failing on doctored inputs (a lost, misplaced or
duplicated record, a gap, replicas that differ, an epoch going down, a checkpoint that
disagrees) and passing on good ones.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.nemesis import log_check
from bench.harness.nemesis.network import STATE_DIR, Network, sweep_stale, unavailable_reason
from bench.harness.nemesis.schedules import FIXED, parse, random_schedule

REASON = unavailable_reason()
needs_netns = pytest.mark.skipif(REASON is not None, reason=f"network namespaces: {REASON}")

# --- the checks -----------------------------------------------------------------------


def test_check_acks_passes_a_faithful_log_and_names_each_kind_of_breach() -> None:
    log = {0: [(0, "a"), (1, "b"), (2, "c")], 1: [(0, "d"), (1, "d")]}
    good = [{"v": "a", "p": 0, "o": 0}, {"v": "c", "p": 0, "o": 2}]
    assert log_check.check_acks(good, log).findings == ["d is in the log 2 times: [(1, 0), (1, 1)]"]
    report = log_check.check_acks(
        [
            {"v": "a", "p": 0, "o": 0},
            {"v": "x", "p": 0, "o": 5},  # acknowledged, not in the log
            {"v": "b", "p": 0, "o": 2},  # in the log at another offset
            {"v": "c", "p": 0, "o": None},  # implicit acknowledgement: in its partition
            {"v": "e", "p": 1, "o": None},  # implicit acknowledgement of a record not there
            {"v": "f", "err": "timed out"},
        ],
        log,
    )
    assert (report.acked, report.lost, report.misplaced, report.duplicated, report.failed) == (
        5, 2, 1, 1, 1,
    )  # fmt: skip
    assert any("x acknowledged at 0/5, not in the log" in f for f in report.findings)
    assert any("b acknowledged at 0/2, found at [(0, 1)]" in f for f in report.findings)
    assert any("e acknowledged (offset unknown)" in f for f in report.findings)


def test_check_contiguous_finds_a_gap() -> None:
    assert log_check.check_contiguous({0: [(0, "a"), (1, "b")]}) == []
    assert log_check.check_contiguous({0: [(0, "a"), (2, "b")]}) == [
        "partition 0: offset 0 is followed by 2"
    ]


def _batch(base: int, records: int, epoch: int, body: bytes = b"x") -> bytes:
    """A v2 batch header with a body: what read_batches parses (the CRC is not checked)."""
    rest = struct.pack(">ibIhi", epoch, 2, 0, 0, records - 1) + body
    return struct.pack(">qi", base, len(rest)) + rest


def _replica(data_dir: Path, topic: str, batches: bytes, epochs: dict[int, int]) -> None:
    partition = data_dir / f"{topic}-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(batches)
    lines = ["0", str(len(epochs)), *(f"{e} {o}" for e, o in sorted(epochs.items()))]
    (partition / "leader-epoch-checkpoint").write_text("\n".join(lines) + "\n")


def test_check_replicas_compares_batches_not_segment_files(tmp_path: Path) -> None:
    one, two = _batch(0, 2, 0), _batch(2, 3, 1)
    _replica(tmp_path / "b1", "t", one + two, {0: 0, 1: 2})
    # The same batches in two segments, and an epoch in the checkpoint with no batch.
    _replica(tmp_path / "b2", "t", one, {0: 0, 1: 2, 2: 5})
    (tmp_path / "b2" / "t-0" / "00000000000000000002.log").write_bytes(two)
    dirs = {1: tmp_path / "b1", 2: tmp_path / "b2"}
    assert log_check.check_replicas(dirs, "t", 1) == []


@pytest.mark.parametrize(
    ("second", "epochs", "expected"),
    [
        (_batch(0, 2, 0) + _batch(2, 3, 2), {0: 0, 2: 2}, "replicas differ"),
        (_batch(0, 2, 1) + _batch(2, 3, 0), {1: 0, 0: 2}, "leader epoch goes down from 1 to 0"),
        (_batch(0, 2, 0) + _batch(3, 3, 1), {0: 0, 1: 3}, "batch at 3 follows one ending at 1"),
        (_batch(0, 2, 0) + _batch(2, 3, 1), {0: 0, 1: 1}, "epoch 1 starts at 2 in the log, at 1"),
    ],
)
def test_check_replicas_finds(tmp_path: Path, second: bytes, epochs: dict[int, int],
                              expected: str) -> None:  # fmt: skip
    _replica(tmp_path / "b1", "t", _batch(0, 2, 0) + _batch(2, 3, 1), {0: 0, 1: 2})
    _replica(tmp_path / "b2", "t", second, epochs)
    findings = log_check.check_replicas({1: tmp_path / "b1", 2: tmp_path / "b2"}, "t", 1)
    assert any(expected in finding for finding in findings), findings


# --- schedules ------------------------------------------------------------------------


def test_check_replicas_finds_torn_bytes_and_an_end_no_client_read(tmp_path: Path) -> None:
    _replica(tmp_path / "b1", "t", _batch(0, 2, 0) + _batch(2, 3, 1)[:-4], {0: 0})
    findings = log_check.check_replicas({1: tmp_path / "b1"}, "t", 1, ends={0: 5})
    assert any("bytes after the last whole batch" in f for f in findings), findings
    assert any("ends at 2, a client read to 5" in f for f in findings), findings


def test_every_fixed_and_random_schedule_parses() -> None:
    for text in FIXED.values():
        assert parse(text)[-1].action == "heal"
    import random

    for seed in range(50):
        parse(random_schedule(random.Random(seed)))
    assert random_schedule(random.Random(7)) == random_schedule(random.Random(7))
    with pytest.raises(ValueError, match="not a step: 'isolate'"):
        parse("isolate; heal")


# --- the network ----------------------------------------------------------------------


def _reaches(network: Network, source: str | None, target_ip: str, port: int) -> bool:
    """Whether a TCP connection from ``source``'s namespace (root: None) to the target
    opens within 1.5 s."""
    prefix = [] if source is None else network.nodes[source].exec_prefix()
    probe = (
        "import socket,sys\n"
        "try:\n"
        f"    socket.create_connection(({target_ip!r}, {port}), timeout=1.5).close()\n"
        "except OSError:\n"
        "    sys.exit(1)\n"
    )
    return subprocess.run([*prefix, sys.executable, "-c", probe], check=False).returncode == 0


@needs_netns
def test_cuts_cut_what_they_name_and_heal_restores_everything() -> None:
    with Network() as network:
        a, b, c = network.add("a"), network.add("b"), network.add("c")
        listeners = [_listen(network, name) for name in ("a", "b", "c")]
        try:
            assert all(_wait_listening(network, node.ip) for node in (a, b, c))
            assert _reaches(network, "a", b.ip, 7000) and _reaches(network, None, b.ip, 7000)
            network.isolate("b")  # off the bridge: nobody reaches b, b reaches itself
            assert not _reaches(network, "a", b.ip, 7000)
            assert not _reaches(network, None, b.ip, 7000)
            assert _reaches(network, "b", b.ip, 7000)
            network.heal()
            network.refuse("a", "b")  # a cannot open connections to b; b still opens to a
            assert not _reaches(network, "a", b.ip, 7000)
            assert _reaches(network, "b", a.ip, 7000) and _reaches(network, "c", b.ip, 7000)
            network.heal()
            network.partition(["a"], ["b", "c"])  # a cut from b and c; the root reaches all
            assert not _reaches(network, "a", c.ip, 7000)
            assert not _reaches(network, "c", a.ip, 7000)
            assert _reaches(network, None, a.ip, 7000) and _reaches(network, "b", c.ip, 7000)
            assert network.faults()
            network.heal()
            assert network.faults() == []
            assert _reaches(network, "a", c.ip, 7000) and _reaches(network, "c", a.ip, 7000)
        finally:
            for listener in listeners:
                listener.kill()
                listener.wait()


LISTENER = """
import socket, sys
server = socket.create_server((sys.argv[1], 7000))
while True:
    server.accept()[0].close()
"""


def _listen(network: Network, name: str) -> subprocess.Popen[bytes]:
    node = network.nodes[name]
    return subprocess.Popen([*node.exec_prefix(), sys.executable, "-c", LISTENER, node.ip])


def _wait_listening(network: Network, ip: str) -> bool:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if _reaches(network, None, ip, 7000):
            return True
        time.sleep(0.1)
    return False


@needs_netns
def test_a_network_left_by_a_killed_run_is_swept() -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    network = Network()
    network.add("x")
    # As if its process had been killed before close(): its state file names a dead pid.
    (STATE_DIR / network.prefix).write_text(dead.stdout.strip())
    sweep_stale()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert network.prefix not in namespaces and network.prefix not in links
    assert not (STATE_DIR / network.prefix).exists()
