"""The tools that go through kafkette's own wire client (tools/wire_client.py): over SASL as
well as PLAINTEXT, with Kafka's ``--bootstrap-server`` and ``--command-config``, and with one
line (never a traceback, never a socket left open) for input they cannot use: numbers past
their wire field, TLS files that do not load, a mechanism the client lacks, a URL that is not
a schema registry, an end of input at a question.

The SASL checks run on test_users.py's kafkette with a SCRAM listener (a broker of this
module's own); the rest need no broker, or only the session's kafkette.
"""

from __future__ import annotations

import http.server
import json
import os
import pty
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.tools.test_groups import commit, committed
from tests.tools.test_users import ok, scram_kafkette  # noqa: F401  (the SCRAM broker fixture)

# Python reports a socket collected while open on stderr with this: the tools' one-line
# stderr must not grow such a line.
WARN_UNCLOSED = {"PYTHONWARNINGS": "always::ResourceWarning"}
NOBODY = ("-b", "127.0.0.1:1")  # nothing listens: tools that fail before connecting


def endpoints(broker) -> tuple[str, str]:
    return (
        str(broker.broker.endpoint_for("PLAINTEXT")),
        str(broker.broker.endpoint_for("SASL_PLAINTEXT")),
    )


def scram(user: str, password: str) -> tuple[str, ...]:
    return (
        "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=SCRAM-SHA-256",
        "-X", f"sasl.username={user}", "-X", f"sasl.password={password}",
    )  # fmt: skip


def one_line(done: subprocess.CompletedProcess[str], code: int, start: str) -> None:
    assert (done.returncode, done.stdout) == (code, ""), done.stderr
    assert done.stderr.startswith(start), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


# --- secured clusters ----------------------------------------------------------------------------


def test_wire_tools_log_in_over_sasl(cli, scram_kafkette, unique_topic, tmp_path: Path) -> None:  # noqa: F811
    """transactions, metadata --api-versions and groups delete-offsets over a SCRAM listener,
    with -X settings and with Kafka's --command-config file; no socket left unclosed."""
    plain, sasl = endpoints(scram_kafkette)
    user, topic, group, txn = (unique_topic(p) for p in ("wire", "wire-t", "wire-g", "wire-x"))
    ok(cli("users", "set", user, "--password", "wire-secret", "-b", plain))
    ok(cli("topics", "create", topic, "--partitions", "2", "-b", plain))
    commit(plain, group, {(topic, 0): 1, (topic, 1): 1})
    producer = Producer({"bootstrap.servers": plain, "transactional.id": txn, "log_level": 0})
    producer.init_transactions(30)
    login = ("-b", sasl, *scram(user, "wire-secret"), "--timeout", "20")

    listed = json.loads(ok(cli("transactions", "list", "--json", *login, env=WARN_UNCLOSED)))
    assert [r["state"] for r in listed if r["transactional_id"] == txn] == ["Empty"]
    versions = cli("metadata", "--api-versions", *login, env=WARN_UNCLOSED)
    assert (versions.returncode, versions.stderr) == (0, "")
    assert (
        versions.stdout.startswith(f"{sasl} (id: ") and "SaslAuthenticate(36): " in versions.stdout
    )
    deleted = cli("groups", "delete-offsets", group, "--topic", f"{topic}:0", *login,
                  env=WARN_UNCLOSED)  # fmt: skip
    assert (deleted.returncode, deleted.stderr) == (0, "")
    assert deleted.stdout.splitlines()[1].split() == [group, topic, "0", "Successful"]
    assert committed(plain, group, topic, 2) == [None, 1]

    # Kafka's admin file: SASL settings and a JAAS line, read as Kafka's scripts read them.
    config = tmp_path / "admin.properties"
    config.write_text(
        "# kafka-*.sh --command-config admin.properties\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism : SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{user}" password="wire-secret";\n'
    )
    server = ("--bootstrap-server", sasl, "--command-config", str(config))
    again = json.loads(ok(cli("transactions", "list", "--json", *server)))
    assert [r["transactional_id"] for r in again if r["transactional_id"] == txn] == [txn]
    assert json.loads(ok(cli("topics", "list", "--json", *server)))  # confluent-kafka too
    producer.flush(5)


def test_a_refused_login_is_one_line_and_leaves_no_socket(cli, scram_kafkette) -> None:  # noqa: F811
    plain, sasl = endpoints(scram_kafkette)
    for args in (("quotas", "describe"), ("transactions", "list")):
        done = cli(*args, "-b", sasl, *scram("nobody", "wrong"), "--timeout", "20",
                   env=WARN_UNCLOSED)  # fmt: skip
        one_line(done, 1, "kafkette: SASL login as 'nobody' refused by ")
    # A refusal after the login: acls list's client is closed too.
    refused = cli("acls", "list", "-b", plain, env=WARN_UNCLOSED)
    one_line(refused, 1, "kafkette: could not list ACLs: the broker has no authorizer")


def test_a_mechanism_the_wire_client_lacks_is_exit_1_for_every_tool(cli) -> None:
    gssapi = ("-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=GSSAPI")
    line = "kafkette: kafkette's own client cannot log in with sasl.mechanism=GSSAPI: "
    for args in (
        ("transactions", "list"),
        ("metadata", "--api-versions"),
        ("quotas", "describe"),
        ("acls", "delete", "--delegation-token", "t", "--force"),
    ):
        one_line(cli(*args, *NOBODY, *gssapi), 1, line)


def test_tls_files_that_do_not_load_are_a_usage_error(cli, tmp_path: Path) -> None:
    from kafkette.testing_tls import make_tls_material

    tls = make_tls_material(tmp_path / "tls")
    ssl = ("-X", "security.protocol=SSL")
    missing = cli("quotas", "describe", *NOBODY, *ssl, "-X", f"ssl.ca.location={tmp_path}/no.pem")
    one_line(missing, 2, f"kafkette: -X ssl.ca.location {tmp_path}/no.pem: No such file")
    wrong_key = cli(
        "transactions", "list", *NOBODY, *ssl, "-X", f"ssl.ca.location={tls.ca_pem}",
        "-X", f"ssl.certificate.location={tls.client_cert_pem}",
        "-X", f"ssl.key.location={tls.client_keystore_pem}", "-X", "ssl.key.password=wrong",
    )  # fmt: skip
    one_line(wrong_key, 2, "kafkette: -X ssl.certificate.location=")
    assert "a wrong -X ssl.key.password" in wrong_key.stderr
    # A directory of CA certificates is what librdkafka takes too: the tool goes on to connect.
    directory = cli(
        "metadata", "--api-versions", *NOBODY, *ssl, "-X", f"ssl.ca.location={tmp_path}"
    )
    one_line(directory, 3, "kafkette: no broker answered at 127.0.0.1:1")
    registry = ("schemas", "list", "-r", "https://127.0.0.1:1")
    one_line(cli(*registry, "--ca-file", str(tmp_path / "no.pem")), 2, "kafkette: --ca-file ")
    one_line(cli(*registry, "--ca-file", str(tmp_path)), 3, "kafkette: no schema registry answered")


# --- numbers past their field --------------------------------------------------------------------


def test_numbers_that_do_not_fit_their_field_are_usage_errors(cli, kafkette_bootstrap) -> None:
    abort = ("transactions", "abort", "--topic", "t", "--partition", "0")
    cases = [
        ((*abort, "--producer-id", "1", "--producer-epoch", "40000", "--coordinator-epoch", "0"),
         "argument --producer-epoch: 40000 does not fit: Kafka carries it as an int16"),
        (("transactions", "list", "--producer-id", "99999999999999999999"),
         "argument --producer-id: 99999999999999999999 does not fit"),
        (("transactions", "list", "--duration-filter", str(1 << 63)),
         "argument --duration-filter: 9223372036854775808 does not fit"),
        (("elect-leaders", "--election-type", "preferred", "--topic", "t", "--partition", "1.5"),
         "argument --partition: '1.5' is not a whole number"),
    ]  # fmt: skip
    for args, text in cases:
        done = cli(*args, *NOBODY)
        assert (done.returncode, done.stdout) == (2, ""), (args, done.stderr)
        assert done.stderr.startswith("usage: ") and text in done.stderr, (args, done.stderr)
    # One that only the request's encoding meets (a JSON file's number): one line, exit 2.
    plan = {"version": 1, "partitions": [{"topic": "t", "partition": 1 << 40, "replicas": [1]}]}
    cancelled = cli(
        "reassign", "cancel", "--reassignment-json-file", "-", "-b", kafkette_bootstrap,
        input=json.dumps(plan),
    )  # fmt: skip
    one_line(cancelled, 2, "kafkette: a value does not fit the request (value 1099511627776")


# --- Kafka's option names ------------------------------------------------------------------------


def test_bootstrap_server_command_config_and_reassign_timeout_in_ms(cli, tmp_path: Path) -> None:
    one_line(cli("topics", "list", "--bootstrap-server", "127.0.0.1:1"), 3,
             "kafkette: no broker answered at 127.0.0.1:1: ")  # fmt: skip
    one_line(cli("topics", "list", *NOBODY, "--command-config", str(tmp_path / "none")), 2,
             f"kafkette: --command-config {tmp_path}/none: No such file")  # fmt: skip
    # kafka-reassign-partitions.sh's --timeout is milliseconds: so is ours.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # takes connections, never answers
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        done = cli("reassign", "list", "-b", address, "--timeout", "1500", timeout=60)
    assert time.monotonic() - started < 30
    one_line(done, 3, f"kafkette: the broker at {address} did not answer within 1.5 s")


# --- a URL that is not a schema registry ---------------------------------------------------------


class _Answers(http.server.BaseHTTPRequestHandler):
    """200 with a body that no registry answers: the web console's page, or a JSON object."""

    def do_GET(self) -> None:
        body = b"<html><body>kafkette console</body></html>"
        if self.path.startswith("/json"):
            body = b'{"subjects": "no"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def not_a_registry() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_url_that_is_not_a_schema_registry_is_exit_1(cli, not_a_registry: str) -> None:
    html = cli("schemas", "list", "-r", not_a_registry)
    one_line(html, 1, f"kafkette: {not_a_registry} is not a schema registry: GET /subjects "
                      "answered '<html><body>kafkette console</body></html>'")  # fmt: skip
    other = cli("schemas", "list", "-r", f"{not_a_registry}/json")
    one_line(other, 1, f"kafkette: {not_a_registry}/json is not a schema registry: GET "
                       '/subjects answered JSON dict {"subjects": "no"} where a registry '
                       "answers a JSON array")  # fmt: skip
    config = cli("schemas", "config", "-r", f"{not_a_registry}/json")
    one_line(config, 1, f"kafkette: {not_a_registry}/json is not a schema registry: GET /config")


# --- acls delete's question ----------------------------------------------------------------------


def ask_on_a_terminal(answer: bytes) -> tuple[int, str, str]:
    """``acls delete`` without --force with a terminal as stdin that types ``answer``."""
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "kafkette", "acls", "delete", "--topic", "t", *NOBODY],
            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, **WARN_UNCLOSED},
        )  # fmt: skip
        os.close(follower)
        follower = -1
        deadline = time.monotonic() + 60
        while child.poll() is None and not select.select([child.stderr], [], [], 0.1)[0]:
            assert time.monotonic() < deadline, "no question asked"
        os.write(leader, answer)  # the terminal's line discipline reads it as typed
        out, err = child.communicate(timeout=60)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return child.returncode, out.decode(), err.decode()


def test_acls_delete_takes_no_and_an_end_of_input_as_no(tmp_path: Path) -> None:
    question = (
        "Are you sure you want to delete all ACLs for resource filter `ResourcePattern("
        "resourceType=TOPIC, name=t, patternType=LITERAL)`? (y/n)\n"
    )
    assert ask_on_a_terminal(b"n\n") == (0, "", question)
    assert ask_on_a_terminal(b"\x04") == (0, "", question)  # Ctrl-D
