"""Requests no client library sends for us, through kafkette's own client codec over a socket.

confluent-kafka's AdminClient has no call for share groups (KIP-932), and librdkafka's
ListConsumerGroups drops every group whose protocol type is not ``consumer``. The tools ask
those questions themselves: ``kafkette.wire.client_connection.ClientConnection`` encodes the
request and decodes the answer, this module owns the blocking socket, picks each API's version
from the broker's ApiVersions (the highest both sides know), finds a group's coordinator and
the cluster's brokers, and bounds every exchange by ``--timeout``.

It speaks PLAINTEXT only: ``-X security.protocol`` other than plaintext is ``Unsupported``, and
callers say so in their own words. Failures are the tools' own: no broker at an address is
exit 3 (``unreachable``), a broker that does not answer within ``--timeout`` is exit 3 too, a
frame that does not decode is exit 1.
"""

from __future__ import annotations

import argparse
import socket
import time
from dataclasses import dataclass
from typing import Any

from kafkette.tools.common import (
    ToolError,
    bootstrap_addresses,
    client_config,
    unreachable,
    unresolved,
)

CLIENT_ID = "kafkette-tools"
RECEIVE_BYTES = 1 << 16


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


def check_plaintext(args: argparse.Namespace) -> None:
    """``Unsupported`` unless the ``-X`` configs ask for a plain connection."""
    protocol = str(client_config(args).get("security.protocol", "plaintext")).lower()
    if protocol != "plaintext":
        raise Unsupported(f"security.protocol={protocol}")


class Link:
    """One blocking connection to one broker, with that broker's API versions."""

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
        self._ask_versions()

    def close(self) -> None:
        self.sock.close()

    def _ask_versions(self) -> None:
        from kafkette.wire.apis import ApiKey

        body = self.exchange(ApiKey.API_VERSIONS, 3, {
            "client_software_name": "kafkette-tools", "client_software_version": "1"})
        if body["error_code"]:
            raise Unsupported(f"ApiVersions v3 refused by {self.address}")
        self.versions = {entry["api_key"]: (entry["min_version"], entry["max_version"])
                         for entry in body["api_keys"]}

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
        from kafkette.wire.exceptions import MalformedFrameError

        try:
            self.sock.settimeout(self.client.remaining())
            self.sock.sendall(self.codec.send_request(api_key, version, body, CLIENT_ID))
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


class WireClient:
    """The links of one tool run: to the bootstrap broker, the brokers it names, and group
    coordinators. Every exchange shares one deadline, ``--timeout`` from the first call."""

    def __init__(self, args: argparse.Namespace) -> None:
        check_plaintext(args)
        self.args = args
        self.deadline = time.monotonic() + float(args.timeout)
        self._links: dict[str, Link] = {}

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
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

    def link(self, host: str, port: int) -> Link:
        address = f"{host}:{port}"
        found = self._links.get(address)
        if found is None:
            found = self._links[address] = Link(self, host, port)
        return found

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

        _, body = self.bootstrap().call(ApiKey.METADATA, {
            "topics": [], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }, lowest=1)  # v0 reads an empty topic list as "every topic"
        return sorted((Node(b["node_id"], b["host"], b["port"], b.get("rack"))
                       for b in body["brokers"]), key=lambda n: n.node_id)

    def coordinator(self, group: str) -> Node:
        """The group's coordinator (FindCoordinator, key type GROUP), retried while the
        broker says it is still loading or moving (Kafka's retriable answers)."""
        from kafkette.wire.apis import ApiKey
        from kafkette.wire.errors import ErrorCode

        retriable = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                     ErrorCode.NOT_COORDINATOR}
        link = self.bootstrap()
        while True:
            version = link.version(ApiKey.FIND_COORDINATOR)
            if version >= 4:
                body = link.exchange(ApiKey.FIND_COORDINATOR, version,
                                     {"key_type": 0, "coordinator_keys": [group]})
                answer = body["coordinators"][0]
            else:
                answer = link.exchange(ApiKey.FIND_COORDINATOR, version,
                                       {"key": group, "key_type": 0})
            code = answer["error_code"]
            if code == ErrorCode.NONE:
                return Node(answer["node_id"], answer["host"], answer["port"])
            if code not in retriable:
                raise ToolError(f"could not find the coordinator of group {group!r}: "
                                f"{error_text(code, answer.get('error_message'))}")
            self.remaining()  # exit 3 once --timeout has passed
            time.sleep(0.2)


def error_text(code: int, message: str | None = None) -> str:
    """``message (NAME)``, as the admin tools word a broker's refusal."""
    from kafkette.wire.errors import ErrorCode

    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return f"{message} ({name})" if message else name


def node_json(node: Node) -> dict[str, Any]:
    return {"id": node.node_id, "host": node.host, "port": node.port}
