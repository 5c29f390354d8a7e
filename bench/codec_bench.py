"""Codec cost per request: does a record payload's size leave decode+encode untouched?

Run ``python bench/codec_bench.py`` (or ``python -m bench.codec_bench``). Prints µs per
decode+encode of a Produce request carrying one 1 MiB batch and one carrying a
1 KiB batch, their ratio (target: at most 2x, since records stay a memoryview the
codec never copies or walks), and decode+encode of a Fetch response with 100
partitions. A script, not a test: figures depend on the machine.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from kafkette.wire.codec import MessageCodec, Output, message_codec

PRODUCE_VERSION = 9
FETCH_VERSION = 12


def produce_request(batch: bytes) -> bytes:
    codec = message_codec("ProduceRequest", PRODUCE_VERSION)
    partition = {"index": 0, "records": batch}
    return codec.encode(
        {
            "acks": -1,
            "timeout_ms": 30000,
            "topic_data": [{"name": "bench-topic", "partition_data": [partition]}],
        }
    )


def fetch_response(partitions: int, batch: bytes) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic": "bench-topic",
                "partitions": [
                    {
                        "partition_index": index,
                        "error_code": 0,
                        "high_watermark": 1000 + index,
                        "last_stable_offset": 1000 + index,
                        "log_start_offset": 0,
                        "aborted_transactions": None,
                        "preferred_read_replica": -1,
                        "records": batch,
                    }
                    for index in range(partitions)
                ],
            }
        ],
    }


def per_op_us(operation: Callable[[], object], seconds: float) -> float:
    """Best of five timed runs, each about ``seconds / 5`` long: µs per call."""
    operation()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            operation()
        elapsed = time.perf_counter() - start
        if elapsed > seconds / 20:
            break
        calls *= 2
    best = elapsed
    for _ in range(4):
        start = time.perf_counter()
        for _ in range(calls):
            operation()
        best = min(best, time.perf_counter() - start)
    return best / calls * 1e6


def decode_encode(codec: MessageCodec, encoded: bytes) -> Callable[[], object]:
    """One operation: decode ``encoded`` with ``codec`` and encode the result again."""
    buffer = bytearray(encoded)

    def run() -> object:
        body, _ = codec.decode(memoryview(buffer))
        out = Output()
        codec.encode_into(out, body)
        return out.finish()

    return run


def produce_round_trip(frame: bytes) -> Callable[[], object]:
    return decode_encode(message_codec("ProduceRequest", PRODUCE_VERSION), frame)


def fetch_round_trip(response: dict) -> Callable[[], object]:
    codec = message_codec("FetchResponse", FETCH_VERSION)
    return decode_encode(codec, codec.encode(response))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per figure")
    args = parser.parse_args(argv)

    small = produce_round_trip(produce_request(b"k" * 1024))
    large = produce_round_trip(produce_request(b"M" * (1 << 20)))
    small_us = per_op_us(small, args.seconds)
    large_us = per_op_us(large, args.seconds)
    ratio = large_us / small_us
    print(f"Produce v{PRODUCE_VERSION} decode+encode, 1 KiB batch : {small_us:9.2f} µs/op")
    print(f"Produce v{PRODUCE_VERSION} decode+encode, 1 MiB batch : {large_us:9.2f} µs/op")
    verdict = "ok" if ratio <= 2.0 else "OVER TARGET"
    print(f"ratio 1 MiB / 1 KiB                   : {ratio:9.2f}x (target <= 2x: {verdict})")

    for size in (0, 512):
        fetch_us = per_op_us(fetch_round_trip(fetch_response(100, b"F" * size)), args.seconds)
        print(
            f"Fetch v{FETCH_VERSION} decode+encode, 100 partitions, "
            f"{size:3d} B records each: {fetch_us:9.2f} µs/op"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
