"""Kafka's connection quotas: ``max.connections`` and ``max.connections.per.ip``.

Kafka's acceptor behaves in two different ways, and so does this:

- ``max.connections`` (broker-wide): once that many connections are open the
  acceptor stops accepting until one closes. New clients wait in the listen
  backlog (and time out there if it lasts), nothing is accepted and dropped.
- ``max.connections.per.ip`` (and ``max.connections.per.ip.overrides``,
  ``host:count`` pairs): a connection from an address already at its limit is
  accepted and closed at once.

Refusals are logged once per interval with a count (the server's
``ThrottledLog``), not once per connection: a client retrying in a loop must
not flood the log.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import Counter
from collections.abc import Mapping

import trio


def parse_ip_overrides(text: str) -> dict[str, int]:
    """``"hostName:100,127.0.0.1:200"`` -> {host or address: limit}; raises ValueError."""
    overrides: dict[str, int] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().lstrip("-").isdigit():
            raise ValueError(f"expected HOST:COUNT, got {item!r}")
        overrides[host.strip().strip("[]")] = int(count)
    return overrides


def resolve_overrides(overrides: Mapping[str, int]) -> dict[str, int]:
    """Host names become their addresses (once, at start, as Kafka resolves them)."""
    resolved: dict[str, int] = {}
    for host, limit in overrides.items():
        try:
            resolved[str(ipaddress.ip_address(host))] = limit
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise ValueError(
                f"cannot resolve {host!r} in max.connections.per.ip.overrides: {exc}"
            ) from None
        for info in infos:
            resolved[str(ipaddress.ip_address(info[4][0]))] = limit
    return resolved


class ConnectionLimits:
    """Counts open connections, in total and per client address (event-loop only)."""

    def __init__(
        self, max_connections: int, max_per_ip: int, overrides: Mapping[str, int] | None = None
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        self.open = 0
        self.per_ip: Counter[str] = Counter()
        self._slot_freed = trio.Event()

    def limit_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_per_ip)

    async def wait_for_slot(self) -> None:
        """Return once fewer than ``max.connections`` are open (the acceptor waits here)."""
        while self.open >= self.max_connections:
            await self._slot_freed.wait()
        await trio.lowlevel.checkpoint()

    def admit(self, ip: str) -> bool:
        """Count a just-accepted connection; False if its address is at its limit."""
        if self.per_ip[ip] >= self.limit_for(ip):
            return False
        self.open += 1
        self.per_ip[ip] += 1
        return True

    def release(self, ip: str) -> None:
        self.open -= 1
        self.per_ip[ip] -= 1
        if not self.per_ip[ip]:
            del self.per_ip[ip]
        self._slot_freed.set()
        self._slot_freed = trio.Event()


def normalised_ip(address: str) -> str:
    """``::ffff:127.0.0.1`` and ``127.0.0.1`` count as one client."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)
