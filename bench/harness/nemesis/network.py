"""A private network of Linux network namespaces on one bridge, whose links can be cut.

Every node (ZooKeeper, each broker, a stranded client) runs in its own namespace with one
veth to a bridge in the root namespace; the bridge has an address too, so clients in the
root namespace reach every node the way a client on another host would. Faults:

- ``isolate(node)``: the node's veth leaves the bridge (``nomaster``). The node keeps its own
  address, so a process inside its namespace still reaches it (the stranded leader's own
  client), and nothing else does, in either direction.
- ``block(src, dst)``: packets from ``src`` to ``dst`` are dropped at ``dst`` (nftables in
  ``dst``'s namespace). One direction at the packet level; over TCP that stalls both ways.
- ``refuse(src, dst)``: only new connections from ``src`` to ``dst`` are dropped, open ones and
  ``dst``'s connections to ``src`` work: "A reaches B, B not A" as a TCP protocol sees it.
- ``partition(side_a, side_b)``: ``block`` both ways between every pair across the sides; the
  rest of the network (ZooKeeper, clients) stays reachable from both (the partial cut).

nftables rather than a forwarding proxy: it cuts exactly the packets named, inside the
namespaces this network made, without moving any node's address (the bridge alone cannot
cut one pair of nodes, and a proxy would change the addresses brokers advertise).

Each network reserves a slot (a file created with ``O_EXCL`` in ``STATE_DIR``: parallel runs
never share one) that gives its names (``kn<slot>``) and its only addresses, ``10.X.Y.0/24``
(skipping a subnet the machine already routes). ``close`` deletes every namespace, veth and
bridge; a run killed before it could is swept by the next ``Network``: the slot file holds the
owner's pid and the tmpfs mounts it made, and a slot whose pid is gone is deleted with its
processes and mounts.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = Path("/tmp/kafkette-nemesis")
BRIDGE_HOST = 254  # the root namespace's address on the bridge: 10.X.Y.254
NFT_TABLE = "nemesis"
SLOTS = 150 * 256  # 10.100.0.0 - 10.249.255.0


class NetworkUnavailable(RuntimeError):
    """This machine cannot build the network (not root, no ``ip``/``nft``, no netns)."""


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if check and result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed ({result.returncode}): {result.stderr.strip()}"
        )
    return result


def unavailable_reason() -> str | None:
    """Why this machine cannot run the harness, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "nft"):
        if _run("which", tool, check=False).returncode != 0:
            return f"{tool} is not installed (apt-get install iproute2 nftables)"
    probe = f"knprobe{os.getpid()}"
    made = _run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    rules = (
        "table inet t {\n chain input {\n  type filter hook input priority 0;\n"
        "  ip saddr 10.0.0.1 ct state new drop\n }\n}\n"
    )
    try:
        table = subprocess.run(
            ["ip", "netns", "exec", probe, "nft", "-f", "-"], input=rules, capture_output=True,
            text=True, timeout=30, check=False,
        )  # fmt: skip
        if table.returncode != 0:
            return f"nftables does not work in a namespace: {table.stderr.strip()}"
    finally:
        _run("ip", "netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class Node:
    """One namespace: ``name`` as the harness calls it, ``netns`` as ``ip`` does, ``ip``."""

    name: str
    netns: str
    ip: str
    veth: str  # the root side of its link

    def exec_prefix(self) -> list[str]:
        """Prefix of an argv that runs inside this namespace (``ip netns exec`` execs the
        command itself, so the pid a Popen gets is the program's: signals reach it)."""
        return ["ip", "netns", "exec", self.netns]


class Network:
    """The bridge and its nodes; see the module docstring. Use as a context manager."""

    def __init__(self) -> None:
        sweep_stale()
        slot, self._state_file = _reserve_slot()
        self.prefix = f"kn{slot:04x}"
        self.subnet = f"10.{100 + slot // 256}.{slot % 256}"
        self.bridge = f"{self.prefix}br"
        self.nodes: dict[str, Node] = {}
        self.mounts: list[Path] = []
        self._rules: set[tuple[str, str, bool]] = set()  # (src, dst, new connections only)
        self._isolated: set[str] = set()
        try:
            _run("ip", "link", "add", self.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{self.subnet}.{BRIDGE_HOST}/24", "dev", self.bridge)
            _run("ip", "link", "set", self.bridge, "up")
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record_mount(self, path: Path) -> None:
        """A tmpfs mounted for this network's nodes: swept with it if this run is killed."""
        self.mounts.append(path)
        _write_state(self._state_file, self.mounts)

    @property
    def host_ip(self) -> str:
        """The root namespace's address on the bridge."""
        return f"{self.subnet}.{BRIDGE_HOST}"

    def add(self, name: str) -> Node:
        """A new namespace on the bridge, its loopback up and one address."""
        index = len(self.nodes) + 1
        node = Node(
            name, f"{self.prefix}-{name}", f"{self.subnet}.{index}", f"{self.prefix}v{index}"
        )
        peer = f"{node.veth}p"
        _run("ip", "netns", "add", node.netns)
        self.nodes[name] = node
        _run("ip", "link", "add", node.veth, "type", "veth", "peer", "name", peer)
        _run("ip", "link", "set", peer, "netns", node.netns)
        inside = node.exec_prefix()
        _run(*inside, "ip", "link", "set", peer, "name", "eth0")
        _run(*inside, "ip", "addr", "add", f"{node.ip}/24", "dev", "eth0")
        _run(*inside, "ip", "link", "set", "eth0", "up")
        _run(*inside, "ip", "link", "set", "lo", "up")
        _run("ip", "link", "set", node.veth, "master", self.bridge)
        _run("ip", "link", "set", node.veth, "up")
        _run(*inside, "nft", "add", "table", "inet", NFT_TABLE)
        return node

    # --- faults -------------------------------------------------------------------

    def isolate(self, name: str) -> None:
        """Take the node off the bridge: it reaches nothing and nothing reaches it."""
        _run("ip", "link", "set", self.nodes[name].veth, "nomaster")
        self._isolated.add(name)

    def rejoin(self, name: str) -> None:
        """Put an isolated node back on the bridge."""
        _run("ip", "link", "set", self.nodes[name].veth, "master", self.bridge)
        _run("ip", "link", "set", self.nodes[name].veth, "up")
        self._isolated.discard(name)

    def block(self, src: str, dst: str) -> None:
        """Drop every packet from ``src`` to ``dst``."""
        self._rules.add((src, dst, False))
        self._apply(dst)

    def refuse(self, src: str, dst: str) -> None:
        """Drop new connections from ``src`` to ``dst``; everything else flows."""
        self._rules.add((src, dst, True))
        self._apply(dst)

    def partition(self, side_a: list[str], side_b: list[str]) -> None:
        """No packet between any node of ``side_a`` and any of ``side_b``."""
        for a in side_a:
            for b in side_b:
                self._rules.add((a, b, False))
                self._rules.add((b, a, False))
        for name in {*side_a, *side_b}:
            self._apply(name)

    def unblock(self, src: str, dst: str) -> None:
        """Lift ``block``/``refuse`` from ``src`` to ``dst``."""
        self._rules -= {(src, dst, False), (src, dst, True)}
        self._apply(dst)

    def heal(self) -> None:
        """Every node back on the bridge, every rule gone."""
        for name in list(self._isolated):
            self.rejoin(name)
        touched = {dst for _, dst, _ in self._rules}
        self._rules.clear()
        for name in touched:
            self._apply(name)

    def faults(self) -> list[str]:
        """What is cut now, in words (for reports)."""
        said = [f"{name} isolated" for name in sorted(self._isolated)]
        said += [
            f"{src}->{dst} {'refused' if new else 'dropped'}"
            for src, dst, new in sorted(self._rules)
        ]
        return said

    def _apply(self, name: str) -> None:
        """Rewrite ``name``'s input chain from the rules aimed at it, in one nft transaction."""
        node = self.nodes[name]
        lines = [
            f"table inet {NFT_TABLE} {{}}",
            f"delete table inet {NFT_TABLE}",
            f"table inet {NFT_TABLE} {{",
            "  chain input {",
            "    type filter hook input priority 0; policy accept;",
        ]
        for src, dst, new_only in sorted(self._rules):
            if dst == name:
                state = " ct state new" if new_only else ""
                lines.append(f"    ip saddr {self.nodes[src].ip}{state} drop")
        lines += ["  }", "}"]
        script = "\n".join(lines) + "\n"
        result = subprocess.run(
            [*node.exec_prefix(), "nft", "-f", "-"], input=script, capture_output=True,
            text=True, timeout=30, check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise RuntimeError(f"nft in {node.netns} failed: {result.stderr.strip()}\n{script}")

    # --- teardown -----------------------------------------------------------------

    def close(self) -> None:
        """Kill what still runs inside, delete the namespaces, veths and the bridge."""
        try:
            _delete(self.prefix, [node.netns for node in self.nodes.values()])
        finally:
            self.nodes.clear()
            self._state_file.unlink(missing_ok=True)


def _reserve_slot() -> tuple[int, Path]:
    """A free slot: its file created exclusively (a racing run gets another), its subnet
    not routed on this machine already."""
    STATE_DIR.mkdir(parents=True, exist_ok=True)
    routes = _run("ip", "-4", "route", "show", check=False).stdout
    for _ in range(200):
        slot = secrets.randbelow(SLOTS)
        if f"10.{100 + slot // 256}.{slot % 256}." in routes:
            continue
        path = STATE_DIR / f"kn{slot:04x}"
        try:
            descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        os.close(descriptor)
        _write_state(path, [])
        return slot, path
    raise NetworkUnavailable("no free network slot in /tmp/kafkette-nemesis")


def _write_state(path: Path, mounts: list[Path]) -> None:
    """Owner pid on the first line, then its mounts; replaced atomically (a sweep never
    reads half a file)."""
    temporary = path.with_suffix(".new")
    temporary.write_text("\n".join([str(os.getpid()), *map(str, mounts)]) + "\n")
    os.replace(temporary, path)


def _delete(prefix: str, namespaces: list[str]) -> None:
    for netns in namespaces:
        pids = _run("ip", "netns", "pids", netns, check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        _run("ip", "netns", "del", netns, check=False)
    links = _run("ip", "-o", "link", "show", check=False).stdout.splitlines()
    for line in links:
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if name.startswith(prefix):
                _run("ip", "link", "del", name, check=False)


def sweep_stale() -> None:
    """Delete the networks of runs whose process is gone (killed before their ``close``)."""
    if not STATE_DIR.is_dir():
        return
    existing = _run("ip", "netns", "list", check=False).stdout.split()
    for state in STATE_DIR.glob("kn*"):
        if state.suffix:
            continue  # a state being replaced
        try:
            lines = state.read_text().split()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            continue  # being written: its owner is alive
        try:
            os.kill(pid, 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        prefix = state.name
        _delete(prefix, [name for name in existing if name.startswith(f"{prefix}-")])
        for mount in lines[1:]:
            _run("umount", "-l", mount, check=False)
        state.unlink(missing_ok=True)
