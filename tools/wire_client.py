"""Requests no client library sends for us, through kafkette's own client codec over a socket.

confluent-kafka's AdminClient has no call for transactions, reassignments, OffsetDelete, client
quotas, share groups (KIP-932) or ApiVersions, and librdkafka names delegation-token ACLs
UNKNOWN. The tools ask those questions themselves: ``kafkette.wire.client_connection`` encodes
each request and decodes its answer, this module owns the blocking socket, picks each API's
version from the broker's ApiVersions (the highest both sides know), finds coordinators and the
cluster's brokers, and bounds every exchange by ``--timeout``.

It connects as librdkafka does from the same ``-X`` settings (and ``--command-config``):
``security.protocol`` plaintext, ssl, sasl_plaintext or sasl_ssl; TLS from ``ssl.ca.location``
(a file or a directory), ``ssl.certificate.location``, ``ssl.key.location``,
``ssl.key.password``, ``enable.ssl.certificate.verification`` and
``ssl.endpoint.identification.algorithm``; SASL PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 from
``sasl.mechanism``, ``sasl.username`` and ``sasl.password``, logged in after ApiVersions (which
Kafka answers before authentication) through SaslHandshake v1 and SaslAuthenticate, as the Java
client does, with kafkette's own client side of SASL (``broker/security/sasl/client.py``, which
brokers use to log in to each other). Other mechanisms (GSSAPI, OAUTHBEARER) are
``Unsupported``: ``open_client`` says so in one line, exit 1 (the command is right; this client
cannot speak that mechanism; it is not a usage error).

Failures are the tools' own: no broker at an address is exit 3 (``unreachable``), a broker that
does not answer within ``--timeout`` is exit 3 too, a frame that does not decode is exit 1, a
value the request cannot carry (a number past its field) is exit 2.
"""

from __future__ import annotations

import argparse
import socket
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from kafkette.tools.common import (
    EXIT_FAILED,
    EXIT_USAGE,
    ToolError,
    bootstrap_addresses,
    ca_context,
    client_config,
    unreachable,
    unresolved,
)
from kafkette.wire.errors import ErrorCode

if TYPE_CHECKING:
    import ssl

CLIENT_ID = "kafkette-tools"
RECEIVE_BYTES = 1 << 16
PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Ask again: the coordinator is loading, moving or not there yet (Kafka's admin client retries
# these, after a fresh FindCoordinator).
RETRIABLE = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                       ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
RETRY_PAUSE_S = 0.2
# FindCoordinator's key types, and how a refusal names the key.
KEY_TYPE_GROUP = 0
KEY_TYPE_TRANSACTION = 1
KEY_NAMES = {KEY_TYPE_GROUP: "group", KEY_TYPE_TRANSACTION: "transactional id"}

T = TypeVar("T")


class Unsupported(Exception):
    """The broker, or the connection the user asked for, cannot carry this request."""


@dataclass(frozen=True, slots=True)
class Node:
    node_id: int
    host: str
    port: int
    rack: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def tls_context(config: dict[str, Any]) -> ssl.SSLContext:
    """An SSLContext from librdkafka's settings (system CAs unless ``ssl.ca.location``). A
    file that does not load, or a key that its ``ssl.key.password`` does not open, is one
    line, exit 2."""
    import ssl

    context = ca_context(config.get("ssl.ca.location") or None, "-X ssl.ca.location")
    if str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    certificate = config.get("ssl.certificate.location")
    if certificate:
        key = config.get("ssl.key.location") or None
        try:
            context.load_cert_chain(certificate, key, config.get("ssl.key.password") or None)
        except OSError as exc:
            reason = (
                "the certificate or key does not load (not PEM, a wrong -X ssl.key.password, "
                "or a key that does not match the certificate)"
                if isinstance(exc, ssl.SSLError) else exc.strerror or str(exc)
            )
            raise ToolError(f"-X ssl.certificate.location={certificate}"
                            f"{f' ssl.key.location={key}' if key else ''}: {reason}: check "
                            "the files and the key's password", EXIT_USAGE) from None
    return context


class Link:
    """One blocking connection to one broker (TLS and SASL as the client's settings ask),
    with that broker's API versions."""

    def __init__(self, client: WireClient, host: str, port: int) -> None:
        from kafkette.wire.client_connection import ClientConnection

        self.client = client
        self.address = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=client.remaining())
        except TimeoutError as exc:
            raise client.no_answer() from exc
        except socket.gaierror as exc:
            raise unresolved(self.address, [host]) from exc
        except OSError as exc:
            raise unreachable(self.address) from exc
        self.codec = ClientConnection()
        self.versions: dict[int, tuple[int, int]] = {}
        try:
            self._open(host)
        except BaseException:
            self.sock.close()  # a failed handshake or login leaves no socket behind
            raise

    def close(self) -> None:
        self.sock.close()

    def _open(self, host: str) -> None:
        """TLS, then ApiVersions, then the SASL login: every request after it is the user's."""
        client = self.client
        if client.tls is not None:
            try:
                self.sock.settimeout(client.remaining())
                self.sock = client.tls.wrap_socket(self.sock, server_hostname=host)
            except TimeoutError as exc:
                raise client.no_answer() from exc
            except OSError as exc:  # ssl.SSLError too
                raise ToolError(
                    f"the TLS handshake with {self.address} failed: {exc}: check "
                    "-X ssl.ca.location and the listener's protocol"
                ) from exc
        self._ask_versions()
        if client.mechanism is not None:
            self._authenticate(client.mechanism, client.username, client.password)

    def _ask_versions(self) -> None:
        from kafkette.wire.apis import ApiKey

        body = self.exchange(ApiKey.API_VERSIONS, 3, {
            "client_software_name": "kafkette-tools", "client_software_version": "1"})
        if body["error_code"]:
            raise Unsupported(f"ApiVersions v3 refused by {self.address}")
        self.versions = {entry["api_key"]: (entry["min_version"], entry["max_version"])
                         for entry in body["api_keys"]}

    def _authenticate(self, mechanism: str, username: str, password: str) -> None:
        from kafkette.broker.security.sasl.client import SaslClientError, authenticate_client
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

    def version(self, api_key: int, lowest: int = 0, highest: int | None = None) -> int:
        """The highest version of ``api_key`` the broker serves and the codec knows, within
        ``lowest..highest``; ``Unsupported`` when there is none."""
        from kafkette.wire.apis import api_spec

        spec = api_spec(api_key)
        served = self.versions.get(int(api_key))
        if spec is None or served is None:
            raise Unsupported(f"{self.address} does not serve API {int(api_key)}")
        low = max(served[0], spec.decode_min, lowest)
        high = min(served[1], spec.max_version, highest if highest is not None else 1 << 15)
        if low > high:
            raise Unsupported(f"{self.address} serves {spec.name} v{served[0]}-{served[1]}, "
                              f"none of which this tool speaks")
        return high

    def exchange(self, api_key: int, version: int, body: dict) -> dict:
        """Send one request and wait for its answer body, within the client's deadline."""
        from kafkette.wire.client_connection import NEED_DATA
        from kafkette.wire.exceptions import EncodeError, MalformedFrameError

        try:
            request = self.codec.send_request(api_key, version, body, CLIENT_ID)
        except EncodeError as exc:  # a number the command line gave that the field cannot hold
            raise ToolError(f"a value does not fit the request ({exc}): check the numbers given",
                            EXIT_USAGE) from None
        try:
            self.sock.settimeout(self.client.remaining())
            self.sock.sendall(request)
            while (response := self.codec.next_response()) is NEED_DATA:
                self.sock.settimeout(self.client.remaining())
                data = self.sock.recv(RECEIVE_BYTES)
                if not data:
                    raise ToolError(f"the broker at {self.address} closed the connection "
                                    "before it answered: check the broker's log")
                self.codec.receive_data(data)
        except TimeoutError as exc:
            raise self.client.no_answer() from exc
        except MalformedFrameError as exc:
            raise ToolError(f"the answer of {self.address} does not decode: {exc}") from exc
        except OSError as exc:
            raise ToolError(f"the connection to {self.address} failed: {exc}: check the "
                            "broker is up") from exc
        return response.body

    def call(self, api_key: int, body: dict, lowest: int = 0,
             highest: int | None = None) -> tuple[int, dict]:
        """(version used, answer body) of one request at the best common version."""
        version = self.version(api_key, lowest, highest)
        return version, self.exchange(api_key, version, body)

    def request(self, api_key: int, body: dict, lowest: int = 0,
                highest: int | None = None) -> dict:
        """The answer body of one request; a broker that serves no version of it this client
        speaks is one line, exit 1."""
        try:
            return self.call(api_key, body, lowest, highest)[1]
        except Unsupported as exc:
            raise ToolError(f"{exc}: the broker does not serve this request (a Kafka older "
                            "than the request?)") from None


class WireClient:
    """The links of one tool run: to the bootstrap broker, the brokers it names, and
    coordinators. Every exchange shares one deadline, ``--timeout`` from the first call."""

    def __init__(self, args: argparse.Namespace) -> None:
        config = client_config(args)
        protocol = str(config.get("security.protocol", "plaintext")).lower()
        if protocol not in PROTOCOLS:
            raise ToolError(
                f"-X security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}", EXIT_USAGE
            )
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
        self.tls = tls_context(config) if protocol.endswith("ssl") else None
        self.args = args
        self.deadline = time.monotonic() + float(args.timeout)
        self._links: dict[str, Link] = {}

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        for link in self._links.values():
            link.close()
        self._links.clear()

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self.no_answer()
        return left

    def no_answer(self) -> ToolError:
        from kafkette.tools.admin_client import no_answer

        return no_answer(self.args)

    def retry(self, attempt: Callable[[], T], again: Callable[[T], bool]) -> T:
        """``attempt()`` until ``again(answer)`` is false (a coordinator loading or moving,
        a controller elsewhere): Kafka's admin client asks again, and so do the tools, until
        ``--timeout`` has passed (exit 3)."""
        while True:
            answer = attempt()
            if not again(answer):
                return answer
            self.remaining()
            time.sleep(RETRY_PAUSE_S)

    def link(self, host: str, port: int) -> Link:
        address = f"{host}:{port}"
        found = self._links.get(address)
        if found is None:
            found = self._links[address] = Link(self, host, port)
        return found

    def node_link(self, node: Node) -> Link:
        return self.link(node.host, node.port)

    def bootstrap(self) -> Link:
        """A link to the first bootstrap address that takes a connection."""
        failure: ToolError | None = None
        for host, port in bootstrap_addresses(self.args.bootstrap):
            try:
                return self.link(host, port)
            except ToolError as exc:
                failure = exc
        raise failure if failure is not None else unreachable(self.args.bootstrap)

    def brokers(self) -> list[Node]:
        """Every broker of the cluster (Metadata with no topics), by node id."""
        from kafkette.wire.apis import ApiKey

        body = self.bootstrap().request(ApiKey.METADATA, {
            "topics": [], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }, lowest=1)  # v0 reads an empty topic list as "every topic"
        return sorted((Node(b["node_id"], b["host"], b["port"], b.get("rack"))
                       for b in body["brokers"]), key=lambda n: n.node_id)

    def coordinator(self, key: str, key_type: int = KEY_TYPE_GROUP) -> Node:
        """The coordinator of a group (or, with ``KEY_TYPE_TRANSACTION``, a transactional id)."""
        return self.coordinators([key], key_type)[key]

    def coordinators(self, keys: Iterable[str], key_type: int = KEY_TYPE_GROUP) -> dict[str, Node]:
        """Each key's coordinator (FindCoordinator; v4 asks for every key at once), asked
        again while the broker says it is still loading or moving (``RETRIABLE``)."""
        from kafkette.wire.apis import ApiKey

        wanted = list(dict.fromkeys(keys))
        found: dict[str, Node] = {}
        link = self.bootstrap()

        def attempt() -> bool:
            pending = [k for k in wanted if k not in found]
            version = link.version(ApiKey.FIND_COORDINATOR, lowest=1 if key_type else 0)
            if version >= 4:
                body = link.exchange(ApiKey.FIND_COORDINATOR, version,
                                     {"key_type": key_type, "coordinator_keys": pending})
                answers = [(entry["key"], entry) for entry in body["coordinators"]]
            else:
                answers = [(key, link.exchange(ApiKey.FIND_COORDINATOR, version,
                                               {"key": key, "key_type": key_type}))
                           for key in pending]
            for key, answer in answers:
                code = answer["error_code"]
                if code == ErrorCode.NONE:
                    found[key] = Node(answer["node_id"], answer["host"], answer["port"])
                elif code not in RETRIABLE:
                    raise ToolError(
                        f"could not find the coordinator of {KEY_NAMES.get(key_type, 'key')} "
                        f"{key!r}: {error_text(code, answer.get('error_message'))}")
            return len(found) < len(wanted)

        try:
            self.retry(attempt, bool)
        except Unsupported as exc:
            raise ToolError(f"{exc}: the broker cannot find coordinators") from None
        return found


def open_client(args: argparse.Namespace) -> WireClient:
    """The tools' one way to a wire client. A SASL mechanism this client cannot log in with
    (``Unsupported``) is one line, exit 1 for every tool: the command line is right, the
    client lacks the mechanism (the confluent-kafka-based tools may have it)."""
    try:
        return WireClient(args)
    except Unsupported as exc:
        raise ToolError(
            f"kafkette's own client cannot log in with {exc}: this request goes through it; "
            f"use SASL {', '.join(MECHANISMS)}, or a PLAINTEXT or SSL listener",
            EXIT_FAILED,
        ) from None


def by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """Partition numbers by topic, in order: how requests list partitions."""
    found: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        found.setdefault(topic, []).append(partition)
    return found


def error_text(code: int, message: str | None = None) -> str:
    """``message (NAME)``, as the admin tools word a broker's refusal."""
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return f"{message} ({name})" if message else name


def node_json(node: Node) -> dict[str, Any]:
    return {"id": node.node_id, "host": node.host, "port": node.port}
