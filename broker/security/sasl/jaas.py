"""Kafka's ``sasl.jaas.config`` values: one JAAS login module with its options.

A broker's users are written the way Kafka's PlainLoginModule takes them::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice";

``username``/``password`` are what the broker itself presents to other brokers;
``user_<name>="<password>"`` are the PLAIN users it accepts. Kafka looks the value up as
``listener.name.<listener lower-case>.<mechanism lower-case>.sasl.jaas.config`` first, then
``sasl.jaas.config`` (JaasContext.loadServerContext); so does ``jaas_for``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


class JaasError(ValueError):
    """A ``sasl.jaas.config`` value Kafka would refuse."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def plain_users(self) -> dict[str, str]:
        """``user_<name>`` options: the PLAIN users a broker accepts, name -> password."""
        return {
            key[len("user_") :]: value
            for key, value in self.options.items()
            if key.startswith("user_") and len(key) > len("user_")
        }


# Quoted strings (with backslash escapes, as java.io.StreamTokenizer reads them), '=', ';'
# and bare words; comments // and /* */ as Kafka's tokenizer allows.
_TOKEN = re.compile(
    r"""\s+|//[^\n]*|/\*.*?\*/|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<punct>[=;])|(?P<word>[^\s=;"]+)""",
    re.S,
)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    """(kind, value, position) of each token. Errors name positions, never quote the
    text: a value next to a mistake may be a password."""
    tokens: list[tuple[str, str, int]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise JaasError(f"Invalid JAAS config: unexpected character at position {position}")
        start, position = position, match.end()
        if match.group("quoted") is not None:
            value = re.sub(r"\\(.)", r"\1", match.group("quoted"))
            tokens.append(("value", value, start))
        elif match.group("punct"):
            tokens.append((match.group("punct"), match.group("punct"), start))
        elif match.group("word"):
            tokens.append(("value", match.group("word"), start))
    return tokens


def parse_jaas_config(text: str) -> JaasEntry:
    """One login module (Kafka: "JAAS config property contains N login modules, should
    be 1 module"); raises JaasError with Kafka's wording where it has one."""
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    index = 0
    while index < len(tokens):
        kind, module, at = tokens[index]
        if kind != "value":
            raise JaasError(f"Invalid JAAS config: expected a login module at position {at}")
        if index + 1 >= len(tokens) or tokens[index + 1][0] != "value":
            raise JaasError(
                f"Invalid JAAS config: the login module at position {at} has no control flag"
            )
        flag = tokens[index + 1][1].lower()
        if flag not in CONTROL_FLAGS:
            raise JaasError(
                f"Invalid JAAS config: invalid control flag {tokens[index + 1][1][:20]!r}"
            )
        index += 2
        options: dict[str, str] = {}
        while True:
            if index >= len(tokens):
                raise JaasError("JAAS config entry not terminated by semi-colon")
            kind, value, at = tokens[index]
            if kind == ";":
                index += 1
                break
            if (
                kind != "value"
                or index + 2 >= len(tokens)
                or tokens[index + 1][0] != "="
                or tokens[index + 2][0] != "value"
            ):
                raise JaasError(f"Invalid JAAS config: expected key=value at position {at}")
            options[value] = tokens[index + 2][1]
            index += 3
        entries.append(JaasEntry(module, flag, options))
    if len(entries) != 1:
        raise JaasError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]


def jaas_for(
    explicit: Mapping[str, str], listener_name: str, mechanism: str
) -> JaasEntry | None:
    """The JAAS entry a listener uses for a mechanism, or None when none is configured."""
    per_listener = (
        f"listener.name.{listener_name.lower()}.{mechanism.lower()}.sasl.jaas.config"
    )
    raw = explicit.get(per_listener) or explicit.get("sasl.jaas.config")
    if not raw or not raw.strip():
        return None
    return parse_jaas_config(raw)
