"""The inter-broker SASL client (broker/security/sasl/client.py) against RFC 7677's example
and against the broker's own mechanisms, and the JAAS parser on Kafka's syntax.

The client runs only between brokers of a cluster; these exchanges check it without
one: the RFC's published SCRAM-SHA-256 conversation byte for byte, then full
conversations with the server side of each mechanism (a wrong password refused).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import trio

from kafkette.broker.cluster.peer_client import PeerSecurity
from kafkette.broker.security.listeners import plan_listeners
from kafkette.broker.security.sasl import client as sasl_client
from kafkette.broker.security.sasl import scram_formulas as sf
from kafkette.broker.security.sasl.jaas import JaasError, parse_jaas_config
from kafkette.broker.security.sasl.mechanism import AuthenticationFailed, InvalidCredentials
from kafkette.broker.security.sasl.plain import PlainServer
from kafkette.broker.security.sasl.scram import ScramServer

RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)


def test_the_client_follows_rfc_7677s_example(monkeypatch) -> None:
    monkeypatch.setattr(sf, "new_nonce", lambda: "rOprNGfwEbeRWgbNEkqO")
    sent: list[bytes] = []

    async def exchange(token: bytes) -> bytes:
        sent.append(token)
        if len(sent) == 1:
            return RFC_SERVER_FIRST
        return b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

    trio.run(sasl_client.authenticate_client, exchange, "SCRAM-SHA-256", "user", "pencil")
    assert sent == [
        b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    ]


def _run_against(server, mechanism: str, username: str, password: str) -> None:
    async def exchange(token: bytes) -> bytes:
        try:
            return server.evaluate(token)
        except (AuthenticationFailed, InvalidCredentials) as exc:
            raise sasl_client.SaslClientError(str(exc)) from None

    trio.run(sasl_client.authenticate_client, exchange, mechanism, username, password)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_client_and_server_agree_and_a_wrong_password_is_refused(mechanism) -> None:
    stored = sf.make_credential(mechanism, "s3cret", 4096)
    credentials = {(mechanism, "broker,=1"): stored}  # a name that needs RFC 5802 escaping
    server = ScramServer(mechanism, lambda mech, user: credentials.get((mech, user)))
    _run_against(server, mechanism, "broker,=1", "s3cret")
    assert server.complete and server.principal_name == "broker,=1"
    with pytest.raises(sasl_client.SaslClientError, match="Invalid client credentials"):
        _run_against(ScramServer(mechanism, lambda m, u: stored), mechanism, "broker,=1", "nope")


def test_plain_client_and_server() -> None:
    server = PlainServer({"admin": "admin-secret"})
    _run_against(server, "PLAIN", "admin", "admin-secret")
    assert server.principal_name == "admin"
    with pytest.raises(sasl_client.SaslClientError, match="Invalid username or password"):
        _run_against(PlainServer({"admin": "x"}), "PLAIN", "admin", "admin-secret")


def test_inter_broker_credentials_come_from_the_listeners_jaas_config() -> None:
    explicit = {
        "listeners": "INTERNAL://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "listener.name.internal.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required"
            ' username="broker" password="broker-pw";'
        ),
    }
    def inter_broker_sasl(explicit: dict) -> tuple[str, str, str] | None:
        listener = plan_listeners(explicit, clustered=True).inter_broker
        return PeerSecurity.for_listener(SimpleNamespace(explicit=explicit), listener).sasl

    assert inter_broker_sasl(explicit) == ("SCRAM-SHA-512", "broker", "broker-pw")
    assert inter_broker_sasl({"listeners": "PLAINTEXT://:9092"}) is None


def test_jaas_values_as_kafka_writes_them() -> None:
    entry = parse_jaas_config(
        "org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '  username="admin" password="admin-secret" /* comment */\n'
        '  user_admin="admin-secret" user_alice="a \\"quoted\\" pw" user_bob=bare;'
    )
    assert entry.control_flag == "required"
    assert entry.plain_users == {"admin": "admin-secret", "alice": 'a "quoted" pw', "bob": "bare"}
    for bad, message in [
        ('x required a="b"', "not terminated by semi-colon"),
        ('x sometimes a="b";', "control flag"),
        ('x required a="b"; y required c="d";', "contains 2 login modules"),
    ]:
        with pytest.raises(JaasError, match=message):
            parse_jaas_config(bad)


@pytest.mark.parametrize(
    ("server_first", "server_final", "message"),
    [
        (b"r=client-nonceS,s=c2FsdA==,i=1000000000", None, "above 32768"),
        (b"r=client-nonceS,s=c2FsdA==,i=4096", b"v=AAAA", "server signature does not match"),
        (b"r=client-nonceS,s=c2FsdA==,i=4096", b"e=other-error", "other-error"),
        (b"r=other-nonce,s=c2FsdA==,i=4096", None, "does not extend the client nonce"),
        (b"r=client-nonceS,s=c2FsdA==,i=1024", None, "below 4096"),
    ],
    ids=["too-many-iterations", "wrong-signature", "server-error", "foreign-nonce", "too-few"],
)
def test_the_client_refuses_a_server_that_misbehaves(
    monkeypatch, server_first, server_final, message
) -> None:
    monkeypatch.setattr(sf, "new_nonce", lambda: "client-nonce")
    answers = [server_first, server_final]

    async def exchange(token: bytes) -> bytes:
        answer = answers.pop(0)
        assert answer is not None, "the client went on after a server-first it must refuse"
        return answer

    with pytest.raises(sasl_client.SaslClientError, match=message):
        trio.run(sasl_client.authenticate_client, exchange, "SCRAM-SHA-256", "u", "p")


@pytest.mark.parametrize(
    "text",
    [
        f'{sasl_client.__name__} required password "hunter2-secret";',  # no '='
        'x required username="admin" password="hunter2-secret;',  # unterminated quote
        'x required password=="hunter2-secret";',  # '=' where the value goes
    ],
)
def test_jaas_errors_give_a_position_never_the_text(text) -> None:
    with pytest.raises(JaasError) as refused:
        parse_jaas_config(text)
    assert "hunter2" not in str(refused.value)
    assert "position" in str(refused.value)


def _server_first(server: ScramServer, first: bytes = b"n,,n=user,r=cnonce") -> str:
    return server.evaluate(first).decode()


def _final_for(server_first: str, channel: str = "biws", proof: bytes = b"\0" * 32) -> bytes:
    nonce = server_first.split(",")[0][2:]
    return f"c={channel},r={nonce},p={sf.b64(proof)}".encode()


def _scram_server() -> ScramServer:
    stored = sf.make_credential("SCRAM-SHA-256", "pencil", 4096)
    return ScramServer("SCRAM-SHA-256", lambda mech, user: stored if user == "user" else None)


def test_scram_server_refuses_a_final_message_with_another_nonce() -> None:
    server = _scram_server()
    _server_first(server)
    with pytest.raises(InvalidCredentials, match="Invalid client nonce"):
        server.evaluate(b"c=biws,r=cnonce-not-the-servers,p=" + sf.b64(b"\0" * 32).encode())
    assert not server.complete


def test_scram_server_refuses_channel_data_unlike_the_gs2_header() -> None:
    server = _scram_server()
    first = _server_first(server, b"n,a=user,n=user,r=cnonce")  # gs2 header "n,a=user,"
    with pytest.raises(InvalidCredentials, match="channel binding"):
        server.evaluate(_final_for(first, channel="biws"))  # biws is "n,,"


def test_scram_server_refuses_a_proof_of_the_wrong_length() -> None:
    server = _scram_server()
    first = _server_first(server)
    with pytest.raises(InvalidCredentials, match="Invalid client credentials"):
        server.evaluate(_final_for(first, proof=b"\0" * 20))


def test_scram_server_refuses_mandatory_extensions_and_another_authzid() -> None:
    with pytest.raises(InvalidCredentials, match="mandatory extensions"):
        _scram_server().evaluate(b"n,,m=ext,n=user,r=cnonce")
    with pytest.raises(AuthenticationFailed, match="authorization id"):
        _scram_server().evaluate(b"n,a=admin,n=user,r=cnonce")
    with pytest.raises(InvalidCredentials, match="channel binding is not supported"):
        _scram_server().evaluate(b"y,,n=user,r=cnonce")
    server = _scram_server()
    with pytest.raises(InvalidCredentials):
        server.evaluate(b"n,,n=nobody,r=cnonce")  # unknown user: the same failure as a bad proof
    with pytest.raises(InvalidCredentials):
        server.evaluate(b"n,,n=user,r=cnonce")  # and the exchange is over
