"""SASL/OAUTHBEARER with unsecured JWS tokens, checked as Kafka's default validator checks them.

The listener's OAuthBearerLoginModule JAAS config requires the scope ``kafka``
(``unsecuredValidatorRequiredScope``). confluent-kafka's own unsecured token
(``sasl.oauthbearer.config="principal=alice scope=kafka"``) produces and consumes, so
does aiokafka with a token provider handing out unsecured JWS tokens; a
token without the scope, an expired one, or one with a signature is answered with
RFC 7628's JSON status and the exchange then fails with SASL_AUTHENTICATION_FAILED;
the session lasts until the token's ``exp`` (KIP-368's session_lifetime_ms).
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Iterator

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.abc import AbstractTokenProvider

from kafkette.broker.embedded import EmbeddedBroker
from tests.security import sasl_support as sasl

no_internal_errors = sasl.no_internal_errors  # autouse: no connection closed by a bug


@pytest.fixture(scope="module")
def oauth_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    jaas = f'{sasl.OAUTH_MODULE} required unsecuredValidatorRequiredScope="kafka";'
    configs = sasl.sasl_broker_configs(
        "OAUTHBEARER",
        listeners="SASL_PLAINTEXT://127.0.0.1:0",
        **{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas},
    )
    with EmbeddedBroker.start(tmp_path_factory.mktemp("oauth"), configs) as broker:
        yield broker


def test_confluent_kafka_unsecured_token_produces_and_consumes(oauth_broker) -> None:
    conf = {
        "bootstrap.servers": oauth_broker.bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.config": "principal=alice scope=kafka",
        "enable.sasl.oauthbearer.unsecure.jwt": True,  # librdkafka's own unsecured token
    }
    assert len(sasl.confluent_roundtrip(conf, sasl.unique("oauth"), count=3)) == 3


def test_aiokafka_with_an_unsecured_token_provider(oauth_broker) -> None:
    class UnsecuredTokens(AbstractTokenProvider):
        async def token(self) -> str:
            return sasl.unsecured_token("carol", scope=["kafka", "other"])

    async def produce() -> int:
        producer = AIOKafkaProducer(
            bootstrap_servers=oauth_broker.bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=UnsecuredTokens(),
        )
        await producer.start()
        try:
            return (await producer.send_and_wait(sasl.unique("oauth-aio"), b"x")).offset
        finally:
            await producer.stop()

    assert asyncio.run(asyncio.wait_for(produce(), 30)) == 0


INVALID = '{"status":"invalid_token"}'
_LATER = int(time.time()) + 3600


def _jws(header: dict, claims: dict, raw_exp: str | None = None) -> str:
    """An unsigned JWS with exactly these header and claims (``raw_exp``: the text put in
    place of the JSON string ``"<raw_exp>"``, for numbers json.dumps cannot write)."""

    def part(value: dict) -> str:
        text = json.dumps(value)
        if raw_exp is not None:
            text = text.replace(f'"{raw_exp}"', raw_exp)
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    return f"{part(header)}.{part(claims)}."


def _first_message(token: str) -> bytes:
    return f"n,,\x01auth=Bearer {token}\x01\x01".encode()


@pytest.mark.parametrize(
    ("token", "status"),
    [
        (sasl.unsecured_token("alice"), '{"status":"insufficient_scope", "scope":"kafka"}'),
        (
            sasl.unsecured_token("alice", lifetime_s=-60, scope="kafka"),
            '{"status":"invalid_token"}',
        ),
        (sasl.unsecured_token("alice", scope="kafka") + "c2lnbmVk", '{"status":"invalid_token"}'),
        # A string scope claim is ONE scope (Kafka's calculateScope): "read kafka" is not "kafka".
        (
            sasl.unsecured_token("alice", scope="read kafka"),
            '{"status":"insufficient_scope", "scope":"kafka"}',
        ),
        (sasl.unsecured_token("alice", scope=["kafka", 7]), '{"status":"invalid_token"}'),
        (sasl.unsecured_token("alice", scope={"kafka": True}), '{"status":"invalid_token"}'),
        (sasl.unsecured_token("alice", scope="kafka", exp=float("inf")), INVALID),
        (sasl.unsecured_token("alice", scope="kafka", exp=float("nan")), INVALID),
        (_jws({"alg": "none"}, {"sub": "alice", "scope": "kafka", "exp": "1e400"}, "1e400"),
         INVALID),
        (_jws({"alg": "HS256"}, {"sub": "alice", "scope": "kafka", "exp": _LATER}), INVALID),
        (_jws({"alg": "none"}, {"sub": "alice", "scope": "kafka"}), INVALID),
        (sasl.unsecured_token("alice", scope="kafka", iat=_LATER - 60), INVALID),
        (_jws({"alg": "none"}, {"scope": "kafka", "exp": _LATER}), INVALID),
        (_jws({"alg": "none"}, {"sub": 42, "scope": "kafka", "exp": _LATER}), INVALID),
        (_jws({"alg": "none"}, {"sub": " ", "scope": "kafka", "exp": _LATER}), INVALID),
    ],
    ids=["no-scope", "expired", "signed", "string-scope-is-one", "list-not-strings",
         "scope-not-list", "exp-infinity", "exp-nan", "exp-overflows-to-inf", "alg-hs256",
         "no-exp", "iat-in-the-future", "no-sub", "sub-not-a-string", "sub-blank"],
)
def test_a_refused_token_gets_the_json_status_then_fails(oauth_broker, token, status) -> None:
    with sasl.RawSasl(oauth_broker.bootstrap) as raw:
        assert raw.handshake("OAUTHBEARER").error_code == 0
        challenge = raw.authenticate(_first_message(token))
        assert (challenge.error_code, challenge.auth_bytes) == (0, status.encode())
        final = raw.authenticate(b"\x01")  # RFC 7628: the client acknowledges the error
        assert (final.error_code, final.error_message) == (58, status)
        assert raw.closed_by_broker()


def test_a_string_scope_claim_is_one_scope(oauth_broker) -> None:
    """A scope string equal to the required scope (trimmed) is accepted as one element."""
    with sasl.RawSasl(oauth_broker.bootstrap) as raw:
        assert raw.handshake("OAUTHBEARER").error_code == 0
        response = raw.authenticate(_first_message(sasl.unsecured_token("alice", scope=" kafka ")))
        assert (response.error_code, response.auth_bytes) == (0, b"")


def test_the_session_lasts_until_the_token_expires(oauth_broker) -> None:
    with sasl.RawSasl(oauth_broker.bootstrap) as raw:
        assert raw.handshake("OAUTHBEARER").error_code == 0
        token = sasl.unsecured_token("alice", lifetime_s=120, scope="kafka")
        response = raw.authenticate(_first_message(token))
        assert response.error_code == 0
        assert 100_000 < response.session_lifetime_ms <= 120_000
        assert raw.metadata().brokers


def test_a_far_exp_is_a_session_as_long_as_the_field_holds(oauth_broker) -> None:
    """``exp`` 1e17 s is beyond an int64 of milliseconds: the session lifetime is clamped."""
    with sasl.RawSasl(oauth_broker.bootstrap) as raw:
        assert raw.handshake("OAUTHBEARER").error_code == 0
        token = sasl.unsecured_token("alice", scope="kafka", exp=1e17)
        response = raw.authenticate(_first_message(token))
        assert (response.error_code, response.session_lifetime_ms) == (0, 2**63 - 1)
        assert raw.metadata().brokers


@pytest.mark.parametrize("skew", ["-1", "soon", "1.5"])
def test_a_bad_clock_skew_option_is_refused_at_start(tmp_path, skew) -> None:
    from kafkette.broker.config import ConfigError

    jaas = f'{sasl.OAUTH_MODULE} required unsecuredValidatorAllowableClockSkewMs="{skew}";'
    configs = sasl.sasl_broker_configs(
        "OAUTHBEARER", listeners="SASL_PLAINTEXT://127.0.0.1:0",
        **{"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": jaas},
    )
    with pytest.raises(ConfigError, match="unsecuredValidatorAllowableClockSkewMs"):
        EmbeddedBroker.start(tmp_path, configs)
