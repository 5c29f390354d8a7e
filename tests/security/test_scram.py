"""SCRAM-SHA-256/512: credentials managed with AlterUserScramCredentials, kept in the data dir.

The broker has a SASL_PLAINTEXT listener offering both SCRAM mechanisms and a PLAINTEXT
listener for the administrator (no authorizer: it may create the first users, as
``kafka-storage format --add-scram`` would on Kafka). Users are created with
confluent-kafka's AdminClient and with the reference distribution's kafka-configs.sh;
confluent-kafka, kafka-python and aiokafka then authenticate with them. The errors of
the two admin APIs, a wrong password, and the credentials surviving a restart (salted,
no password on disk) are checked as clients see them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka import KafkaProducer

from kafkette.broker.embedded import EmbeddedBroker
from kafkette.broker.server import StartupError
from tests.security import sasl_support as sasl

no_internal_errors = sasl.no_internal_errors  # autouse: no connection closed by a bug

MECHANISMS = "SCRAM-SHA-256,SCRAM-SHA-512"
LISTENERS = "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"
INVALID = "Authentication failed during authentication due to invalid credentials"


def start_scram_broker(data_dir: Path) -> EmbeddedBroker:
    return EmbeddedBroker.start(
        data_dir, sasl.sasl_broker_configs(MECHANISMS, listeners=LISTENERS)
    )


@pytest.fixture(scope="module")
def scram_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedBroker]:
    with start_scram_broker(tmp_path_factory.mktemp("scram")) as broker:
        yield broker


def endpoint(broker: EmbeddedBroker, listener: str) -> str:
    return str(broker.broker.endpoint_for(listener))


def admin_conf(broker: EmbeddedBroker) -> dict:
    return {"bootstrap.servers": endpoint(broker, "PLAINTEXT")}


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_authenticates_with_a_user_made_by_the_admin_api(
    scram_broker, mechanism
) -> None:
    user = sasl.unique("ck")
    sasl.set_scram_user(admin_conf(scram_broker), user, "pw-" + user, mechanism, iterations=8192)
    conf = sasl.confluent_sasl(endpoint(scram_broker, "SASL_PLAINTEXT"), mechanism, user,
                               "pw-" + user)
    assert len(sasl.confluent_roundtrip(conf, sasl.unique("scram"), count=3)) == 3


def test_kafka_python_and_aiokafka_authenticate_with_scram(scram_broker) -> None:
    bootstrap = endpoint(scram_broker, "SASL_PLAINTEXT")
    sasl.set_scram_user(admin_conf(scram_broker), "py-user", "py-pw", "SCRAM-SHA-512")
    sasl.set_scram_user(admin_conf(scram_broker), "aio-user", "aio-pw", "SCRAM-SHA-256")
    topic = sasl.unique("scram-py")
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="py-user",
        sasl_plain_password="py-pw", request_timeout_ms=20_000,
    )
    try:
        assert producer.send(topic, b"kafka-python").get(timeout=20).offset == 0
    finally:
        producer.close(timeout=5)

    async def aiokafka_side() -> int:
        aio = AIOKafkaProducer(
            bootstrap_servers=bootstrap, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="aio-user",
            sasl_plain_password="aio-pw",
        )
        await aio.start()
        try:
            return (await aio.send_and_wait(topic, b"aiokafka")).offset
        finally:
            await aio.stop()

    assert asyncio.run(asyncio.wait_for(aiokafka_side(), 30)) == 1


def test_a_wrong_password_an_unknown_user_or_mechanism_are_refused(scram_broker) -> None:
    bootstrap = endpoint(scram_broker, "SASL_PLAINTEXT")
    sasl.set_scram_user(admin_conf(scram_broker), "carl", "right", "SCRAM-SHA-256")
    for user, password, mechanism in [
        ("carl", "wrong", "SCRAM-SHA-256"),
        ("nobody", "x", "SCRAM-SHA-256"),
        ("carl", "right", "SCRAM-SHA-512"),  # carl has no SCRAM-SHA-512 credential
    ]:
        error = sasl.confluent_failure(sasl.confluent_sasl(bootstrap, mechanism, user, password))
        assert f"{INVALID} with SASL mechanism {mechanism}" in error, error
    error = sasl.confluent_failure(sasl.confluent_sasl(bootstrap, "PLAIN", "carl", "right"))
    assert "PLAIN" in error and "SCRAM-SHA-256" in error, error  # the enabled list


def test_the_admin_apis_answer_kafkas_errors(scram_broker) -> None:
    admin = AdminClient(admin_conf(scram_broker))
    user = sasl.unique("adm")

    def alter(*changes):
        futures = admin.alter_user_scram_credentials(list(changes))
        outcome = {}
        for name, future in futures.items():
            try:
                future.result(timeout=20)
                outcome[name] = None
            except KafkaException as exc:
                outcome[name] = exc.args[0]
        return outcome

    def upsert(name, iterations, mechanism=ScramMechanism.SCRAM_SHA_256):
        return UserScramCredentialUpsertion(name, ScramCredentialInfo(mechanism, iterations), b"pw")

    too_few = alter(upsert(user, 4095))[user]
    # UNACCEPTABLE_CREDENTIAL, Kafka's bounds 4096..16384
    assert too_few.code() == 93 and "Too few iterations" in too_few.str()
    too_many = alter(upsert(user, 16385))[user]
    assert too_many.code() == 93 and "Too many iterations" in too_many.str()
    missing = alter(UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512))[user]
    assert missing.code() == 91  # RESOURCE_NOT_FOUND
    assert alter(upsert(user, 4096), upsert(user + "-2", 16384, ScramMechanism.SCRAM_SHA_512)) == {
        user: None, user + "-2": None,
    }

    described = admin.describe_user_scram_credentials([user, user + "-2"])
    infos = {name: f.result(timeout=20).scram_credential_infos for name, f in described.items()}
    assert [(i.mechanism, i.iterations) for i in infos[user]] == [
        (ScramMechanism.SCRAM_SHA_256, 4096)
    ]
    assert [(i.mechanism, i.iterations) for i in infos[user + "-2"]] == [
        (ScramMechanism.SCRAM_SHA_512, 16384)
    ]
    everyone = admin.describe_user_scram_credentials().result(timeout=20)
    assert {user, user + "-2"} <= set(everyone)
    with pytest.raises(KafkaException) as unknown:
        admin.describe_user_scram_credentials(["no-such-user"])["no-such-user"].result(timeout=20)
    assert unknown.value.args[0].code() == 91
    assert "Attempt to describe a user credential that does not exist: no-such-user" in str(
        unknown.value
    )

    assert alter(UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)) == {user: None}
    with pytest.raises(KafkaException):
        admin.describe_user_scram_credentials([user])[user].result(timeout=20)


def test_credentials_survive_a_restart_and_no_password_is_stored(tmp_path) -> None:
    password = "durable-password-123"
    with start_scram_broker(tmp_path) as broker:
        sasl.set_scram_user(admin_conf(broker), "dora", password, "SCRAM-SHA-512")
    stored = (tmp_path / "scram-credentials.json").read_text()
    assert password not in stored
    entry = json.loads(stored)["users"]["dora"]["SCRAM-SHA-512"]
    assert entry.startswith("salt=") and "stored_key=" in entry
    assert entry.endswith("iterations=4096")
    assert oct(os.stat(tmp_path / "scram-credentials.json").st_mode & 0o777) == "0o600"
    with start_scram_broker(tmp_path) as broker:
        conf = sasl.confluent_sasl(endpoint(broker, "SASL_PLAINTEXT"), "SCRAM-SHA-512", "dora",
                                   password)
        assert len(sasl.confluent_roundtrip(conf, "after-restart", count=2)) == 2


def test_a_damaged_credentials_file_stops_the_start(tmp_path) -> None:
    (tmp_path / "scram-credentials.json").write_text('{"users": {"eve": {"SCRAM-SHA-256": 7}}')
    with pytest.raises(StartupError, match="SCRAM credentials"):
        start_scram_broker(tmp_path)


def test_kafka_configs_sh_manages_scram_users(scram_broker, kafka_ref) -> None:
    script = kafka_ref
    if shutil.which("java") is None or script is None:
        pytest.skip("kafka-configs.sh needs Java and the reference Kafka (KAFKETTE_KAFKA_REF)")
    admin_bootstrap = endpoint(scram_broker, "PLAINTEXT")

    def configs(*args: str, fails: bool = False) -> str:
        done = subprocess.run(
            [str(script), "bin", "kafka-configs.sh", "--bootstrap-server", admin_bootstrap,
             *args, "--entity-type", "users", "--entity-name", "kcuser"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "KAFKA_HEAP_OPTS": "-Xmx256m"},
        )
        assert (done.returncode != 0) == fails, done.stderr[-2000:]
        return done.stdout + done.stderr

    # As on Kafka 4.0: one request may not name a user twice (both mechanisms at once).
    both = "SCRAM-SHA-256=[iterations=8192,password=kc-secret],SCRAM-SHA-512=[password=kc-512]"
    assert "DuplicateResourceException" in configs("--alter", "--add-config", both, fails=True)
    configs("--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=kc-secret]")
    described = configs("--describe")
    assert "user-principal 'kcuser' are SCRAM-SHA-256=iterations=8192" in described
    conf = sasl.confluent_sasl(endpoint(scram_broker, "SASL_PLAINTEXT"), "SCRAM-SHA-256",
                               "kcuser", "kc-secret")
    assert len(sasl.confluent_roundtrip(conf, sasl.unique("kc"), count=1)) == 1
    configs("--alter", "--delete-config", "SCRAM-SHA-256")
    admin = AdminClient(admin_conf(scram_broker))
    with pytest.raises(KafkaException, match="does not exist: kcuser"):
        admin.describe_user_scram_credentials(["kcuser"])["kcuser"].result(timeout=20)


def test_the_credentials_file_is_never_readable_by_others(tmp_path, monkeypatch) -> None:
    """The temporary file is created 0600 (a leftover one narrowed first), not made 0600
    after the rename: no moment where another user could read the keys."""
    from kafkette.broker.security.sasl import scram_formulas as sf
    from kafkette.broker.security.sasl.scram_store import FILE_NAME, ScramCredentialStore

    leftover = tmp_path / (FILE_NAME + ".tmp")
    leftover.write_text("old")
    leftover.chmod(0o644)
    modes: list[int] = []
    real_replace = os.replace

    def replace(source, target) -> None:
        modes.append(os.stat(source).st_mode & 0o777)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    store = ScramCredentialStore(tmp_path / FILE_NAME)
    credential = sf.credential_from_salted("SCRAM-SHA-256", b"s" * 32, b"salt", 4096)
    store.write({"frank": {"SCRAM-SHA-256": credential}})
    assert modes == [0o600]
    assert os.stat(tmp_path / FILE_NAME).st_mode & 0o777 == 0o600


def test_a_store_that_cannot_be_written_answers_each_user(tmp_path, caplog) -> None:
    """The credentials file cannot be replaced (its temporary name is taken by a
    directory): each user gets UNKNOWN_SERVER_ERROR with a message, one log line; the
    connection and the broker carry on, and the next change goes through. (A raw
    kafka-python request: confluent-kafka's future never completes on error -1.)"""
    from kafka.protocol.admin import AlterUserScramCredentialsRequest as Alter

    from kafkette.broker.security.sasl.scram_store import FILE_NAME

    def upsert(name: str):
        return Alter.ScramCredentialUpsertion(
            name=name, mechanism=1, iterations=4096, salt=b"salt-" + name.encode(),
            salted_password=b"\x01" * 32,
        )

    with start_scram_broker(tmp_path) as broker:
        blocker = tmp_path / (FILE_NAME + ".tmp")
        blocker.mkdir()
        with sasl.RawSasl(endpoint(broker, "PLAINTEXT")) as raw:
            both = Alter(deletions=[], upsertions=[upsert("gina"), upsert("hank")])
            failed = raw.request(both, 0)
            assert sorted((r.user, r.error_code) for r in failed.results) == [
                ("gina", -1), ("hank", -1)
            ]
            assert all("could not be written" in r.error_message for r in failed.results)
            blocker.rmdir()
            done = raw.request(Alter(deletions=[], upsertions=[upsert("gina")]), 0)
            assert [(r.user, r.error_code) for r in done.results] == [("gina", 0)]
        lines = [r for r in caplog.records if "SCRAM credentials not changed" in r.getMessage()]
        assert len(lines) == 1
        stored = json.loads((tmp_path / FILE_NAME).read_text())["users"]
        assert list(stored) == ["gina"]


def test_duplicates_are_found_before_validation_and_the_mechanism_before_the_name(
    scram_broker,
) -> None:
    """Kafka's ScramControlManager: a user named twice is DUPLICATE_RESOURCE even when its
    first entry would fail validation; an unknown mechanism is told before an empty name."""
    from kafka.protocol.admin import AlterUserScramCredentialsRequest as Alter

    user = sasl.unique("dup")
    delete_missing = Alter.ScramCredentialDeletion(name=user, mechanism=1)  # no such credential
    upsert = Alter.ScramCredentialUpsertion(
        name=user, mechanism=1, iterations=4096, salt=b"salt", salted_password=b"\x02" * 32
    )
    nameless = Alter.ScramCredentialUpsertion(
        name="", mechanism=0, iterations=4096, salt=b"salt", salted_password=b"\x02" * 32
    )
    with sasl.RawSasl(endpoint(scram_broker, "PLAINTEXT")) as raw:
        answer = raw.request(Alter(deletions=[delete_missing], upsertions=[upsert, nameless]), 0)
    assert sorted((r.user, r.error_code, r.error_message) for r in answer.results) == [
        ("", 33, "Unknown SCRAM mechanism"),  # UNSUPPORTED_SASL_MECHANISM
        (user, 92, "A user credential cannot be altered twice in the same request"),
    ]


def test_a_huge_user_name_is_clipped_in_the_log(scram_broker, caplog) -> None:
    caplog.set_level(logging.INFO, logger="kafkette.sasl")
    with sasl.RawSasl(endpoint(scram_broker, "SASL_PLAINTEXT")) as raw:
        assert raw.handshake("SCRAM-SHA-256").error_code == 0
        refused = raw.authenticate(b"n,,n=" + b"U" * 20_000 + b",r=nonce")
        assert refused.error_code == 58
        assert raw.closed_by_broker()
    lines = [r.getMessage() for r in caplog.records if "UUUU" in r.getMessage()]
    assert lines and all(len(line) < 400 for line in lines), [len(x) for x in lines]


@pytest.mark.parametrize("version", [0, 1])
def test_describe_client_quotas_describes_none(scram_broker, version) -> None:
    """What kafka-configs.sh --describe --entity-type users asks beside the SCRAM half:
    no client quota was set here, so the answer is empty (error 0), at v0 and v1 (v1 is
    flexible), from kafka-python's encoder (quotas themselves: test_client_quotas.py)."""
    from kafka.protocol.admin import DescribeClientQuotasRequest as Describe

    component = Describe.ComponentData(entity_type="user", match_type=0, match="alice")
    with sasl.RawSasl(endpoint(scram_broker, "PLAINTEXT")) as raw:
        answer = raw.request(Describe(components=[component], strict=False), version)
        assert (answer.error_code, list(answer.entries or [])) == (0, [])
        everyone = raw.request(Describe(components=[], strict=False), version)
        assert everyone.error_code == 0
