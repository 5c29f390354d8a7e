"""The inter-broker client over TLS (broker/cluster/peer_client.py) against a real broker:
the inter-broker listener's ssl.* settings as a client, and
``ssl.endpoint.identification.algorithm`` (https: the broker's host name is checked)."""

from __future__ import annotations

import pytest
import trio

from kafkette.broker.cluster.peer_client import PeerClient, PeerError, PeerSecurity
from kafkette.broker.config import load_config
from kafkette.broker.security.listeners import plan_listeners

API_VERSIONS = 18


def peer_security(tls, identification: str | None) -> PeerSecurity:
    explicit = {
        "listeners": "BROKER://127.0.0.1:0",
        "listener.security.protocol.map": "BROKER:SSL",
        "inter.broker.listener.name": "BROKER",
        **tls.broker(store="PEM", listener="BROKER"),
    }
    if identification is not None:
        explicit["listener.name.broker.ssl.endpoint.identification.algorithm"] = identification
    config = load_config(explicit)
    return PeerSecurity.for_listener(config, plan_listeners(explicit, clustered=False).inter_broker)


def api_versions(host: str, port: int, security: PeerSecurity) -> int:
    async def main() -> int:
        client = PeerClient(host, port, "peer-tls-test", 1 << 20, security)
        try:
            with trio.fail_after(20):
                response = await client.request(API_VERSIONS, 3, {
                    "client_software_name": "kafkette", "client_software_version": "test",
                })
            return int(response.body["error_code"])
        finally:
            await client.aclose()

    return trio.run(main)


def test_peer_client_speaks_tls_and_checks_the_host_name(secure_broker, tls) -> None:
    # Listening on every interface: 127.0.0.2 reaches it too, a name the certificate
    # (localhost, 127.0.0.1) does not carry.
    broker = secure_broker(
        {**tls.broker(client_auth="required"), "advertised.listeners": "SSL://127.0.0.1:0"},
        listeners="SSL://0.0.0.0:0",
    )
    port = int(broker.endpoints["SSL"].rpartition(":")[2])
    assert api_versions("127.0.0.1", port, peer_security(tls, None)) == 0
    with pytest.raises(PeerError, match="CERTIFICATE_VERIFY_FAILED"):
        api_versions("127.0.0.2", port, peer_security(tls, None))
    # Empty: no host name check (the chain is still verified), as in Kafka.
    assert api_versions("127.0.0.2", port, peer_security(tls, "")) == 0
    broker.wait_for_log("TLS handshake failed")  # the refused one, broker side
