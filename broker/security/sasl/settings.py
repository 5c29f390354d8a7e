"""The broker's SASL settings, per listener, from Kafka's config names.

- ``sasl.enabled.mechanisms`` (Kafka's default GSSAPI), overridable per listener as
  ``listener.name.<listener>.sasl.enabled.mechanisms``;
- the JAAS config of each (listener, mechanism): ``listener.name.<listener>.<mechanism>.
  sasl.jaas.config``, else ``sasl.jaas.config`` (jaas.py);
- ``connections.max.reauth.ms`` (default 0: sessions never expire), overridable as
  ``listener.name.<listener>.<mechanism>.connections.max.reauth.ms``;
- ``connection.failed.authentication.delay.ms`` (100) and ``sasl.server.max.receive.size``
  (524288: the largest frame an unauthenticated client may send).

``check_sasl_config`` refuses at start what Kafka refuses (an unparsable JAAS config,
an enabled mechanism no one can serve) and what kafkette cannot do (GSSAPI).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkette.broker.security.listeners import ListenerConfigError, plan_listeners
from kafkette.broker.security.sasl.jaas import JaasEntry, JaasError, jaas_for, parse_jaas_config
from kafkette.broker.security.sasl.oauthbearer import clock_skew_ms

SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")

# listener.name.<listener>.<...> keys this package reads (lower-case listener and
# mechanism, as Kafka writes them).
SASL_LISTENER_KEY = re.compile(
    r"listener\.name\.[^.]+\.(?:sasl\.enabled\.mechanisms"
    r"|[a-z0-9-]+\.(?:sasl\.jaas\.config|connections\.max\.reauth\.ms"
    r"|sasl\.server\.callback\.handler\.class))"
)


class SaslConfigError(ValueError):
    """A SASL setting the broker cannot start with."""


def is_sasl_listener_key(name: str) -> bool:
    """Whether a ``listener.name.*`` config is one of SASL's (for the check that refuses
    unknown per-listener names)."""
    return SASL_LISTENER_KEY.fullmatch(name) is not None


def _int(explicit: Mapping[str, str], name: str, default: int) -> int:
    raw = explicit.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SaslConfigError(f"{name} must be an integer, got {raw!r}") from None


def enabled_mechanisms(explicit: Mapping[str, str], listener: str) -> tuple[str, ...]:
    raw = explicit.get(f"listener.name.{listener.lower()}.sasl.enabled.mechanisms")
    if raw is None:
        raw = explicit.get("sasl.enabled.mechanisms", "GSSAPI")
    return tuple(dict.fromkeys(m.strip() for m in raw.split(",") if m.strip()))


@dataclass(frozen=True)
class ListenerSasl:
    """What one SASL listener offers."""

    name: str
    mechanisms: tuple[str, ...]
    jaas: Mapping[str, JaasEntry | None] = field(default_factory=dict)
    reauth_ms: Mapping[str, int] = field(default_factory=dict)


@dataclass
class SaslSettings:
    explicit: Mapping[str, str]
    failed_authentication_delay_ms: int = 100
    max_receive_size: int = 524288
    _listeners: dict[str, ListenerSasl] = field(default_factory=dict)

    @classmethod
    def from_config(cls, explicit: Mapping[str, str]) -> SaslSettings:
        return cls(
            explicit=explicit,
            failed_authentication_delay_ms=_int(
                explicit, "connection.failed.authentication.delay.ms", 100
            ),
            max_receive_size=_int(explicit, "sasl.server.max.receive.size", 524288),
        )

    def listener(self, name: str) -> ListenerSasl:
        cached = self._listeners.get(name)
        if cached is None:
            cached = self._listeners[name] = self._build(name)
        return cached

    def _build(self, name: str) -> ListenerSasl:
        mechanisms = enabled_mechanisms(self.explicit, name)
        default_reauth = _int(self.explicit, "connections.max.reauth.ms", 0)
        prefix = f"listener.name.{name.lower()}."
        return ListenerSasl(
            name=name,
            mechanisms=mechanisms,
            jaas={m: jaas_for(self.explicit, name, m) for m in mechanisms},
            reauth_ms={
                m: _int(
                    self.explicit, f"{prefix}{m.lower()}.connections.max.reauth.ms", default_reauth
                )
                for m in mechanisms
            },
        )


def check_sasl_config(explicit: Mapping[str, str]) -> None:
    """Refuse at start the SASL settings that could not work; raises SaslConfigError."""
    for name, raw in explicit.items():
        if name.startswith("listener.name.") and (
            ".sasl." in name or name.endswith("connections.max.reauth.ms")
        ):
            if not is_sasl_listener_key(name):
                raise SaslConfigError(f"unknown per-listener SASL config {name}")
        if name.endswith("sasl.jaas.config"):
            try:
                parse_jaas_config(raw)
            except JaasError as exc:
                raise SaslConfigError(f"{name}: {exc}") from None
        if name.endswith("sasl.server.callback.handler.class") and raw.strip():
            raise SaslConfigError(
                f"{name}: custom callback handlers are not supported; kafkette checks PLAIN "
                "against the JAAS users, SCRAM against its credential store and OAUTHBEARER "
                "with Kafka's unsecured validator"
            )
    for key in ("connection.failed.authentication.delay.ms", "sasl.server.max.receive.size"):
        if _int(explicit, key, 0) < 0:
            raise SaslConfigError(f"{key} must be at least 0")
    try:
        plan = plan_listeners(explicit, clustered=False)
    except ListenerConfigError:
        return  # told by the listeners' own check (broker/security/listeners.py)
    settings = SaslSettings.from_config(explicit)
    for spec in plan.listeners:
        if spec.security_protocol not in SASL_PROTOCOLS:
            continue
        listener = spec.name
        offered = settings.listener(listener)
        if not offered.mechanisms:
            raise SaslConfigError(f"No SASL mechanisms are enabled on listener {listener}")
        for mechanism in offered.mechanisms:
            if mechanism not in SUPPORTED_MECHANISMS:
                raise SaslConfigError(
                    f"SASL mechanism {mechanism} (enabled on listener {listener}) is not "
                    f"supported by kafkette; set sasl.enabled.mechanisms to some of "
                    f"{', '.join(SUPPORTED_MECHANISMS)}"
                    + (" (Kafka's default GSSAPI is Kerberos)" if mechanism == "GSSAPI" else "")
                )
        oauth = offered.jaas.get("OAUTHBEARER")
        if "OAUTHBEARER" in offered.mechanisms and oauth is not None:
            try:
                clock_skew_ms(oauth.options)
            except ValueError as exc:
                raise SaslConfigError(
                    f"listener {listener} OAUTHBEARER JAAS config: {exc}"
                ) from None
        if "PLAIN" in offered.mechanisms and offered.jaas.get("PLAIN") is None:
            raise SaslConfigError(
                f"listener {listener} enables PLAIN but has no JAAS config: set "
                f"listener.name.{listener.lower()}.plain.sasl.jaas.config (or sasl.jaas.config) "
                'to PlainLoginModule required user_<name>="<password>" ...;'
            )
    inter = plan.find(plan.inter_broker_listener)
    if inter is not None and inter.security_protocol in SASL_PROTOCOLS:
        mechanism = explicit.get("sasl.mechanism.inter.broker.protocol", "GSSAPI").strip()
        if mechanism not in settings.listener(inter.name).mechanisms:
            raise SaslConfigError(
                "sasl.mechanism.inter.broker.protocol must be included in "
                "sasl.enabled.mechanisms when SASL is used for inter-broker communication"
            )
