"""The operations APIs a Kafka 4.0 broker answers, as kafkette answers them.

Two kinds of checks. Raw requests encoded with our wire codec (each API at each
advertised version, with the answers Kafka 4.0 gives, found by sending the same
requests to the reference broker). And Kafka 4.0's own tools from the reference
distribution (``kafka-log-dirs.sh``, ``kafka-features.sh``,
``kafka-metadata-quorum.sh``, ``kafka-cluster.sh``, ``kafka-client-metrics.sh``)
run against kafkette, their output checked for what they print against Kafka;
those skip with the reason where Java or the reference distribution is missing.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import time
from pathlib import Path

from confluent_kafka import Producer

from bench.harness.raw_wire import exchange
from bench.harness.serve_process import serve_refused
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.codec import message_codec
from kafkette.wire.primitives import ZERO_UUID
from tests.reference_kafka import reference_script_or_skip

TOOL_TIMEOUT_S = 120
CLIENT_METRICS = 16
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


# --- raw requests with our codec ----------------------------------------------------------


def wire_request(bootstrap: str, name: str, api_key: int, version: int, body: dict) -> dict:
    """One request/response on a fresh connection, encoded and decoded by our codec."""
    request = message_codec(name + "Request", version)
    response = message_codec(name + "Response", version)
    flexible = request.flexible or (api_key == 18 and version >= 3)
    client_id = b"admin-apis-test"
    header = struct.pack(">hhih", api_key, version, 11, len(client_id)) + client_id
    payload = header + (b"\0" if flexible else b"") + request.encode(body)
    data = exchange(bootstrap, struct.pack(">i", len(payload)) + payload, timeout=15)
    assert struct.unpack(">i", data[:4])[0] == 11
    start = 5 if flexible and api_key != 18 else 4  # ApiVersions: response header v0
    decoded, end = response.decode(memoryview(data), start)
    assert end == len(data)
    return decoded


def _produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        producer.produce(topic, value=b"v" * 100, key=str(i).encode())
    assert producer.flush(30) == 0


def test_api_versions_v3_reports_the_features_kafkette_serves(broker) -> None:
    for version in (3, 4):
        answer = wire_request(
            broker.bootstrap, "ApiVersions", 18, version,
            {"client_software_name": "test", "client_software_version": "1"},
        )
        supported = {f["name"]: (f["min_version"], f["max_version"])
                     for f in answer["supported_features"]}
        # share.version: KIP-932 share groups, served (Kafka 4.2+ finalizes level 1)
        expected = {"metadata.version": (25, 25), "group.version": (1, 1),
                    "share.version": (1, 1)}
        if version >= 4:
            expected |= {
                "kraft.version": (0, 0),
                "transaction.version": (0, 2),  # Kafka 4.0's range
                "eligible.leader.replicas.version": (0, 0),
            }
        # else: Kafka 4.0 leaves out features supported from level 0 before v4
        # (Java clients older than 3.9 reject a range starting at 0, KAFKA-17011).
        assert supported == expected
        finalized = {f["name"]: (f["min_version_level"], f["max_version_level"])
                     for f in answer["finalized_features"]}
        # Level-0 features are left out of the finalized list, as Kafka does;
        # transaction.version 2 is finalized, as Kafka 4.0 finalizes it by default.
        assert finalized == {"metadata.version": (25, 25), "group.version": (1, 1),
                             "share.version": (1, 1), "transaction.version": (2, 2)}
        assert answer["finalized_features_epoch"] == 0
        advertised = {k["api_key"]: (k["min_version"], k["max_version"])
                      for k in answer["api_keys"]}
        assert advertised[34] == (1, 2) and advertised[35] == (1, 5)
        assert advertised[55] == (0, 2) and advertised[57] == (0, 2)
        assert advertised[60] == (0, 2) and advertised[74] == (0, 0)
        assert 71 not in advertised and 72 not in advertised  # no metrics plugin
        assert advertised[76] == (1, 1) and advertised[78] == (1, 2)  # share groups
    old = wire_request(broker.bootstrap, "ApiVersions", 18, 2, {})
    assert old["supported_features"] == [] and old["finalized_features_epoch"] == -1  # defaults


def _update(bootstrap: str, version: int, updates: list[tuple[str, int, int]],
            validate_only: bool = True) -> dict:
    return wire_request(bootstrap, "UpdateFeatures", 57, version, {
        "timeout_ms": 60000,
        "feature_updates": [
            {"feature": f, "max_version_level": level, "allow_downgrade": kind != 1,
             "upgrade_type": kind}
            for f, level, kind in updates
        ],
        "validate_only": validate_only,
    })


def test_update_features_accepts_the_finalized_level_and_refuses_others(broker) -> None:
    for version in (0, 1, 2):
        ok = _update(broker.bootstrap, version, [("group.version", 1, 1),
                                                 ("metadata.version", 25, 1)],
                     validate_only=version == 0)
        assert ok["error_code"] == 0 and ok["error_message"] is None
        if version < 2:
            assert [(r["feature"], r["error_code"]) for r in ok["results"]] == [
                ("group.version", 0), ("metadata.version", 0)]
        bad = _update(broker.bootstrap, version, [("group.version", 1, 1),
                                                  ("transaction.version", 3, 1)])
        assert bad["error_code"] == 95  # INVALID_UPDATE_VERSION, the whole request fails
        assert bad["error_message"] == (
            "The update failed for all features since the following feature had an error: "
            "Invalid update version 3 for feature transaction.version. Local controller 1 "
            "only supports versions 0-2")
        assert bad["results"] == []
    unknown = _update(broker.bootstrap, 1, [("foo.version", 1, 1)])
    assert unknown["error_code"] == 95
    assert unknown["error_message"].endswith(
        "Invalid update version 1 for feature foo.version. Local controller 1 does not "
        "support this feature.")
    # Kafka 4.0's controller order: upgrade type, negative level, local support, and
    # only then upgrade vs downgrade (a level this node cannot serve is refused as
    # such whatever the upgrade type; measured on the reference).
    for update, message in [
        (("group.version", 1, 0), "The controller does not support the given upgrade type."),
        (("group.version", 1, 4), "The controller does not support the given upgrade type."),
        (("foo.version", 0, 0), "The controller does not support the given upgrade type."),
        (("group.version", -1, 1), "A feature version cannot be less than 0."),
        (("foo.version", -1, 2), "A feature version cannot be less than 0."),
        (("foo.version", 0, 1), "Feature foo.version not found."),
        (("group.version", 0, 1), "Local controller 1 only supports versions 1-1"),
        (("group.version", 0, 2), "Local controller 1 only supports versions 1-1"),
        (("group.version", 5, 2), "Local controller 1 only supports versions 1-1"),
        (("transaction.version", 1, 1), "Can't downgrade the version of this feature without "
         "setting the upgrade type to either safe or unsafe downgrade."),
        # Kafka 4.0 would downgrade; kafkette's levels are fixed (docs/transactions.md).
        (("transaction.version", 0, 2), "kafkette keeps transaction.version finalized at 2: "
         "its feature levels cannot be changed."),
        (("transaction.version", 1, 3), "kafkette keeps transaction.version finalized at 2: "
         "its feature levels cannot be changed."),
    ]:
        refused = _update(broker.bootstrap, 1, [update])
        assert refused["error_code"] == 95, update
        assert refused["error_message"].endswith(
            f"Invalid update version {update[1]} for feature {update[0]}. {message}"), refused
    assert _update(broker.bootstrap, 1, [("kraft.version", 0, 2)])["error_code"] == 0
    assert _update(broker.bootstrap, 1, [("transaction.version", 2, 1)])["error_code"] == 0


def test_describe_cluster_v2_endpoint_types_and_fencing(broker) -> None:
    host, port = broker.bootstrap.rsplit(":", 1)
    for version in (0, 1, 2):
        answer = wire_request(broker.bootstrap, "DescribeCluster", 60, version, {
            "include_cluster_authorized_operations": False,
            "endpoint_type": 1,
            "include_fenced_brokers": True,
        })
        assert answer["error_code"] == 0
        assert answer["cluster_id"] == broker.broker.cluster_id
        assert answer["controller_id"] == 1
        [entry] = answer["brokers"]
        assert (entry["broker_id"], entry["host"], entry["port"]) == (1, host, int(port))
        if version == 2:
            assert entry["is_fenced"] is False
    controllers = wire_request(broker.bootstrap, "DescribeCluster", 60, 2, {
        "include_cluster_authorized_operations": False, "endpoint_type": 2,
        "include_fenced_brokers": False,
    })
    assert controllers["error_code"] == 114  # MISMATCHED_ENDPOINT_TYPE, as a Kafka broker
    assert controllers["error_message"] == (
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of "
        "type CONTROLLER")
    assert (controllers["cluster_id"], controllers["controller_id"], controllers["brokers"]) == (
        "", -1, [])
    odd = wire_request(broker.bootstrap, "DescribeCluster", 60, 1, {
        "include_cluster_authorized_operations": False, "endpoint_type": 3})
    assert (odd["error_code"], odd["error_message"]) == (115, "Unsupported endpoint type 3")


def _partition_files_size(data_dir: Path, topic: str, index: int) -> int:
    folder = data_dir / f"{topic}-{index}"
    return sum(f.stat().st_size for f in folder.glob("*.log"))


def test_describe_log_dirs_reports_sizes_lag_and_volume(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(broker.bootstrap, topic, 50)
    data_dir = Path(broker.broker.config.data_dir)
    for version in (1, 2, 3, 4):
        answer = wire_request(broker.bootstrap, "DescribeLogDirs", 35, version, {"topics": None})
        assert answer["error_code"] == 0
        [result] = answer["results"]
        assert result["error_code"] == 0
        assert result["log_dir"] == os.path.abspath(data_dir)
        entries = {t["name"]: t["partitions"] for t in result["topics"]}
        assert "__cluster_metadata" not in entries
        sizes = {p["partition_index"]: p["partition_size"] for p in entries[topic]}
        assert set(sizes) == {0, 1}
        assert sum(sizes.values()) > 50 * 100
        for index, size in sizes.items():
            assert size == _partition_files_size(data_dir, topic, index)
        assert all(p["offset_lag"] == 0 and not p["is_future_key"] for p in entries[topic])
        if version >= 4:
            stats = os.statvfs(data_dir)
            assert result["total_bytes"] == stats.f_blocks * stats.f_frsize
            assert 0 < result["usable_bytes"] <= result["total_bytes"]
        else:
            assert result["total_bytes"] == -1
    some = wire_request(broker.bootstrap, "DescribeLogDirs", 35, 4, {"topics": [
        {"topic": topic, "partitions": [1, 7]}, {"topic": "no-such-topic", "partitions": [0]}]})
    [result] = some["results"]
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]])
            for t in result["topics"]] == [(topic, [1])]
    none = wire_request(broker.bootstrap, "DescribeLogDirs", 35, 4, {"topics": []})
    assert none["results"][0]["topics"] == []


def test_describe_log_dirs_never_stalls_the_broker_on_a_busy_log(broker, create_topic) -> None:
    """A partition's size takes its log's state lock, which a worker thread holds
    while it truncates or rolls: meanwhile the broker answers everyone else."""
    import threading

    topic = create_topic(broker.bootstrap, partitions=1)
    _produce(broker.bootstrap, topic, 5)
    log = broker.on_loop(lambda: broker.broker.topics.partition(topic, 0).log)
    described: list[dict] = []
    with log._state_lock:  # as a worker busy with the log would
        asker = threading.Thread(target=lambda: described.append(wire_request(
            broker.bootstrap, "DescribeLogDirs", 35, 4,
            {"topics": [{"topic": topic, "partitions": [0, 0]}]})), daemon=True)
        asker.start()
        deadline = time.monotonic() + 30
        while not broker.on_loop(lambda: broker.broker.requests_in_flight):
            assert time.monotonic() < deadline, "DescribeLogDirs never reached the broker"
            time.sleep(0.05)  # until the request is in, waiting for the lock
        answer = wire_request(broker.bootstrap, "ApiVersions", 18, 3, {
            "client_software_name": "test", "client_software_version": "1"})
        assert answer["error_code"] == 0 and not described
    asker.join(30)
    [result] = described[0]["results"]
    [entry] = result["topics"]
    assert [p["partition_index"] for p in entry["partitions"]] == [0]
    assert entry["partitions"][0]["partition_size"] > 0


def test_alter_replica_log_dirs_with_one_log_dir(broker, create_topic) -> None:
    topic = create_topic(broker.bootstrap, partitions=2)
    own = os.path.abspath(broker.broker.config.data_dir)
    for version in (1, 2):
        answer = wire_request(broker.bootstrap, "AlterReplicaLogDirs", 34, version, {"dirs": [
            {"path": own, "topics": [{"name": topic, "partitions": [0, 9]},
                                     {"name": "no-such-topic", "partitions": [0]}]},
            {"path": "/elsewhere", "topics": [{"name": topic, "partitions": [1]}]},
            {"path": own + "/", "topics": [{"name": topic, "partitions": [1]}]},
        ]})
        codes = {(t["topic_name"], p["partition_index"]): p["error_code"]
                 for t in answer["results"] for p in t["partitions"]}
        # Same dir: done (nothing moves); unknown partition 3; another path 57
        # (LOG_DIR_NOT_FOUND), even the same dir spelled with a trailing slash, as Kafka.
        assert codes == {(topic, 0): 0, (topic, 9): 3, ("no-such-topic", 0): 3, (topic, 1): 57}


def test_describe_quorum_shows_this_node_as_leader(broker) -> None:
    host, port = broker.bootstrap.rsplit(":", 1)
    for version in (0, 1, 2):
        answer = wire_request(broker.bootstrap, "DescribeQuorum", 55, version, {"topics": [
            {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
        assert answer["error_code"] == 0
        [topic] = answer["topics"]
        [partition] = topic["partitions"]
        assert (partition["error_code"], partition["leader_id"], partition["leader_epoch"]) == (
            0, 1, 1)
        [voter] = partition["current_voters"]
        assert voter["replica_id"] == 1 and voter["log_end_offset"] == partition["high_watermark"]
        assert partition["observers"] == []
        if version >= 1:
            assert voter["last_fetch_timestamp"] > 0
        if version >= 2:
            assert voter["replica_directory_id"] == ZERO_UUID
            assert answer["nodes"] == [{"node_id": 1, "listeners": [
                {"name": "PLAINTEXT", "host": host, "port": int(port)}]}]
    other = wire_request(broker.bootstrap, "DescribeQuorum", 55, 2, {"topics": [
        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 1}]}]})
    [partition] = other["topics"][0]["partitions"]
    assert (partition["error_code"], partition["error_message"]) == (
        3, "This server does not host this topic-partition.")
    assert other["nodes"] == []
    # Kafka's Raft handler answers exactly __cluster_metadata-0 alone; a request naming
    # anything more is refused for every partition it names (measured on Kafka 4.0).
    for topics in ([("__cluster_metadata", [0, 1])], [("__cluster_metadata", [0, 0])],
                   [("__cluster_metadata", [0]), ("foo", [0])]):
        mixed = wire_request(broker.bootstrap, "DescribeQuorum", 55, 2, {"topics": [
            {"topic_name": name, "partitions": [{"partition_index": i} for i in indexes]}
            for name, indexes in topics]})
        assert [(t["topic_name"], [(p["partition_index"], p["error_code"], p["error_message"])
                                   for p in t["partitions"]]) for t in mixed["topics"]] == [
            (name, [(i, 3, "This server does not host this topic-partition.")
                    for i in indexes]) for name, indexes in topics]
        assert mixed["nodes"] == []


def _incremental(bootstrap: str, name: str, changes: list[tuple[str, int, str | None]],
                 validate_only: bool = False) -> dict:
    answer = wire_request(bootstrap, "IncrementalAlterConfigs", 44, 1, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name, "configs": [
            {"name": n, "config_operation": op, "value": v} for n, op, v in changes]}],
        "validate_only": validate_only,
    })
    [response] = answer["responses"]
    return response


def _describe_metrics(bootstrap: str, name: str) -> dict:
    answer = wire_request(bootstrap, "DescribeConfigs", 32, 4, {
        "resources": [{"resource_type": CLIENT_METRICS, "resource_name": name,
                       "configuration_keys": None}],
        "include_synonyms": True, "include_documentation": False,
    })
    [result] = answer["results"]
    return result


def _listed(bootstrap: str) -> list[str]:
    answer = wire_request(bootstrap, "ListConfigResources", 74, 0, {})
    assert answer["error_code"] == 0
    return [r["resource_name"] for r in answer["config_resources"]]


def test_client_metrics_subscriptions_are_config_resources_and_durable(
    broker_process, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = broker_process(data_dir)
    bootstrap = first.bootstrap
    assert _listed(bootstrap) == []
    assert _incremental(bootstrap, "m1", [("metrics", 0, "org.apache.kafka."),
                                          ("interval.ms", 0, "1000")])["error_code"] == 0
    assert _incremental(bootstrap, "m2", [("metrics", 0, "a,b"),
                                          ("match", 0, "client_id=x.*,client_software_name=java")],
                        )["error_code"] == 0
    assert _incremental(bootstrap, "dry", [("metrics", 0, "a")], validate_only=True)[
        "error_code"] == 0
    assert _listed(bootstrap) == ["m1", "m2"]
    described = _describe_metrics(bootstrap, "m1")
    assert described["error_code"] == 0
    assert [(c["name"], c["value"], c["config_source"], c["read_only"])
            for c in described["configs"]] == [
        ("interval.ms", "1000", 7, False), ("metrics", "org.apache.kafka.", 7, False)]
    assert _describe_metrics(bootstrap, "unknown")["configs"] == []
    empty = _describe_metrics(bootstrap, "")
    assert (empty["error_code"], empty["error_message"]) == (
        42, "Client metrics subscription name must not be empty")
    # Kafka 4.0's refusals, codes and messages.
    refusals = [
        ([("interval.ms", 0, "50")], 42,
         "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
        ([("interval.ms", 0, "abc")], 40,
         "Invalid value abc for configuration interval.ms: Not a number of type INT"),
        ([("match", 0, "foo=bar")], 40, "Illegal client matching pattern: foo=bar"),
        ([("foo", 0, "1")], 42, "Unknown client metrics configuration: foo"),
        ([("metrics", 2, "x")], 40, "Can't APPEND to key metrics because its type is not LIST."),
    ]
    for changes, code, message in refusals:
        refused = _incremental(bootstrap, "m1", changes)
        assert (refused["error_code"], refused["error_message"]) == (code, message)
    assert _incremental(bootstrap, "", [("metrics", 0, "x")])["error_code"] == 42
    # Deleting every config removes the subscription.
    assert _incremental(bootstrap, "m2", [("metrics", 1, None), ("match", 1, None)])[
        "error_code"] == 0
    assert _listed(bootstrap) == ["m1"]
    first.kill()  # no clean shutdown: what was acknowledged is on disk
    second = broker_process(data_dir)
    assert _listed(second.bootstrap) == ["m1"]
    assert [(c["name"], c["value"]) for c in _describe_metrics(second.bootstrap, "m1")[
        "configs"]] == [("interval.ms", "1000"), ("metrics", "org.apache.kafka.")]


def test_client_metrics_checks_follow_kafka_40(broker) -> None:
    """Answers measured on the reference Kafka 4.0 for the same requests."""
    bootstrap = broker.bootstrap
    refusals = [
        ([("match", 0, "client_id=a,,client_software_name=b")], 40,
         "Illegal client matching pattern: "),
        ([("match", 0, "client_id=a,")], 40, "Illegal client matching pattern: "),
        ([("match", 0, " , ")], 40, "Illegal client matching pattern: "),
        ([("match", 0, "client_id=a=b")], 40, "Illegal client matching pattern: client_id=a=b"),
        ([("match", 0, "client_id=(")], 40, "Illegal client matching pattern: client_id=("),
        ([("match", 0, "client_id= ")], 40, "Illegal client matching pattern: client_id="),
        ([("match", 0, "=a")], 40, "Illegal client matching pattern: =a"),
        ([("foo", 2, "x")], 40, "Can't APPEND to key foo because its type is not LIST."),
        ([("foo", 0, "x"), ("metrics", 2, "y")], 40,
         "Can't APPEND to key metrics because its type is not LIST."),
        ([("metrics", 0, None)], 42, "Null value not supported for : metrics"),
        ([("foo", 3, None)], 42, "Null value not supported for : foo"),
        ([("metrics", 0, "c"), ("metrics", 1, None)], 42, "Error due to duplicate config keys"),
        ([("metrics", 0, "a"), ("foo", 1, None), ("bar", 0, "1")], 42,
         "Unknown client metrics configuration: bar"),
    ]
    for changes, code, message in refusals:
        refused = _incremental(bootstrap, "s1", changes, validate_only=True)
        assert (refused["error_code"], refused["error_message"]) == (code, message), changes
    # Kafka validates the final set: deleting what is not set (or not known) passes.
    for changes in ([("interval.ms", 1, None)], [("foo", 1, None)],
                    [("metrics", 0, "a"), ("interval.ms", 1, None)],
                    [("match", 0, "")], [("match", 0, "client_id=a=")],
                    [("match", 0, " client_id = a ")]):
        assert _incremental(bootstrap, "s1", changes, validate_only=True)["error_code"] == 0
    assert _incremental(bootstrap, "s1", [("metrics", 0, "a"), ("match", 0, "client_id=x")])[
        "error_code"] == 0
    for keys in (None, [], ["metrics"], ["nope"]):  # configuration_keys are not applied
        answer = wire_request(bootstrap, "DescribeConfigs", 32, 4, {
            "resources": [{"resource_type": CLIENT_METRICS, "resource_name": "s1",
                           "configuration_keys": keys}],
            "include_synonyms": False, "include_documentation": False,
        })
        assert [(c["name"], c["value"]) for c in answer["results"][0]["configs"]] == [
            ("match", "client_id=x"), ("metrics", "a")], keys


def test_a_late_first_read_of_the_subscriptions_never_undoes_an_alteration(
    tmp_path: Path,
) -> None:
    """A first-use read that finishes after an alteration was acknowledged must not
    install the older set it read (the read is held back by a gate here)."""
    import threading

    import trio
    import trio.testing

    from kafkette.broker.telemetry.file_store import SubscriptionStore
    from kafkette.broker.telemetry.subscriptions import SubscriptionChange

    (tmp_path / "client-metrics.json").write_text('{"version": 1, "subscriptions": {}}')
    gate = threading.Event()

    class SlowFirstRead(SubscriptionStore):
        reads = 0

        def _read(self) -> dict:
            SlowFirstRead.reads += 1
            read = super()._read()
            if SlowFirstRead.reads == 1:  # what it read is returned late
                assert gate.wait(30)
            return read

    async def main() -> dict:
        store = SlowFirstRead(tmp_path / "client-metrics.json")
        altered = trio.Event()

        async def alter() -> None:
            await store.apply(SubscriptionChange("m1", lambda c: {**c, "metrics": "a"}))
            altered.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.names)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(alter)
            with trio.move_on_after(1):  # only a store that does not wait finishes here
                await altered.wait()
            gate.set()
        return await store.configs("m1")

    assert trio.run(main) == {"metrics": "a"}


def test_a_damaged_client_metrics_file_stops_the_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "client-metrics.json").write_text("{not json")
    code, lines = serve_refused("--listen", "127.0.0.1:0", "--data-dir", str(data_dir))
    assert code == 1
    errors = [line for line in lines if line.startswith("kafkette:")]
    assert len(errors) == 1 and "client metrics subscriptions" in errors[0], lines
    assert (data_dir / "client-metrics.json").read_text() == "{not json"


def test_operations_apis_need_the_cluster_permissions_kafka_checks(tmp_path: Path) -> None:
    """A broker with Kafka's StandardAuthorizer, no ACLs and no super user: every one of
    these is refused with CLUSTER_AUTHORIZATION_FAILED (31) and nothing changes."""
    configs = {"authorizer.class.name": STANDARD_AUTHORIZER}
    with EmbeddedBroker.start(data_dir=tmp_path, configs=configs) as closed:
        bootstrap = closed.bootstrap
        log_dirs = wire_request(bootstrap, "DescribeLogDirs", 35, 4, {"topics": None})
        assert (log_dirs["error_code"], log_dirs["results"]) == (31, [])
        moved = wire_request(bootstrap, "AlterReplicaLogDirs", 34, 2, {"dirs": [
            {"path": str(tmp_path), "topics": [{"name": "t", "partitions": [0]}]}]})
        assert moved["results"][0]["partitions"][0]["error_code"] == 31
        quorum = wire_request(bootstrap, "DescribeQuorum", 55, 2, {"topics": [
            {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]})
        assert (quorum["error_code"], quorum["topics"]) == (31, [])
        update = _update(bootstrap, 2, [("group.version", 1, 1)])
        assert update["error_code"] == 31
        listed = wire_request(bootstrap, "ListConfigResources", 74, 0, {})
        assert (listed["error_code"], listed["config_resources"]) == (31, [])
        assert _incremental(bootstrap, "m1", [("metrics", 0, "x")])["error_code"] == 31
        assert _describe_metrics(bootstrap, "m1")["error_code"] == 31
    assert not (tmp_path / "client-metrics.json").exists()


def test_kafka_python_admin_client_reads_the_operations_apis(broker, create_topic) -> None:
    """kafka-python's KafkaAdminClient (its own encoder, picking its own versions)."""
    from kafka import TopicPartitionReplica
    from kafka.admin import KafkaAdminClient
    from kafka.errors import LogDirNotFoundError, NoError

    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(broker.bootstrap, topic, 5)
    own = os.path.abspath(broker.broker.config.data_dir)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    try:
        [described] = admin.describe_log_dirs()
        [log_dir] = described["log_dirs"]
        assert log_dir["log_dir"] == own and log_dir["total_bytes"] > 0
        sizes = {p["partition_index"]: p["partition_size"]
                 for t in log_dir["topics"] if t["name"] == topic for p in t["partitions"]}
        assert set(sizes) == {0, 1} and sum(sizes.values()) > 500
        features = admin.describe_features()
        assert features["group.version"]["finalized"] == (1, 1)
        assert features["transaction.version"]["supported"] == (0, 2)
        assert features["transaction.version"]["finalized"] == (2, 2)
        assert admin.update_features({"group.version": 1}, validate_only=True) == {
            "group.version": "OK"}
        quorum = admin.describe_metadata_quorum()
        [partition] = quorum["topics"][0]["partitions"]
        assert partition["leader_id"] == 1 and partition["error"] is None
        moved = admin.alter_replica_log_dirs({
            TopicPartitionReplica(topic, 0, 1): own,
            TopicPartitionReplica(topic, 1, 1): "/not/a/log/dir",
        })
        assert moved[TopicPartitionReplica(topic, 0, 1)] is NoError
        assert moved[TopicPartitionReplica(topic, 1, 1)] is LogDirNotFoundError
        cluster = admin.describe_cluster()
        assert [b["is_fenced"] for b in cluster["brokers"]] == [False]
    finally:
        admin.close()


# --- Kafka 4.0's own tools ----------------------------------------------------------------


def _tool(script: Path, *args: str, exit_code: int = 0) -> str:
    return _tools(script, [(args, exit_code)])[0]


def _tools(script: Path, runs: list[tuple[tuple[str, ...], int]]) -> list[str]:
    """Run the tools side by side (each is a JVM start: seconds of CPU) and return their
    stdout and stderr, checking each exit code."""
    procs = [
        (args, code, subprocess.Popen([str(script), "bin", *args], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
        for args, code in runs
    ]
    outputs = []
    try:
        for args, code, proc in procs:
            out, err = proc.communicate(timeout=TOOL_TIMEOUT_S)
            assert proc.returncode == code, f"{args}: {out}\n{err}"
            outputs.append(out + err)
    finally:
        for _, _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    return outputs


def test_reference_tools_describe_kafkette(broker, create_topic) -> None:
    script = reference_script_or_skip()
    bootstrap = broker.bootstrap
    topic = create_topic(broker.bootstrap, partitions=2)
    _produce(bootstrap, topic, 10)
    server = ("--bootstrap-server", bootstrap)
    # Each tool is a JVM start (seconds of CPU): the ones the raw tests above do not
    # stand in for (DescribeCluster, the quorum's --replication table are checked raw).
    log_dirs, features, dry_run, status = _tools(script, [
        (("kafka-log-dirs.sh", *server, "--describe", "--topic-list", topic), 0),
        (("kafka-features.sh", *server, "describe"), 0),
        (("kafka-features.sh", *server, "upgrade", "--feature", "group.version=1",
          "--feature", "transaction.version=3", "--dry-run"), 1),
        (("kafka-metadata-quorum.sh", *server, "describe", "--status"), 0),
    ])

    described = json.loads(
        next(line for line in log_dirs.splitlines() if line.startswith("{")))
    [entry] = described["brokers"]
    [log_dir] = entry["logDirs"]
    assert log_dir["error"] is None
    assert log_dir["logDir"] == os.path.abspath(broker.broker.config.data_dir)
    sizes = {p["partition"]: p["size"] for p in log_dir["partitions"]}
    assert set(sizes) == {f"{topic}-0", f"{topic}-1"} and sum(sizes.values()) > 1000
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in log_dir["partitions"])

    assert features.splitlines() == [
        "Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\t"
        "SupportedMaxVersion: 0\tFinalizedVersionLevel: 0\tEpoch: 0",
        "Feature: group.version\tSupportedMinVersion: 1\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 1\tEpoch: 0",
        "Feature: kraft.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 0\t"
        "FinalizedVersionLevel: 0\tEpoch: 0",
        "Feature: metadata.version\tSupportedMinVersion: 4.0-IV3\t"
        "SupportedMaxVersion: 4.0-IV3\tFinalizedVersionLevel: 4.0-IV3\tEpoch: 0",
        "Feature: share.version\tSupportedMinVersion: 1\tSupportedMaxVersion: 1\t"
        "FinalizedVersionLevel: 1\tEpoch: 0",
        "Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\t"
        "FinalizedVersionLevel: 2\tEpoch: 0",
    ]
    # One refused feature fails the whole update, as on Kafka.
    assert "group.version can be upgraded to 1." not in dry_run
    assert "2 out of 2 operation(s) failed." in dry_run
    assert ("Can not upgrade transaction.version to 3. The update failed for all features "
            "since the following feature had an error: Invalid update version 3 for feature "
            "transaction.version. Local controller 1 only supports versions 0-2") in dry_run

    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["ClusterId"].strip() == broker.broker.cluster_id
    assert fields["LeaderId"].strip() == "1"
    assert fields["CurrentObservers"].strip() == "[]"
    assert json.loads(fields["CurrentVoters"]) == [
        {"id": 1, "directoryId": None, "endpoints": [f"PLAINTEXT://{bootstrap}"]}]


def test_reference_client_metrics_tool_against_kafkette(broker) -> None:
    script = reference_script_or_skip()
    tool = ("kafka-client-metrics.sh", "--bootstrap-server", broker.bootstrap)
    out = _tool(script, *tool, "--alter", "--name", "tool-m1", "--metrics",
                "org.apache.kafka.", "--interval", "1000")
    assert out.strip() == "Altered client metrics config for tool-m1."
    # --describe without --name lists the subscriptions (ListClientMetricsResources), then
    # describes each (DescribeConfigs): both APIs in one JVM start.
    lines = _tool(script, *tool, "--describe").splitlines()
    start = lines.index("Client metrics configs for tool-m1 are:")
    assert lines[start + 1:start + 3] == ["  interval.ms=1000", "  metrics=org.apache.kafka."]
    out = _tool(script, *tool, "--delete", "--name", "tool-m1")
    assert out.strip() == "Deleted client metrics config for tool-m1."
    assert "tool-m1" not in _listed(broker.bootstrap)
