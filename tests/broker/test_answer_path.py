"""The answer path without a socket (broker/network/answer.py): an answer's finish hook runs
once, before the one encoding; a throttled answer's shape (broker/quotas/enforcement.py) is a
new dict, never the handler's. (Throttling on real connections: test_client_quotas.py.)"""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from kafkette.broker.network.answer import AnswerPath
from kafkette.broker.network.finishing import FinishingAnswer
from kafkette.broker.quotas.enforcement import throttled_response
from kafkette.wire.apis import ApiKey, api_spec
from kafkette.wire.connection import Request, RequestHeader, ServerConnection


def _request(api_key: ApiKey, version: int, correlation_id: int = 7) -> Request:
    header = RequestHeader(api_key, version, correlation_id, "answer-path-test", False)
    return Request(header, api_spec(api_key), {}, 0)  # type: ignore[arg-type]


def test_the_finish_hook_runs_once_before_the_answer_is_encoded() -> None:
    seen: list[bool] = []

    def finish(answer: FinishingAnswer, throttled: bool) -> bool:
        seen.append(throttled)
        answer["error_code"] = 35
        return True

    async def main() -> None:
        out, client = trio.testing.memory_stream_pair()
        broker = SimpleNamespace(client_quotas=SimpleNamespace(active=False))
        answers = AnswerPath(broker, ServerConnection(), out)  # type: ignore[arg-type]
        response = FinishingAnswer({"error_code": 0, "api_keys": []}, finish)
        answers.begin()
        await answers.answer(_request(ApiKey.API_VERSIONS, 0), response, accounted=True)
        await answers.after()
        data = await client.receive_some()
        assert len(data) == answers.response_bytes == 4 + 4 + 2 + 4
        assert data[4:8] == (7).to_bytes(4, "big")  # the correlation id
        assert data[8:10] == (35).to_bytes(2, "big")  # what the hook wrote
        assert seen == [False]
        assert response.finish(False) is False  # the hook is spent
        assert seen == [False]

    trio.run(main)


def test_a_throttled_fetch_answer_has_no_partitions_and_carries_the_throttle() -> None:
    header = RequestHeader(ApiKey.FETCH, 12, 1, "c", True)
    answer = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 5,
        "responses": [{"topic": "t", "partitions": []}],
    }
    throttled = throttled_response(header, answer, 250)
    assert throttled == {"error_code": 0, "session_id": 5, "responses": [], "throttle_time_ms": 250}
    assert answer["responses"] == [{"topic": "t", "partitions": []}]


def test_a_throttled_answer_is_a_copy_where_the_response_has_the_field() -> None:
    cached = {"error_code": 0, "api_keys": [], "throttle_time_ms": 0}
    with_field = RequestHeader(ApiKey.API_VERSIONS, 1, 1, "c", False)
    assert throttled_response(with_field, cached, 40)["throttle_time_ms"] == 40
    assert cached["throttle_time_ms"] == 0
    without_field = RequestHeader(ApiKey.API_VERSIONS, 0, 1, "c", False)
    assert throttled_response(without_field, cached, 40) is cached
