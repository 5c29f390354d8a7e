"""Mutated frames of every served API and version never make a handler raise.

A valid request is built from Kafka's definitions for every (API, version) in
``SUPPORTED`` (topic, group and partition names that exist, a real record
batch), then mutated: bit flips, bytes overwritten with 0xff/0x00/0x80/0x7f,
int16/int32 windows set to -1 or huge (null strings and arrays, absurd counts),
compact lengths set to 0 (null), truncation, splices of another frame. Each
goes to a real broker over a real socket, followed on the same connection by an
ApiVersions probe, so requests that get no answer (acks=0) cost nothing.

The broker may answer with an error code or close the connection; it must never
log a traceback (``closing connection ... after an internal error``, or any
record carrying exception info, or anything at ERROR), and it must answer
ApiVersions and Metadata on a fresh connection afterwards.

Bounded by count and time for CI; ``KAFKETTE_FUZZ_FRAMES``,
``KAFKETTE_FUZZ_SECONDS`` and ``KAFKETTE_FUZZ_SEED`` scale it up for a long
run (``KAFKETTE_FUZZ_FRAMES=100000 KAFKETTE_FUZZ_SECONDS=3600 pytest ...``),
which prints a summary of what it saw.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bench.harness.raw_wire import connect, read_frame
from kafkette.broker.embedded import EmbeddedBroker
from kafkette.wire.apis import SUPPORTED, ApiKey, ApiSpec
from kafkette.wire.codec import message_codec
from kafkette.wire.records import build_batch_from_values
from kafkette.wire.schema import FieldSpec, in_range, load_message

FRAMES = int(os.environ.get("KAFKETTE_FUZZ_FRAMES", "4000"))
SECONDS = float(os.environ.get("KAFKETTE_FUZZ_SECONDS", "25"))
SEED = int(os.environ.get("KAFKETTE_FUZZ_SEED", "12"))
READ_TIMEOUT = 3.0  # a mutated Fetch max_wait_ms/min_bytes may long-poll: move on after this

TOPIC = "fuzz"
TOPIC_PARTITIONS = 2
GROUP = "fuzz-group"
RECORDS = build_batch_from_values([(b"k", b"value")])
PROBE_CORRELATION_ID = 0x7FFF0000


# --- valid bodies from the definitions --------------------------------------------


@dataclass
class Names:
    """What a frame refers to; group ids are fresh per frame so frames do not wait on
    each other's rebalances."""

    group: str
    new_topic: str


def _string(f: FieldSpec, parent: str, names: Names) -> str | None:
    name = f.name
    if parent in ("configs",) and name == "name":
        return "retention.ms"
    if name == "value":
        return "86400000"
    if name in ("group_id", "key", "coordinator_keys", "groups_names", "groups"):
        return names.group
    if name in ("name", "topic", "topic_names", "resource_name"):
        return TOPIC
    if name == "protocol_type":
        return "consumer"
    if name == "protocol_name":
        return "range"
    if name == "mechanism":
        return "PLAIN"
    if name in ("transactional_id", "cluster_id", "rack_id", "group_instance_id", "reason"):
        return None if f.nullable_versions != (1, 0) else ""
    if name == "configuration_keys":
        return "retention.ms"
    if name in ("states_filter", "types_filter"):
        return "Stable" if name == "states_filter" else "classic"
    return ""


_INTS = {
    "partition_index": 0,
    "partition": 0,
    "index": 0,
    "partition_indexes": 0,
    "timeout_ms": 1000,
    "max_wait_ms": 0,
    "min_bytes": 0,
    "max_bytes": 1 << 20,
    "partition_max_bytes": 1 << 20,
    "acks": -1,
    "session_timeout_ms": 6000,
    "rebalance_timeout_ms": 200,
    "generation_id": -1,
    "generation_id_or_member_epoch": -1,
    "producer_id": -1,
    "producer_epoch": -1,
    "replica_id": -1,
    "session_epoch": -1,
    "num_partitions": 1,
    "replication_factor": 1,
    "count": TOPIC_PARTITIONS + 1,
    "broker_ids": 1,
    "resource_type": 2,
    "key_type": 0,
    "retention_time_ms": -1,
    "transaction_timeout_ms": 60000,
    "fetch_offset": 0,
    "committed_offset": 0,
    "offset": 0,
    "timestamp": -1,
    "current_leader_epoch": -1,
    "leader_epoch": 0,
    "log_start_offset": -1,
    "isolation_level": 0,
}


def _scalar(f: FieldSpec, parent: str, names: Names, rng: random.Random) -> object:
    kind = f.element_type
    if kind == "string":
        return _string(f, parent, names)
    if kind == "records":
        return RECORDS
    if kind == "bytes":
        return b"\0PLAIN-user\0secret" if f.name == "auth_bytes" else b"\0\1\0\0\0\0"
    if kind == "uuid":
        return uuid.UUID(int=0)
    if kind == "bool":
        if f.name == "validate_only":
            return rng.random() < 0.5
        return f.name in ("allow_auto_topic_creation", "include_synonyms")
    if kind == "float64":
        return 0.5
    return _INTS.get(f.name, 0)


def build_body(
    fields: tuple[FieldSpec, ...], version: int, names: Names, rng: random.Random, parent: str = ""
) -> dict:
    body: dict[str, object] = {}
    for f in fields:
        if not in_range(version, f.versions):
            continue
        if f.is_struct:
            value: object = build_body(f.fields, version, names, rng, f.name)
        else:
            value = _scalar(f, parent, names, rng)
        body[f.name] = [value] if f.is_array else value
    return body


def encode_request(spec: ApiSpec, version: int, correlation_id: int, body: dict) -> bytes:
    """Header (v1, or v2 with empty tagged fields) and body, with the size prefix."""
    definition = load_message(spec.request_definition)
    flexible = definition.is_flexible(version) or (spec.key == ApiKey.API_VERSIONS and version >= 3)
    header = struct.pack(">hhih", spec.key, version, correlation_id, 4) + b"fuzz"
    if flexible:
        header += b"\0"
    payload = header + message_codec(spec.request_definition, version).encode(body)
    return struct.pack(">i", len(payload)) + payload


def served_versions() -> list[tuple[ApiSpec, int]]:
    return [
        (spec, version)
        for spec in SUPPORTED.values()
        for version in range(spec.decode_min, spec.max_version + 1)
    ]


def valid_frame(spec: ApiSpec, version: int, serial: int, rng: random.Random) -> bytes:
    names = Names(group=f"{GROUP}-{serial}", new_topic=f"fuzz-new-{serial}")
    body = build_body(load_message(spec.request_definition).fields, version, names, rng)
    if spec.key == ApiKey.CREATE_TOPICS:
        body["topics"][0]["name"] = names.new_topic if rng.random() < 0.3 else TOPIC
    return encode_request(spec, version, serial & 0x3FFFFFFF, body)


# --- mutations -------------------------------------------------------------------

HEADER_BYTES = 4 + 8  # size prefix, api key, version, correlation id


def mutate(frame: bytes, other: bytes, rng: random.Random) -> tuple[str, bytes]:
    """One mutation of ``frame`` (keeping the size prefix true unless that is the point)."""
    payload = bytearray(frame[4:])
    # Mostly leave api key/version/correlation id alone, so the body is what is fuzzed.
    low = 0 if rng.random() < 0.05 else min(HEADER_BYTES - 4, len(payload) - 1)
    kind = rng.choice(
        (
            "flip",
            "flip",
            "byte",
            "byte",
            "int16",
            "int32",
            "int32",
            "varint0",
            "truncate",
            "splice",
            "multi",
        )
    )

    def where(width: int = 1) -> int:
        return rng.randrange(low, max(low + 1, len(payload) - width + 1))

    if kind == "flip":
        pos = where()
        payload[pos] ^= 1 << rng.randrange(8)
    elif kind == "byte":
        payload[where()] = rng.choice((0xFF, 0x00, 0x80, 0x7F, 0x01))
    elif kind == "int16":
        pos = where(2)
        payload[pos : pos + 2] = rng.choice((b"\xff\xff", b"\x7f\xff", b"\x80\x00", b"\x00\x00"))
    elif kind == "int32":
        pos = where(4)
        payload[pos : pos + 4] = rng.choice(
            (b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", b"\x00\x0f\xff\xff")
        )
    elif kind == "varint0":
        payload[where()] = 0
    elif kind == "truncate":
        del payload[rng.randrange(low, len(payload)) :]
    elif kind == "splice":
        pos = where()
        start = rng.randrange(4, len(other))
        chunk = other[start : start + rng.randrange(1, 24)]
        payload[pos : pos + rng.randrange(0, 8)] = chunk
    else:
        for _ in range(rng.randrange(2, 6)):
            pos = where()
            payload[pos] = rng.randrange(256)
    if rng.random() < 0.002:
        return "size-prefix", struct.pack(">i", rng.choice((-1, 0x7FFFFFFF))) + bytes(payload)
    return kind, struct.pack(">i", len(payload)) + bytes(payload)


# --- the broker and what it logs -----------------------------------------------------


class TracebackCatcher(logging.Handler):
    """Keeps every kafkette log record that carries a traceback or is an error."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.bad: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if (
            record.exc_info
            or record.levelno >= logging.ERROR
            or "internal error" in (record.getMessage())
        ):
            self.bad.append(record)


@pytest.fixture
def fuzz_broker(tmp_path: Path) -> Iterator[tuple[EmbeddedBroker, TracebackCatcher]]:
    catcher = TracebackCatcher()
    logger = logging.getLogger("kafkette")
    logger.addHandler(catcher)
    embedded = EmbeddedBroker.start(
        data_dir=tmp_path / "data",
        configs={"num.partitions": "1", "group.initial.rebalance.delay.ms": "0"},
    )
    try:
        yield embedded, catcher
    finally:
        logger.removeHandler(catcher)
        # A wedged event loop would block ``stop`` for ever: give up after a while, the
        # broker thread is a daemon and the test has already failed.
        stopper = threading.Thread(target=embedded.stop, kwargs={"timeout": 30}, daemon=True)
        stopper.start()
        stopper.join(40)


class Link:
    """One raw connection; reopened whenever the broker closes it."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = connect(self.bootstrap, timeout=10)
            self.sock.settimeout(READ_TIMEOUT)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def exchange(self, frame: bytes) -> str:
        """Send ``frame`` then an ApiVersions probe; "answered", "closed" or "timeout"."""
        sock = self._connect()
        probe = encode_request(SUPPORTED[ApiKey.API_VERSIONS], 0, PROBE_CORRELATION_ID, {})
        try:
            sock.sendall(frame + probe)
            while True:
                response = read_frame(sock)
                if struct.unpack_from(">i", response)[0] == PROBE_CORRELATION_ID:
                    return "answered"
        except TimeoutError:
            self.close()
            return "timeout"
        except OSError:
            self.close()
            return "closed"


def broker_answers(bootstrap: str) -> bool:
    """ApiVersions and Metadata (all topics) on a fresh connection."""
    link = Link(bootstrap)
    try:
        metadata = encode_request(SUPPORTED[ApiKey.METADATA], 1, 1, {"topics": None})
        return link.exchange(metadata) == "answered"
    finally:
        link.close()


@dataclass
class FuzzReport:
    sent: int = 0
    outcomes: collections.Counter = field(default_factory=collections.Counter)
    tracebacks: collections.Counter = field(default_factory=collections.Counter)
    wedged_by: str | None = None  # the frame after which the broker stopped answering


def _create_fuzz_topic(bootstrap: str) -> None:
    spec = SUPPORTED[ApiKey.CREATE_TOPICS]
    body = {
        "topics": [{"name": TOPIC, "num_partitions": TOPIC_PARTITIONS, "replication_factor": 1}],
        "timeout_ms": 10000,
    }
    link = Link(bootstrap)
    try:
        assert link.exchange(encode_request(spec, 5, 1, body)) == "answered"
    finally:
        link.close()


def run_fuzz(
    bootstrap: str, catcher: TracebackCatcher, frames: int, seconds: float, seed: int
) -> FuzzReport:
    rng = random.Random(seed)
    report = FuzzReport()
    pairs = served_versions()
    link = Link(bootstrap)
    deadline = time.monotonic() + seconds
    seen_bad = 0
    try:
        # Every unmutated frame is answered: the corpus reaches the handlers.
        for serial, (spec, version) in enumerate(pairs):
            frame = valid_frame(spec, version, serial, rng)
            assert link.exchange(frame) == "answered", f"valid {spec.name} v{version} not answered"
            assert not catcher.bad, f"valid {spec.name} v{version}: {catcher.bad[0].getMessage()}"
        serial = len(pairs)
        while report.sent < frames and time.monotonic() < deadline:
            spec, version = pairs[report.sent % len(pairs)]
            serial += 1
            frame = valid_frame(spec, version, serial, rng)
            other = valid_frame(*rng.choice(pairs), serial, rng)
            kind, mutated = mutate(frame, other, rng)
            outcome = link.exchange(mutated)
            report.sent += 1
            report.outcomes[outcome] += 1
            if outcome == "timeout" and not broker_answers(bootstrap):
                report.wedged_by = f"{spec.name} v{version} ({kind}): {mutated.hex()}"
                break
            if len(catcher.bad) > seen_bad:
                for record in catcher.bad[seen_bad:]:
                    exc = record.exc_info[1] if record.exc_info else None
                    key = f"{spec.name} v{version} ({kind}): {type(exc).__name__}: {exc}"
                    report.tracebacks[key[:300]] += 1
                seen_bad = len(catcher.bad)
    finally:
        link.close()
    return report


def test_no_mutated_frame_makes_a_handler_raise(fuzz_broker) -> None:
    embedded, catcher = fuzz_broker
    _create_fuzz_topic(embedded.bootstrap)
    report = run_fuzz(embedded.bootstrap, catcher, FRAMES, SECONDS, SEED)
    summary = "\n".join(f"{n} x {k}" for k, n in report.tracebacks.most_common(60))
    print(
        f"\nfuzz: {report.sent} mutated frames over {len(served_versions())} (API, version) pairs,"
        f" outcomes {dict(report.outcomes)}, {sum(report.tracebacks.values())} tracebacks"
        + (f", broker stopped answering after {report.wedged_by}" if report.wedged_by else "")
        + (f"\n{summary}" if summary else "")
    )
    assert report.wedged_by is None, f"the broker stopped answering after {report.wedged_by}"
    assert report.sent >= min(FRAMES, 2 * len(served_versions())), "too few frames in the budget"
    assert broker_answers(embedded.bootstrap), "the broker stopped answering"
    assert not report.tracebacks, summary


def test_commit_with_the_largest_retention_time_is_stored(fuzz_broker) -> None:
    """OffsetCommit v2-4 retention_time_ms is any int64; now + 2^63-1 must not overflow
    the stored offset record (the fuzz run found it as a struct.error)."""
    embedded, catcher = fuzz_broker
    _create_fuzz_topic(embedded.bootstrap)
    spec = SUPPORTED[ApiKey.OFFSET_COMMIT]
    body = {
        "group_id": "retention-group",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "retention_time_ms": (1 << 63) - 1,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 7, "committed_metadata": "m"}
                ],
            }
        ],
    }
    fetch_body = {
        "group_id": "retention-group",
        "topics": [{"name": TOPIC, "partition_indexes": [0]}],
    }
    fetch = encode_request(SUPPORTED[ApiKey.OFFSET_FETCH], 3, 6, fetch_body)
    link = Link(embedded.bootstrap)
    try:
        assert link.exchange(encode_request(spec, 3, 5, body)) == "answered"
        assert link.sock is not None
        link.sock.sendall(fetch)
        answer = memoryview(read_frame(link.sock))
    finally:
        link.close()
    assert not catcher.bad, catcher.bad[0].getMessage()
    fetched, _ = message_codec("OffsetFetchResponse", 3).decode(answer, 4)  # after correlation id
    assert fetched["topics"][0]["partitions"][0]["committed_offset"] == 7
