"""Start a secured broker for the secured scenarios: the reference Apache Kafka 4.0 or kafkette,
both configured with :func:`compat_lib.security.security_properties` (Kafka's names).

Apache Kafka runs as one KRaft node (broker + controller) from ``kafka-ref home``; its SCRAM
users are written at format time (``kafka-storage.sh format --add-scram``), its controller
listener is SASL_PLAINTEXT with PLAIN (the broker logs in to its own controller as the super
user ``admin``, as Kafka's KRaft SASL set-up does). kafkette gets the same lines in a
``server.properties`` (``kafkette serve --config-file``); its SCRAM users are added with
AlterUserScramCredentials (what ``kafka-configs.sh --alter --add-config 'SCRAM-SHA-256=[...]'``
sends), since it has no format step. Both then get the suite's ACLs through CreateAcls,
sent by the super user over SASL_SSL.

Run by hand to get a secured reference Kafka for experiments (one JVM; Ctrl-C or SIGTERM stops it)::

    python compat-tests/compat_lib/secured_broker.py kafka /tmp/secured-kafka
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: compat-tests/ and the repository root
    sys.path[:0] = [str(parent) for parent in Path(__file__).resolve().parents[1:3]]

from compat_lib import broker_process
from compat_lib.security import (
    ACLS,
    ADMIN,
    ALICE_PREFIX,
    LISTENER_PROTOCOLS,
    MTLS,
    OTHER_TOPIC,
    PLAIN_USERS,
    PLAINTEXT,
    PRIVATE_TOPIC,
    SASL_SSL,
    SCRAM_ITERATIONS,
    SCRAM_MECHANISMS,
    SCRAM_USERS,
    SSL,
    ClientSecurity,
    TlsFiles,
    plain_jaas,
    security_properties,
)
from tests.reference_kafka import reference_script

HERE = Path(__file__).resolve().parent.parent  # compat-tests/
REPO = HERE.parent
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
FORMAT_TIMEOUT_S = 120.0
ADMIN_TIMEOUT_S = 30.0
BROKERS = ("kafkette", "kafka")


class SecuredBrokerError(Exception):
    """The secured broker could not be started or set up; the message says why."""


@dataclass
class SecuredBroker:
    """A running secured broker: where each listener is, the TLS files, how to stop it."""

    kind: str  # "kafka" or "kafkette"
    label: str
    ports: dict[str, int]  # listener name -> port on 127.0.0.1
    tls: TlsFiles
    proc: subprocess.Popen
    log_path: Path
    workdir: Path
    notes: list[str] = field(default_factory=list)

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"

    def security(
        self,
        listener: str,
        mechanism: str | None = None,
        user: str | None = None,
        password: str | None = None,
    ) -> ClientSecurity:
        """A client's settings for ``listener`` (and, on SASL_SSL, ``mechanism`` as ``user``
        with the suite's password for that user and mechanism unless ``password`` is given)."""
        protocol = LISTENER_PROTOCOLS[listener]
        if protocol != "SASL_SSL":
            return ClientSecurity(protocol, self.tls, client_cert=listener == MTLS)
        assert mechanism is not None and user is not None
        users = PLAIN_USERS if mechanism == "PLAIN" else SCRAM_USERS
        return ClientSecurity(
            protocol, self.tls, False, mechanism, user, password or users[user]
        )

    def admin_security(self) -> ClientSecurity:
        return self.security(SASL_SSL, "PLAIN", ADMIN[0])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, lines: int = 5) -> str:
        return broker_process.tail(self.log_path, lines)

    def stop(self) -> int | None:
        """SIGTERM the broker's process group, wait, SIGKILL if needed; the exit code."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports free on 127.0.0.1 a moment ago."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def kafka_home() -> Path | str:
    """KAFKA_HOME of the reference Kafka 4.0, or the reason it is not here."""
    if shutil.which("java") is None:
        return "java is not installed (the reference Kafka runs on the JVM)"
    script = reference_script()
    if script is None:
        return "reference Kafka not found: set KAFKETTE_KAFKA_REF to shared/reference-kafka"
    done = subprocess.run(
        [str(script), "home"], capture_output=True, text=True, timeout=180, check=False
    )
    if done.returncode != 0:
        return f"kafka-ref home failed: {done.stderr.strip()[-300:]}"
    return Path(done.stdout.strip().splitlines()[-1])


def _tls(workdir: Path) -> TlsFiles:
    from kafkette.testing_tls import make_tls_material

    return TlsFiles.of(make_tls_material(workdir / "tls"))


def _write_properties(path: Path, props: dict[str, str]) -> None:
    # Values are written as they are: a JAAS config's quotes and ';' need no escaping, and
    # none of our values holds a backslash or a line break.
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def _wait_listening(proc: subprocess.Popen, ports: list[int], log: Path, deadline: float) -> None:
    for port in ports:
        while True:
            if proc.poll() is not None:
                raise SecuredBrokerError(
                    f"broker exited with {proc.returncode} while starting: "
                    f"{broker_process.tail(log)}"
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SecuredBrokerError(
                        f"nothing listens on 127.0.0.1:{port} after {START_TIMEOUT_S:.0f}s: "
                        f"{broker_process.tail(log)}"
                    ) from None
                time.sleep(0.5)


def start_kafka(workdir: Path) -> SecuredBroker:
    """The reference Kafka 4.0, secured (one JVM, its own process group)."""
    home = kafka_home()
    if isinstance(home, str):
        raise SecuredBrokerError(home)
    workdir.mkdir(parents=True, exist_ok=True)
    tls = _tls(workdir)
    *listener_ports, controller_port = free_ports(5)
    ports = dict(zip((PLAINTEXT, SSL, MTLS, SASL_SSL), listener_ports, strict=True))
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": str(workdir / "data"),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        **security_properties(ports, tls.ca_pem.parent, tls.password),
    }
    props["listeners"] += f",CONTROLLER://127.0.0.1:{controller_port}"
    props["listener.security.protocol.map"] += ",CONTROLLER:SASL_PLAINTEXT"
    props |= {
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": plain_jaas({ADMIN[0]: ADMIN[1]}),
    }
    config = workdir / "server.properties"
    _write_properties(config, props)
    env = {**os.environ, "LOG_DIR": str(workdir / "logs"), "KAFKA_HEAP_OPTS": "-Xmx256m"}
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    cluster_id = "k" + cluster_id[1:]  # an id starting with '-' would read as an option
    command = [str(home / "bin" / "kafka-storage.sh"), "format", "--cluster-id", cluster_id,
               "--config", str(config)]
    for user, password in SCRAM_USERS.items():
        for mechanism in SCRAM_MECHANISMS:
            command += ["--add-scram",
                        f"{mechanism}=[name={user},password={password},"
                        f"iterations={SCRAM_ITERATIONS}]"]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=FORMAT_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise SecuredBrokerError(
            f"kafka-storage.sh format failed: {(done.stderr + done.stdout).strip()[-600:]}"
        )
    env["KAFKA_HEAP_OPTS"] = os.environ.get("KAFKA_HEAP_OPTS", "-Xms256m -Xmx768m")
    log_path = workdir / "kafka.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [str(home / "bin" / "kafka-server-start.sh"), str(config)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            start_new_session=True,
        )
    broker = SecuredBroker("kafka", "Apache Kafka 4.0 (secured)", ports, tls, proc, log_path,
                           workdir)
    _finish(broker, add_scram=False)
    return broker


def start_kafkette(workdir: Path, extra: dict[str, str] | None = None) -> SecuredBroker:
    """kafkette, secured with the same lines (plus ``extra``) in a server.properties."""
    workdir.mkdir(parents=True, exist_ok=True)
    tls = _tls(workdir)
    ports = dict(zip((PLAINTEXT, SSL, MTLS, SASL_SSL), free_ports(4), strict=True))
    props = {
        "group.initial.rebalance.delay.ms": "0",
        **security_properties(ports, tls.ca_pem.parent, tls.password),
        **(extra or {}),
    }
    config = workdir / "server.properties"
    _write_properties(config, props)
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    log_path = workdir / "kafkette.log"
    cmd = [sys.executable, "-m", "kafkette", "serve", "--data-dir", str(data),
           "--config-file", str(config)]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    broker = SecuredBroker("kafkette", f"{broker_process.kafkette_version()} (secured)", ports,
                           tls, proc, log_path, workdir)
    _finish(broker, add_scram=True)
    return broker


def start(kind: str, workdir: Path) -> SecuredBroker:
    if kind == "kafka":
        return start_kafka(workdir)
    if kind == "kafkette":
        return start_kafkette(workdir)
    raise SecuredBrokerError(f"unknown secured broker {kind!r}; know {', '.join(BROKERS)}")


def _finish(broker: SecuredBroker, add_scram: bool) -> None:
    """Wait for every listener, then (as the super user) SCRAM users, ACLs and the fixed
    topics; stops the broker if any of it fails."""
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        _wait_listening(broker.proc, list(broker.ports.values()), broker.log_path, deadline)
        admin = admin_client(broker)
        _until_answers(admin, broker, deadline)
        if add_scram:
            add_scram_users(admin, SCRAM_USERS)
        create_acls(admin)
        for name in (PRIVATE_TOPIC, OTHER_TOPIC):
            create_topic(admin, name)
    except BaseException:
        broker.stop()
        raise


def admin_client(broker: SecuredBroker):
    """A confluent-kafka AdminClient logged in as the super user over SASL_SSL."""
    from confluent_kafka.admin import AdminClient

    conf = {"bootstrap.servers": broker.bootstrap(SASL_SSL), "socket.timeout.ms": 10_000}
    return AdminClient(conf | broker.admin_security().librdkafka())


def _until_answers(admin, broker: SecuredBroker, deadline: float) -> None:
    from confluent_kafka import KafkaException

    while True:
        try:
            admin.list_topics(timeout=5)
            return
        except KafkaException as exc:
            if not broker.alive() or time.monotonic() > deadline:
                raise SecuredBrokerError(
                    f"the super user gets no metadata over SASL_SSL: {exc}; "
                    f"{broker.log_tail()}"
                ) from None
            time.sleep(0.5)


def add_scram_users(admin, users: dict[str, str]) -> None:
    """AlterUserScramCredentials: every user gets a credential for both SCRAM mechanisms, one
    request per mechanism (Kafka refuses a user altered twice in one request:
    DUPLICATE_RESOURCE)."""
    from confluent_kafka.admin import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    for mechanism in SCRAM_MECHANISMS:
        info = ScramCredentialInfo(getattr(ScramMechanism, mechanism.replace("-", "_")),
                                   SCRAM_ITERATIONS)
        upserts = [UserScramCredentialUpsertion(user, info, password.encode())
                   for user, password in users.items()]
        futures = admin.alter_user_scram_credentials(upserts, request_timeout=ADMIN_TIMEOUT_S)
        for user, future in futures.items():
            try:
                future.result(timeout=ADMIN_TIMEOUT_S)
            except Exception as exc:
                raise SecuredBrokerError(
                    f"AlterUserScramCredentials {mechanism} for {user}: {exc}"
                ) from None


def create_acls(admin) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    bindings = [
        AclBinding(
            getattr(ResourceType, acl.resource),
            acl.name,
            getattr(ResourcePatternType, acl.pattern),
            acl.principal,
            acl.host,
            getattr(AclOperation, acl.operation),
            getattr(AclPermissionType, acl.permission),
        )
        for acl in ACLS
    ]
    futures = admin.create_acls(bindings, request_timeout=ADMIN_TIMEOUT_S)
    for binding, future in futures.items():
        try:
            future.result(timeout=ADMIN_TIMEOUT_S)
        except Exception as exc:
            raise SecuredBrokerError(f"CreateAcls {binding}: {exc}") from None


def create_topic(admin, name: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import NewTopic

    future = admin.create_topics([NewTopic(name, partitions, 1)],
                                 request_timeout=ADMIN_TIMEOUT_S)[name]
    try:
        future.result(timeout=ADMIN_TIMEOUT_S)
    except Exception as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise SecuredBrokerError(f"CreateTopics {name}: {exc}") from None


def admin_create_topic(broker: SecuredBroker, name: str, partitions: int = 1) -> None:
    """Create ``name`` as the super user (scenarios create their topics this way, so that
    kcat, which has no admin API, can use them too)."""
    create_topic(admin_client(broker), name, partitions)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in BROKERS:
        print(f"usage: secured_broker.py {{{'|'.join(BROKERS)}}} WORKDIR", file=sys.stderr)
        return 2
    # SIGTERM too (a background job ignores SIGINT): stop the broker on the way out.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    broker = start(argv[0], Path(argv[1]))
    print(f"{broker.label} ready (log {broker.log_path}):")
    for name, port in broker.ports.items():
        print(f"  {name}: 127.0.0.1:{port}")
    print(f"  CA: {broker.tls.ca_pem}; super user {ADMIN[0]}/{ADMIN[1]} (PLAIN on SASL_SSL)")
    print(f"  alice's topics: {ALICE_PREFIX}*   (Ctrl-C stops the broker)")
    try:
        while broker.alive():
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        print(f"stopped, exit code {broker.stop()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
