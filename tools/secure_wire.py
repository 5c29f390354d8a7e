"""The tools' wire client over TLS and SASL, with librdkafka's ``-X`` settings.

``tools/wire_client.py`` speaks PLAINTEXT only. The requests confluent-kafka does not offer
(client quotas; ACLs on delegation tokens) must still reach a secured cluster, where an
admin often has no PLAINTEXT listener, or one where it is only ``User:ANONYMOUS``. This
module wraps each link's socket in TLS (``security.protocol=ssl|sasl_ssl``;
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``,
``ssl.key.password``, ``enable.ssl.certificate.verification``,
``ssl.endpoint.identification.algorithm``) and logs in with SASL PLAIN or SCRAM-SHA-256/512
(``sasl.mechanism``, ``sasl.username``, ``sasl.password``) before any other request, after
ApiVersions (which Kafka serves before authentication), through SaslHandshake v1 and
SaslAuthenticate, as the Java client does. The SASL exchange is kafkette's own client side
(``broker/security/sasl/client.py``, which brokers use to log in to each other).
Other mechanisms (GSSAPI, OAUTHBEARER) are ``Unsupported``.
"""

from __future__ import annotations

import argparse
import ssl
from typing import Any

from kafkette.tools.common import EXIT_USAGE, ToolError, client_config
from kafkette.tools.wire_client import Link, Unsupported, WireClient

PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def tls_context(config: dict[str, Any]) -> ssl.SSLContext:
    """An SSLContext from librdkafka's settings (system CAs unless ``ssl.ca.location``)."""
    context = ssl.create_default_context(cafile=config.get("ssl.ca.location") or None)
    if str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if config.get("ssl.certificate.location"):
        context.load_cert_chain(
            config["ssl.certificate.location"],
            config.get("ssl.key.location") or None,
            config.get("ssl.key.password") or None,
        )
    return context


class SecureLink(Link):
    """A link that does TLS and SASL before its first request (ApiVersions answers first)."""

    def _ask_versions(self) -> None:
        client = self.client
        assert isinstance(client, SecureWireClient)
        if client.tls is not None:
            host = self.address.rpartition(":")[0]
            try:
                self.sock.settimeout(client.remaining())
                self.sock = client.tls.wrap_socket(self.sock, server_hostname=host)
            except (ssl.SSLError, OSError) as exc:
                raise ToolError(
                    f"the TLS handshake with {self.address} failed: {exc}: check "
                    "-X ssl.ca.location and the listener's protocol"
                ) from exc
        super()._ask_versions()
        if client.mechanism is not None:
            self._authenticate(client.mechanism, client.username, client.password)

    def _authenticate(self, mechanism: str, username: str, password: str) -> None:
        from kafkette.broker.security.sasl.client import SaslClientError, authenticate_client
        from kafkette.tools.wire_client import error_text
        from kafkette.wire.apis import ApiKey

        answer = self.exchange(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        if answer["error_code"]:
            offered = ", ".join(answer.get("mechanisms") or []) or "none"
            raise ToolError(
                f"{self.address} does not take SASL {mechanism} "
                f"({error_text(answer['error_code'])}; it offers {offered}): "
                "set -X sasl.mechanism to one it offers"
            )
        version = self.version(ApiKey.SASL_AUTHENTICATE)

        async def exchange(token: bytes) -> bytes:
            body = self.exchange(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})
            if body["error_code"]:
                raise ToolError(
                    f"SASL login as {username!r} refused by {self.address}: "
                    f"{error_text(body['error_code'], body.get('error_message'))}"
                    ": check -X sasl.username and sasl.password"
                )
            return bytes(body["auth_bytes"] or b"")

        # The exchange never waits on an event loop: run the coroutine to its end by hand.
        login = authenticate_client(exchange, mechanism, username, password)
        try:
            login.send(None)
        except StopIteration:
            return
        except SaslClientError as exc:
            raise ToolError(f"SASL login as {username!r} at {self.address} failed: {exc}") from exc
        finally:
            login.close()
        raise ToolError(f"SASL login at {self.address} did not finish")


class SecureWireClient(WireClient):
    """``WireClient`` whose links follow ``-X security.protocol`` and the SASL/TLS settings."""

    def __init__(self, args: argparse.Namespace) -> None:
        config = client_config(args)
        protocol = str(config.get("security.protocol", "plaintext")).lower()
        if protocol not in PROTOCOLS:
            raise ToolError(
                f"-X security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}", EXIT_USAGE
            )
        self.tls = tls_context(config) if protocol.endswith("ssl") else None
        self.mechanism: str | None = None
        self.username = self.password = ""
        if protocol.startswith("sasl"):
            mechanism = str(
                config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI"))
            ).upper()
            if mechanism not in MECHANISMS:
                raise Unsupported(f"sasl.mechanism={mechanism}")
            self.mechanism = mechanism
            self.username = str(config.get("sasl.username", ""))
            self.password = str(config.get("sasl.password", ""))
        args_plain = argparse.Namespace(**{**vars(args), "client_configs": []})
        super().__init__(args_plain)
        self.args = args

    def link(self, host: str, port: int) -> Link:
        address = f"{host}:{port}"
        found = self._links.get(address)
        if found is None:
            found = self._links[address] = SecureLink(self, host, port)
        return found
