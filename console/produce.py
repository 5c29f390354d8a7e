"""The console's "produce a record": through a real Kafka client, never into the log directly.

Going through the broker's own listener with confluent-kafka means a record from the
console passes exactly the checks any client's does (sizes, topic existence, acks,
quotas to come) and shows up in the request log and metrics like any other. librdkafka
blocks, so the whole produce runs in a worker thread whose result comes back to trio
as the return value of ``trio.to_thread.run_sync``.
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

# Bounded: a broker that does not answer gives the page an error, not a hung request.
DELIVERY_TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    topic: str
    partition: int | None  # None: the client's partitioner picks
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Delivered:
    topic: str
    partition: int
    offset: int


class ProduceFailed(Exception):
    """The client reported an error (its text is the message)."""


def parse_request(body: object) -> ProduceRequest:
    """The JSON body of ``POST /api/produce``; raises ValueError with a readable reason.

    ``{"topic": str, "partition": int|null, "key": str|null, "value": str|null,
    "headers": [[name, value], ...]}`` - strings are sent as UTF-8.
    """
    if not isinstance(body, dict):
        raise ValueError("expected a JSON object")
    topic = body.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError("topic is required")
    partition = body.get("partition")
    if partition in ("", None):
        partition = None
    elif isinstance(partition, str) and partition.strip().isdigit():
        partition = int(partition)
    elif not isinstance(partition, int) or isinstance(partition, bool) or partition < 0:
        raise ValueError("partition must be a non-negative integer or empty")
    headers = []
    for item in body.get("headers") or []:
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or not all(isinstance(x, str) for x in item)
        ):
            raise ValueError("headers must be [name, value] pairs of strings")
        headers.append((item[0], item[1].encode("utf-8")))
    return ProduceRequest(
        topic=topic,
        partition=partition,
        key=_bytes(body.get("key"), "key"),
        value=_bytes(body.get("value"), "value"),
        headers=tuple(headers),
    )


def _bytes(value: object, name: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string or null")
    return value.encode("utf-8")


async def produce(
    bootstrap: str, request: ProduceRequest, *, limiter: trio.CapacityLimiter | None = None
) -> Delivered:
    """Produce one record with acks=all and wait for its delivery report (in a worker
    thread under ``limiter``: the console's own, not the one the broker's disk work uses)."""
    return await trio.to_thread.run_sync(_produce_blocking, bootstrap, request, limiter=limiter)


def _produce_blocking(bootstrap: str, request: ProduceRequest) -> Delivered:
    from confluent_kafka import KafkaError, KafkaException, Producer

    outcome: list[object] = []

    def on_delivery(error: object, message: object) -> None:
        outcome.append(error if error is not None else message)

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "client.id": "kafkette-console",
            "acks": "all",
            "enable.idempotence": False,
            "message.timeout.ms": int(DELIVERY_TIMEOUT_S * 1000),
        }
    )
    kwargs: dict[str, object] = {
        "key": request.key,
        "value": request.value,
        "on_delivery": on_delivery,
    }
    if request.headers:
        kwargs["headers"] = list(request.headers)
    if request.partition is not None:
        kwargs["partition"] = request.partition
    try:
        producer.produce(request.topic, **kwargs)
    except (KafkaException, BufferError, ValueError, TypeError) as exc:
        raise ProduceFailed(str(exc)) from None
    producer.flush(DELIVERY_TIMEOUT_S + 5)
    if not outcome:
        raise ProduceFailed("no delivery report within the timeout")
    result = outcome[0]
    if isinstance(result, KafkaError):
        raise ProduceFailed(f"{result.name()}: {result.str()}")
    return Delivered(result.topic(), result.partition(), result.offset())  # type: ignore[attr-defined]
