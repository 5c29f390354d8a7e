"""Kafka's listeners: ``listeners``, ``listener.security.protocol.map``, ``advertised.listeners``.

A broker listens on one or more named listeners (``CLIENT://0.0.0.0:9092,REPLICATION://:9093``);
the protocol map says which security protocol each name speaks (the default map names
each protocol after itself), ``advertised.listeners`` what clients of each listener are
told (default: the listener itself), and ``inter.broker.listener.name`` (or
``security.inter.broker.protocol``) which listener the brokers of a cluster use among
themselves. Names are case-insensitive, kept upper-case as Kafka's ``ListenerName``
does; per-listener settings are ``listener.name.<lower-case name>.<config>``.

``kafkette serve --listen HOST:PORT`` stays the simple form: one PLAINTEXT listener
(and, given explicitly, it replaces a ``listeners=`` line, as the command line beats the
config file elsewhere). Every check here raises ``ConfigError`` with Kafka's wording
where Kafka has one, so a bad line stops the start with one line (exit code 2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kafkette.broker.security.session import PLAINTEXT, SECURITY_PROTOCOLS

# Kafka's default listener.security.protocol.map (each protocol is a listener name too).
DEFAULT_PROTOCOL_MAP = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
LISTENER_PREFIX = "listener.name."
# Kafka's EndPoint URI pattern: NAME://host:port, host possibly [v6] or empty.
_ENDPOINT = re.compile(r"^(.*)://\[?([0-9a-zA-Z\-%._:]*?)\]?:(-?[0-9]+)$")


class ListenerConfigError(ValueError):
    """A listener setting the broker cannot start with (a ``ConfigError`` for the CLI)."""


@dataclass(frozen=True, slots=True)
class ListenerSpec:
    """One listener: ``host`` "" means every interface (Kafka's default interface)."""

    name: str
    security_protocol: str
    host: str
    port: int

    @property
    def config_prefix(self) -> str:
        """``listener.name.<lower-case name>.``: where its own settings live."""
        return f"{LISTENER_PREFIX}{self.name.lower()}."

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ListenerPlan:
    """What the broker binds and advertises, in ``listeners`` order (the first one's
    advertised endpoint is the ``kafkette ready on`` line)."""

    listeners: tuple[ListenerSpec, ...]
    # Listener name -> advertised (host, port); port 0 = the port bound; host "" = this
    # machine's host name. A listener missing here is advertised as bound.
    advertised: Mapping[str, tuple[str, int]]
    inter_broker_listener: str
    # True for --listen's one PLAINTEXT listener (advertised.listeners then counts in a
    # cluster only, as before listeners= took effect).
    simple: bool = False

    def find(self, name: str) -> ListenerSpec | None:
        for listener in self.listeners:
            if listener.name == name:
                return listener
        return None

    @property
    def inter_broker(self) -> ListenerSpec:
        found = self.find(self.inter_broker_listener)
        return found if found is not None else self.listeners[0]


def parse_protocol_map(raw: str) -> dict[str, str]:
    """``NAME:PROTOCOL,...`` -> {NAME: PROTOCOL}; names upper-cased."""
    mapping: dict[str, str] = {}
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        name, protocol = name.strip().upper(), protocol.strip().upper()
        if not sep or not name or not protocol:
            raise ListenerConfigError(
                f"listener.security.protocol.map: expected LISTENER:PROTOCOL, got {entry!r}"
            )
        if protocol not in SECURITY_PROTOCOLS:
            raise ListenerConfigError(
                f"listener.security.protocol.map: unknown security protocol {protocol}"
                f" for listener {name} (one of {', '.join(SECURITY_PROTOCOLS)})"
            )
        if name in mapping and mapping[name] != protocol:
            raise ListenerConfigError(
                f"listener.security.protocol.map names listener {name} twice"
            )
        mapping[name] = protocol
    return mapping


def parse_listener_list(
    raw: str, protocols: Mapping[str, str], config_name: str = "listeners"
) -> list[ListenerSpec]:
    """Kafka's ``listenerListToEndPoints``: each entry parsed, named uniquely, mapped."""
    found: list[ListenerSpec] = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            continue
        match = _ENDPOINT.match(entry)
        # Kafka's wording: "Error creating broker listeners from '<value>': <reason>".
        failing = f"{config_name}: Error creating broker listeners from '{raw}'"
        if match is None:
            raise ListenerConfigError(
                f"{failing}: Unable to parse {entry} to a broker endpoint"
            )
        name, host, port_text = match.group(1).upper(), match.group(2), match.group(3)
        port = int(port_text)
        if not 0 <= port <= 65535:
            raise ListenerConfigError(f"{failing}: port {port} of {entry} is outside 0-65535")
        protocol = protocols.get(name)
        if protocol is None:
            raise ListenerConfigError(
                f"{failing}: No security protocol defined for listener {name}"
            )
        found.append(ListenerSpec(name, protocol, host, port))
    names = [listener.name for listener in found]
    if len(set(names)) != len(names):
        raise ListenerConfigError(f"Each listener must have a different name, {config_name}: {raw}")
    return found


def _explicit_listeners_check(listeners: list[ListenerSpec], raw: str) -> None:
    ports = [(listener.host, listener.port) for listener in listeners if listener.port]
    if len({port for _, port in ports}) != len(ports):
        raise ListenerConfigError(
            "Each listener must have a different port unless exactly one listener has"
            f" an IPv4 address and the other IPv6 address, listeners: {raw}"
        )


def plan_listeners(
    explicit: Mapping[str, str],
    *,
    clustered: bool,
    listen: tuple[str, int] | None = None,
) -> ListenerPlan:
    """The listeners of a broker with config ``explicit`` (the names the user set).

    ``listen``: ``--listen``'s (host, port), the simple form: one PLAINTEXT listener.
    Without it, ``listeners=`` decides (the CLI passes 127.0.0.1:9092 when neither is
    given, kafkette's development default)."""
    protocols_raw = explicit.get("listener.security.protocol.map")
    protocols = parse_protocol_map(protocols_raw or DEFAULT_PROTOCOL_MAP)
    controller_names = {
        n.strip().upper()
        for n in explicit.get("controller.listener.names", "").split(",")
        if n.strip()
    }
    if protocols_raw is None:
        # Kafka (KRaft): controller listeners not in an unset map speak PLAINTEXT.
        for name in controller_names:
            protocols.setdefault(name, PLAINTEXT)
    inter_name = explicit.get("inter.broker.listener.name", "").strip().upper()
    inter_protocol = explicit.get("security.inter.broker.protocol", "").strip().upper()
    if inter_name and inter_protocol:
        raise ListenerConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol"
            " should be set."
        )
    if inter_protocol and inter_protocol not in SECURITY_PROTOCOLS:
        raise ListenerConfigError(
            f"security.inter.broker.protocol: unknown security protocol {inter_protocol}"
        )
    inter = inter_name or inter_protocol or PLAINTEXT

    raw_listeners = explicit.get("listeners", "").strip()
    configured = parse_listener_list(raw_listeners, protocols) if raw_listeners else []
    if configured:
        _explicit_listeners_check(configured, raw_listeners)
    if listen is not None or not configured:
        host, port = listen if listen is not None else ("127.0.0.1", 9092)
        return ListenerPlan(
            (ListenerSpec(PLAINTEXT, PLAINTEXT, host, port),),
            {},
            PLAINTEXT,
            simple=True,
        )
    served = [listener for listener in configured if listener.name not in controller_names]
    if not served:
        raise ListenerConfigError(
            "listeners names only controller listeners (controller.listener.names): kafkette"
            " has no KRaft controller quorum; add a listener for clients"
        )
    advertised = _advertised(explicit, served, controller_names)
    # Kafka checks this on every broker; on a single node nothing uses the inter-broker
    # listener, so a listeners=SSL://... line alone is enough there.
    if clustered and inter not in advertised:
        raise ListenerConfigError(
            "inter.broker.listener.name must be a listener name defined in"
            " advertised.listeners. The valid options based on currently configured"
            f" listeners are {','.join(advertised)}"
        )
    return ListenerPlan(tuple(served), advertised, inter)


def _advertised(
    explicit: Mapping[str, str], served: list[ListenerSpec], controller_names: set[str]
) -> dict[str, tuple[str, int]]:
    raw = explicit.get("advertised.listeners", "").strip()
    if not raw:
        return {s.name: (s.host, s.port) for s in served}
    protocols = {s.name: s.security_protocol for s in served}
    entries = [
        entry
        for entry in parse_listener_list(
            raw, {**_all_names(raw), **protocols}, "advertised.listeners"
        )
        if entry.name not in controller_names  # Kafka 4's quick start advertises them
    ]
    unknown = [e.name for e in entries if e.name not in protocols]
    if unknown:
        raise ListenerConfigError(
            "advertised.listeners listener names must be equal to or a subset of the ones"
            f" defined in listeners. Found {','.join(e.name for e in entries)}. The valid"
            f" options based on the current configuration are {','.join(protocols)}"
        )
    advertised: dict[str, tuple[str, int]] = {}
    for entry in entries:
        if entry.host == "0.0.0.0":
            raise ListenerConfigError(
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0."
                " Use a routable IP address."
            )
        advertised[entry.name] = (entry.host, entry.port)
    # Kafka: listeners not named in advertised.listeners are not advertised; here they
    # are still served and advertised as bound (a client that reaches one gets an
    # answer naming its own listener).
    for listener in served:
        advertised.setdefault(listener.name, (listener.host, listener.port))
    return advertised


def _all_names(raw: str) -> dict[str, str]:
    """Every name in a listener list mapped to PLAINTEXT (the subset check reports them)."""
    names = {}
    for entry in raw.split(","):
        match = _ENDPOINT.match(entry.strip())
        if match is not None:
            names[match.group(1).upper()] = PLAINTEXT
    return names


def listener_value(
    explicit: Mapping[str, str], listener: ListenerSpec, name: str, default: str | None
) -> str | None:
    """A per-listener setting: ``listener.name.<l>.<name>``, else ``<name>``, else default."""
    prefixed = explicit.get(listener.config_prefix + name)
    if prefixed is not None:
        return prefixed
    return explicit.get(name, default)


def check_listener_prefixed(
    explicit: Mapping[str, str], plan: ListenerPlan, known_suffixes: set[str]
) -> None:
    """Refuse ``listener.name.<l>.<config>`` for a listener that does not exist or a
    TLS config (``ssl.*``) that is not one (SASL suffixes are checked by sasl/)."""
    names = {listener.name.lower() for listener in plan.listeners}
    controller = {
        n.strip().lower()
        for n in explicit.get("controller.listener.names", "").split(",")
        if n.strip()
    }
    for key in explicit:
        if not key.startswith(LISTENER_PREFIX):
            continue
        rest = key[len(LISTENER_PREFIX):]
        listener, _, suffix = rest.partition(".")
        if not suffix:
            raise ListenerConfigError(f"unknown broker config {key}")
        if listener not in names and listener not in controller and not plan.simple:
            raise ListenerConfigError(
                f"{key} names listener {listener.upper()}, which listeners does not define"
                f" ({', '.join(sorted(n.upper() for n in names))})"
            )
        if suffix.startswith("ssl.") and suffix not in known_suffixes:
            raise ListenerConfigError(f"unknown broker config {key}")
