"""The schema registry in a 3-broker cluster: one writer (the leader of ``_schemas``-0),
followers forward writes to it, every broker answers reads from its own copy, and after a
kill -9 of the writer another broker takes over with ids that keep increasing.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from kafkette.broker.cluster import znodes

SCHEMAS = "_schemas"
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def _call(
    url: str, method: str, path: str, body: object | None = None, **headers: str
) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url + path, data=data, method=method, headers={"Content-Type": CONTENT_TYPE, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")
    except OSError as error:  # refused, reset: a broker down or starting
        return -1, repr(error)


def _schema(index: int, evolved: bool = False) -> str:
    """Record ``R<index>``; ``evolved`` adds a field with a default (BACKWARD compatible)."""
    fields: list[dict[str, object]] = [{"name": "f", "type": "string"}]
    if evolved:
        fields.append({"name": "g", "type": "int", "default": 0})
    return json.dumps({"type": "record", "name": f"R{index}", "fields": fields})


def _register(url: str, subject: str, schema: str, timeout: float) -> int:
    """Register, retrying 5xx answers and refused connections as clients do (a
    failover answers 50004 or times out meanwhile) until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        status, answer = _call(url, "POST", f"/subjects/{subject}/versions", {"schema": schema})
        if status == 200:
            return int(answer["id"])
        if 0 <= status < 500 or time.monotonic() > deadline:
            raise AssertionError(f"register at {url}: {status} {answer}")
        time.sleep(0.3)


def test_registration_carries_the_registry_url() -> None:
    with_url = znodes.encode_broker("h", 9092, None, 0, None, "http://h:8081")
    assert json.loads(with_url)["kafkette_schema_registry"] == "http://h:8081"
    assert znodes.decode_broker_schema_registry(with_url) == "http://h:8081"
    without = znodes.encode_broker("h", 9092, None, 0)
    assert "kafkette_schema_registry" not in json.loads(without)
    assert znodes.decode_broker_schema_registry(without) is None
    assert znodes.decode_broker(with_url) == znodes.decode_broker(without) == ("h", 9092, None)


def test_writes_forward_to_the_leader_and_survive_its_kill_9(cluster, wait_until) -> None:
    c = cluster(3, schema_registry=True)
    urls = {i: b.schema_registry_url for i, b in c.brokers.items()}
    leader = c.wait_leader(SCHEMAS, 0, timeout=30)
    follower = next(i for i in urls if i != leader)
    # Created once the third broker was seen (before any write): on all three.
    topic = json.loads(c.zk().get(f"/brokers/topics/{SCHEMAS}")[0])
    assert sorted(topic["partitions"]["0"]) == [1, 2, 3], topic

    # A follower forwards the write; the answer is the leader's, sent once the follower
    # has applied it too: a lookup through the same follower finds it at once.
    ids = [_register(urls[follower], "s1", _schema(1), timeout=20)]
    found = _call(urls[follower], "POST", "/subjects/s1", {"schema": _schema(1)})
    assert found[0] == 200 and found[1]["id"] == ids[0], found
    ids.append(_register(urls[leader], "s2", _schema(2), timeout=10))
    ids.append(_register(urls[follower], "s1", _schema(1, evolved=True), timeout=10))
    assert ids == [1, 2, 3]

    def everywhere(schema_ids: list[int], brokers: list[int]) -> bool:
        return all(
            _call(urls[b], "GET", f"/schemas/ids/{i}")[0] == 200
            for b in brokers for i in schema_ids
        )  # fmt: skip

    wait_until(lambda: everywhere(ids, list(urls)), timeout=15, what="ids 1-3 on every broker")
    assert {_call(urls[b], "GET", "/subjects/s1/versions")[1] == [1, 2] for b in urls} == {True}

    c.kill(leader)
    survivors = [i for i in urls if i != leader]
    # Writes resume on another broker (sent to either survivor: one forwards).
    ids.append(_register(urls[survivors[0]], "s3", _schema(4), timeout=30))
    ids.append(_register(urls[survivors[1]], "s2", _schema(2, evolved=True), timeout=15))
    assert ids[3] > ids[2] and ids[4] > ids[3] and len(set(ids)) == 5, ids
    new_leader = c.wait_leader(SCHEMAS, 0, exclude=(leader,), timeout=5)
    assert new_leader in survivors
    wait_until(lambda: everywhere(ids, survivors), timeout=15, what="every id on the survivors")
    for broker_id in survivors:
        assert _call(urls[broker_id], "GET", "/subjects")[1] == ["s1", "s2", "s3"]
        # An id given before the failover still names its schema (never given again).
        status, answer = _call(urls[broker_id], "GET", "/schemas/ids/2")
        assert (status, json.loads(answer["schema"])["name"]) == (200, "R2")


def test_a_broker_without_a_replica_of_schemas_answers_reads_from_the_leader(cluster) -> None:
    """``_schemas`` on one broker of three: the other two hold no copy of the state, so they
    send reads on to the leader's registry instead of answering from nothing."""
    c = cluster(3, configs={"kafkastore.topic.replication.factor": "1"}, schema_registry=True)
    urls = {i: b.schema_registry_url for i, b in c.brokers.items()}
    schema_id = _register(urls[1], "lonely", _schema(7), timeout=20)
    leader = c.wait_leader(SCHEMAS, 0, timeout=30)
    others = [i for i in urls if i != leader]
    for broker_id in others:
        assert _call(urls[broker_id], "GET", "/subjects") == (200, ["lonely"])
        status, answer = _call(urls[broker_id], "GET", f"/schemas/ids/{schema_id}")
        assert (status, json.loads(answer["schema"])["name"]) == (200, "R7")
        # A read it cannot send on (here: one already forwarded) has no answer of its
        # own, rather than an empty registry's: 50004, which clients retry.
        status, answer = _call(urls[broker_id], "GET", "/subjects", **{"X-Kafkette-Forwarded": "1"})
        assert (status, answer["error_code"]) == (500, 50004), answer
    # A write it forwards is answered at once: it has no copy of its own to wait for.
    started = time.monotonic()
    _register(urls[others[0]], "lonely", _schema(7, evolved=True), timeout=10)
    assert time.monotonic() - started < 4
