"""Fixtures of the security tests: a real ``kafkette serve`` with extra config, and TLS material.

Shared by every security test module (listeners and TLS, SASL, ACLs, compat). Test
modules cannot import this file (pytest runs with ``--import-mode=importlib``), so all
of it is reached through fixtures:

- ``tls_material`` (session): ``kafkette.testing_tls.make_tls_material`` in a temp dir: a
  CA, a broker certificate for localhost and 127.0.0.1, a client certificate (subject
  ``CN=client,OU=test,O=kafkette``), as PEM files and PKCS12 keystores (password
  ``material.password``).
- ``tls``: a ``TlsConfigs`` over that material: ``tls.broker(...)`` the broker's ssl.*
  config lines (PKCS12 or PEM, ``ssl.client.auth``, per listener if asked),
  ``tls.confluent(...)`` / ``tls.kafka_python(...)`` / ``tls.aiokafka_context(...)`` the
  clients' settings, server-auth or mutual.
- ``secure_broker``: factory ``secure_broker(configs, listeners=..., ready=True)`` -> a
  ``SecureBroker``: ``kafkette serve`` in a child process started from a properties file
  holding ``listeners=`` and ``configs`` (a dict of Kafka config lines). Every listener
  gets a free port (port 0) unless the caller names one; ``broker.endpoints[NAME]`` is
  its bound ``host:port`` (read from the broker's "listening on NAME://..." log line),
  ``broker.bootstrap`` the first listener's. ``ready=False`` for a start expected to fail:
  ``broker.wait_exit()`` returns (exit code, stderr lines).

- ``kafka_ref`` (session): the reference Kafka 4.0's ``kafka-ref`` script
  (``KAFKETTE_KAFKA_REF``, else beside the checkout: tests/reference_kafka.py),
  or None when the machine has none (the test then skips).
- ``zookeeper`` (module): a real ZooKeeper for the cluster tests (skips when none is
  installed); tests keep apart by chroot.

The helper modules beside this file are imported as modules
(``from tests.security import acl_support as support``, ``... sasl_support as sasl``).

Every wait has a deadline; a test that hits one fails, it never hangs.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.harness.serve_process import ServeProcess
from kafkette.broker.cluster.zookeeper_server import (
    ZooKeeperNotInstalled,
    ZooKeeperServer,
    find_zookeeper,
)
from kafkette.testing_tls import TlsMaterial, make_tls_material
from tests.reference_kafka import reference_script

# server.py logs one line per listener: "listening on NAME://HOST:PORT, advertising H:P".
LISTENING_LINE = re.compile(r"listening on ([A-Z0-9_-]+)://(\S+):(\d+), advertising (\S+)")


class SecureBroker(ServeProcess):
    """``kafkette serve --config-file <properties>`` in a child process."""

    def __init__(self, properties: Path, data_dir: Path, log_path: Path, args: list[str]) -> None:
        self.properties = properties
        self.data_dir = data_dir
        super().__init__(
            ["--config-file", str(properties), "--data-dir", str(data_dir), *args], log_path
        )

    @property
    def endpoints(self) -> dict[str, str]:
        """Listener name -> bound HOST:PORT (the simple --listen form logs no name: {})."""
        return {m.group(1): f"{m.group(2)}:{m.group(3)}" for m in self._listening()}

    @property
    def advertised(self) -> dict[str, str]:
        """Listener name -> the HOST:PORT it advertises."""
        return {m.group(1): m.group(4) for m in self._listening()}

    def _listening(self) -> list[re.Match[str]]:
        return [m for m in LISTENING_LINE.finditer(self.stderr_text())]


def write_properties(path: Path, configs: Mapping[str, str]) -> Path:
    """A server.properties with ``configs`` (values on one line each, as Kafka reads them)."""
    lines = [f"{name}={value}" for name, value in configs.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def secure_broker(tmp_path: Path) -> Iterator[Callable[..., SecureBroker]]:
    """Factory: ``secure_broker(configs, listeners="PLAINTEXT://127.0.0.1:0", ready=True,
    args=(), data_dir=None)``; every broker started is killed at teardown."""
    started: list[SecureBroker] = []

    def start(
        configs: Mapping[str, str] | None = None,
        *,
        listeners: str | None = "PLAINTEXT://127.0.0.1:0",
        ready: bool = True,
        args: tuple[str, ...] = (),
        data_dir: Path | None = None,
    ) -> SecureBroker:
        index = len(started)
        props: dict[str, str] = {}
        if listeners is not None:
            props["listeners"] = listeners
        props.update(configs or {})
        properties = write_properties(tmp_path / f"server-{index}.properties", props)
        broker = SecureBroker(
            properties,
            data_dir if data_dir is not None else tmp_path / f"data-{index}",
            tmp_path / f"broker-{index}.log",
            list(args),
        )
        started.append(broker)
        if ready:
            broker.wait_ready()
        return broker

    yield start
    for broker in started:
        broker.kill()


@pytest.fixture(scope="session")
def tls_material(tmp_path_factory: pytest.TempPathFactory) -> TlsMaterial:
    return make_tls_material(tmp_path_factory.mktemp("tls"))


@dataclass(frozen=True)
class TlsConfigs:
    """Broker and client TLS settings over one ``TlsMaterial``."""

    material: TlsMaterial

    def broker(
        self,
        *,
        store: str = "PKCS12",
        client_auth: str | None = None,
        listener: str | None = None,
    ) -> dict[str, str]:
        """The broker's ``ssl.*`` lines: keystore (PKCS12 or PEM), truststore = the test CA,
        ``ssl.client.auth`` when given; ``listener`` prefixes them all
        (``listener.name.<listener lower>.``)."""
        m = self.material
        if store == "PKCS12":
            lines = {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(m.broker_p12),
                "ssl.keystore.password": m.password,
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": str(m.ca_p12),
                "ssl.truststore.password": m.password,
            }
        elif store == "PEM":
            lines = {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(m.broker_keystore_pem),
                "ssl.key.password": m.password,
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(m.ca_pem),
            }
        else:
            raise ValueError(f"store must be PKCS12 or PEM, got {store!r}")
        if client_auth is not None:
            lines["ssl.client.auth"] = client_auth
        if listener is not None:
            prefix = f"listener.name.{listener.lower()}."
            lines = {prefix + name: value for name, value in lines.items()}
        return lines

    def confluent(self, *, mutual: bool = False, protocol: str = "SSL") -> dict[str, str]:
        """confluent-kafka / librdkafka settings (``security.protocol`` and ``ssl.*``)."""
        m = self.material
        conf = {"security.protocol": protocol, "ssl.ca.location": str(m.ca_pem)}
        if mutual:
            conf["ssl.certificate.location"] = str(m.client_cert_pem)
            conf["ssl.key.location"] = str(m.client_key_pem)
        return conf

    def kafka_python(self, *, mutual: bool = False, protocol: str = "SSL") -> dict[str, object]:
        """kafka-python keyword arguments."""
        m = self.material
        conf: dict[str, object] = {"security_protocol": protocol, "ssl_cafile": str(m.ca_pem)}
        if mutual:
            conf["ssl_certfile"] = str(m.client_cert_pem)
            conf["ssl_keyfile"] = str(m.client_key_pem)
        return conf

    def client_context(self, *, mutual: bool = False) -> ssl.SSLContext:
        """An ``ssl.SSLContext`` trusting the test CA (aiokafka's ``ssl_context``, raw sockets)."""
        m = self.material
        context = ssl.create_default_context(cafile=str(m.ca_pem))
        if mutual:
            context.load_cert_chain(str(m.client_cert_pem), str(m.client_key_pem))
        return context


@pytest.fixture(scope="session")
def tls(tls_material: TlsMaterial) -> TlsConfigs:
    return TlsConfigs(tls_material)


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper per test module; skips when ZooKeeper is not installed."""
    try:
        install = find_zookeeper()
    except ZooKeeperNotInstalled as exc:
        pytest.skip(str(exc))
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"), tick_time_ms=500,
                             fsync=False, own_session=False, install=install)
    server.start(timeout=120)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafka_ref() -> Path | None:
    return reference_script()
