"""Per-request cost of the request log, the request counters and the traffic counting.

Times, with ``timeit``, what the connection loop and the fetch handler now do for
every request: ``RequestObserver.completed`` with metrics off (the default), with
metrics on, and the error-code walk of Produce and Fetch responses of 1 and 100
partitions; plus the offsets count of a Fetch answer (per batch). Prints
microseconds per call. Run: ``python -m bench.request_log_cost``.
"""

from __future__ import annotations

import logging
import struct
import time
import timeit

from kafkette.broker.handlers.fetch import _offsets_in_bytes
from kafkette.broker.observability.request_log import RequestObserver, error_codes
from kafkette.wire.apis import ApiKey, api_spec
from kafkette.wire.connection import Request, RequestHeader


def _request(key: ApiKey, version: int) -> Request:
    spec = api_spec(key)
    assert spec is not None
    return Request(RequestHeader(int(key), version, 7, "bench", True), spec, {}, 0)


def _produce_response(partitions: int) -> dict:
    return {"responses": [{"name": "t", "partition_responses": [
        {"index": i, "error_code": 0, "base_offset": 0, "log_append_time_ms": -1,
         "log_start_offset": 0, "record_errors": [], "error_message": None}
        for i in range(partitions)]}], "throttle_time_ms": 0}  # fmt: skip


def _fetch_response(partitions: int) -> dict:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": [
        {"topic": "t", "partitions": [
            {"partition_index": i, "error_code": 0, "high_watermark": 10,
             "last_stable_offset": 10, "log_start_offset": 0, "aborted_transactions": None,
             "preferred_read_replica": -1, "records": b"x" * 1000}
            for i in range(partitions)]}]}  # fmt: skip


def _batches(count: int, records: int, size: int) -> bytes:
    out = bytearray()
    for i in range(count):
        batch = bytearray(size)
        struct.pack_into(">qi", batch, 0, i * records, size - 12)
        struct.pack_into(">i", batch, 23, records - 1)
        out += batch
    return bytes(out)


def _us(stmt: object, number: int = 200_000) -> float:
    return min(timeit.repeat(stmt, number=number, repeat=3)) / number * 1e6  # type: ignore[arg-type]


def main() -> None:
    logging.getLogger("kafkette.request").setLevel(logging.INFO)
    produce = _request(ApiKey.PRODUCE, 9)
    fetch = _request(ApiKey.FETCH, 12)
    metadata = _request(ApiKey.METADATA, 12)
    rows: list[tuple[str, float]] = []
    for label, metrics in (("metrics off", False), ("metrics on", True)):
        observer = RequestObserver()
        if metrics:
            observer.enable_metrics()
        for name, request, response in (
            ("Produce 1 partition", produce, _produce_response(1)),
            ("Fetch 1 partition", fetch, _fetch_response(1)),
            ("Fetch 100 partitions", fetch, _fetch_response(100)),
            ("Metadata (no walk when off)", metadata, {"topics": [], "brokers": []}),
        ):
            def call(request=request, response=response, observer=observer) -> None:
                started = time.perf_counter() if observer.wants_timing() else 0.0
                observer.completed(request, response, 100, started, 0.0)

            rows.append((f"completed(), {label}: {name}", _us(call, 50_000)))
    rows.append(("error_codes(): Produce 1 partition", _us(lambda: error_codes(_P1))))
    rows.append(("error_codes(): Fetch 100 partitions", _us(lambda: error_codes(_F100), 20_000)))
    data = _batches(10, 100, 6000)
    count = _us(lambda: _offsets_in_bytes(data, 0))
    rows.append(("Fetch offsets count: 10 batches in 60 KB", count))
    rows.append(("perf_counter() (for scale)", _us(time.perf_counter)))
    width = max(len(name) for name, _ in rows)
    for name, us in rows:
        print(f"{name:<{width}}  {us:7.2f} us")


_P1 = _produce_response(1)
_F100 = _fetch_response(100)

if __name__ == "__main__":
    main()
