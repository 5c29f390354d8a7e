"""The TLS handshake on accept, with the broker in this process: a client that never
says a word is closed after the handshake timeout (one line; the broker keeps serving);
KIP-684 (a SASL_SSL listener takes ``ssl.client.auth`` only with its listener prefix);
the temporary directory that hands the key to OpenSSL is gone once the broker started."""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import tempfile
import time
from pathlib import Path

import pytest

from kafkette.broker import server
from kafkette.broker.embedded import EmbeddedBroker

TIMEOUT_S = 20
API_VERSIONS_V0 = struct.pack(">ihhih", 2 + 2 + 4 + 2, 18, 0, 1, -1)  # no client id
PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required"
    ' username="admin" password="admin-secret" user_admin="admin-secret";'
)


def connect(endpoint: object) -> socket.socket:
    host, _, port = str(endpoint).rpartition(":")
    return socket.create_connection((host, int(port)), timeout=TIMEOUT_S)


def api_versions_answered(endpoint: object, context: ssl.SSLContext) -> bool:
    """TLS handshake then ApiVersions v0; True when an answer comes back, False when the
    broker refused the handshake or closed the connection."""
    try:
        with context.wrap_socket(connect(endpoint), server_hostname="127.0.0.1") as sock:
            sock.sendall(API_VERSIONS_V0)
            return len(sock.recv(4)) == 4
    except (ssl.SSLError, ConnectionError):
        return False


def handshake_failures(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "TLS handshake failed" in r.getMessage()]


def test_a_silent_client_is_closed_after_the_handshake_timeout(
    tmp_path, tls, monkeypatch, caplog
) -> None:
    monkeypatch.setattr(server, "TLS_HANDSHAKE_TIMEOUT_S", 1.0)
    caplog.set_level(logging.WARNING, logger="kafkette")
    configs = {"listeners": "SSL://127.0.0.1:0", **tls.broker()}
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        endpoint = broker.broker.endpoint_for("SSL")
        with connect(endpoint) as silent:
            started = time.monotonic()
            try:
                assert silent.recv(1) == b""  # closed by the broker, never answered
            except ConnectionResetError:
                pass
            waited = time.monotonic() - started
        assert 0.5 < waited < TIMEOUT_S
        # Still serving TLS clients.
        assert api_versions_answered(endpoint, tls.client_context())
        [line] = handshake_failures(caplog)
        assert line.endswith("on listener SSL: TLS handshake failed: no handshake within 1s")


def test_sasl_ssl_takes_ssl_client_auth_only_with_its_listener_prefix(
    tmp_path, tls, caplog
) -> None:
    """KIP-684: an unprefixed ssl.client.auth=required asks SSL listeners for certificates,
    not SASL_SSL ones (SASL authenticates their clients); a prefixed one counts."""
    caplog.set_level(logging.WARNING, logger="kafkette")
    configs = {
        "listeners": "SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,STRICT://127.0.0.1:0",
        "listener.security.protocol.map": "SSL:SSL,SASL_SSL:SASL_SSL,STRICT:SASL_SSL",
        **tls.broker(client_auth="required"),
        "listener.name.strict.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": PLAIN_JAAS,
    }
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        no_certificate, with_certificate = tls.client_context(), tls.client_context(mutual=True)
        sasl_ssl = broker.broker.endpoint_for("SASL_SSL")
        strict = broker.broker.endpoint_for("STRICT")
        ssl_listener = broker.broker.endpoint_for("SSL")
        # ApiVersions is answered before SASL authentication.
        assert api_versions_answered(sasl_ssl, no_certificate)
        assert handshake_failures(caplog) == []
        assert not api_versions_answered(ssl_listener, no_certificate)
        assert not api_versions_answered(strict, no_certificate)
        assert api_versions_answered(ssl_listener, with_certificate)
        assert api_versions_answered(strict, with_certificate)
        for _ in range(100):  # the refusals' lines, written as the broker sees them
            if len(handshake_failures(caplog)) == 2:
                break
            time.sleep(0.05)
        failures = handshake_failures(caplog)
        assert len(failures) == 2, failures
        assert any("listener SSL:" in line for line in failures), failures
        assert any("listener STRICT:" in line for line in failures), failures


def test_the_key_handed_to_openssl_leaves_no_file(tmp_path, tls, monkeypatch) -> None:
    """The decoded key goes to OpenSSL through a private temporary directory: gone once the
    broker started, and when a start fails on the key."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    configs = {"listeners": "SSL://127.0.0.1:0", **tls.broker(store="PEM")}
    with EmbeddedBroker.start(tmp_path / "data", configs) as broker:
        assert api_versions_answered(broker.broker.endpoint_for("SSL"), tls.client_context())
        assert list(temporary.iterdir()) == []
    # A key that is not the certificate's: refused at start, nothing left behind either.
    m = tls.material
    mismatched = {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": Path(m.client_key_pem).read_text(),
        "ssl.keystore.certificate.chain": Path(m.broker_cert_pem).read_text(),
    }
    with pytest.raises(ValueError, match="the key does not match its certificate"):
        EmbeddedBroker.start(tmp_path / "data2", mismatched)
    assert list(temporary.iterdir()) == []
    # No usable temporary directory: one line too.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="cannot hand the key to OpenSSL through a temporary"):
        EmbeddedBroker.start(tmp_path / "data3", configs)


def test_an_unexpected_error_in_a_handshake_costs_that_connection_only(
    tmp_path, tls, monkeypatch, caplog
) -> None:
    """A fault injected where the principal is computed (a bug of ours, as a mapping rule
    that raised used to be): one line with its traceback, that connection closed, the
    broker serving the next."""
    from kafkette.broker.security import tls as tls_module

    real = tls_module.peer_principal
    calls = []

    def fail_once(listener_tls, der):
        calls.append(der)
        if len(calls) == 1:
            raise RuntimeError("injected")
        return real(listener_tls, der)

    monkeypatch.setattr(tls_module, "peer_principal", fail_once)
    caplog.set_level(logging.WARNING, logger="kafkette")
    configs = {"listeners": "SSL://127.0.0.1:0", **tls.broker(client_auth="required")}
    with EmbeddedBroker.start(tmp_path, configs) as broker:
        endpoint = broker.broker.endpoint_for("SSL")
        assert not api_versions_answered(endpoint, tls.client_context(mutual=True))
        assert api_versions_answered(endpoint, tls.client_context(mutual=True))
        [line] = handshake_failures(caplog)
        assert line.endswith("on listener SSL: TLS handshake failed")
        [record] = [r for r in caplog.records if "TLS handshake failed" in r.getMessage()]
        assert record.exc_info is not None and "injected" in str(record.exc_info[1])
