"""A follower's write, re-issued to the leader's registry, and the leader's answer relayed.

Only one broker writes ``_schemas`` (the leader of its partition, leader.py). A register,
delete, config or mode change that reaches another broker's registry is sent as the same
HTTP call (method, raw path, query string, body, and the ``Content-Type``, ``Accept`` and
``Authorization`` headers) to the leader's URL, and its status and body are answered
verbatim, as Confluent's followers do. The copy carries ``X-Kafkette-Forwarded: 1``: a
registry that receives a forwarded write and is not the leader either answers 50004 rather
than forwarding again, so a leadership change in flight can never make a loop.

A broker with no replica of ``_schemas`` sends its reads the same way (api.py), so forwards
are as frequent as such a broker's reads. Each is stdlib ``urllib`` in a worker thread, with
a 5 s timeout, abandoned if the request is cancelled; at most ``MAX_FORWARDS`` run at once
(a limiter of their own: an abandoned thread holds its token until its timeout, and must not
hold one the broker's disk work needs). The call goes straight to the leader: no proxy from
``HTTP(S)_PROXY`` (the leader is a peer on the cluster's network) and no redirect followed (a
3xx answer is relayed as it is).
"""

from __future__ import annotations

import http.client
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass, field

import trio
from trio.lowlevel import RunVar

FORWARDED_HEADER = "X-Kafkette-Forwarded"
FORWARD_TIMEOUT_S = 5.0
# Headers copied onto the forwarded call (lower case, as ASGI gives them).
COPIED_HEADERS = ("content-type", "accept", "authorization")
# At most this much of the leader's answer is relayed (more than any registry answer).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
MAX_FORWARDS = 8
_LIMITER: RunVar[trio.CapacityLimiter] = RunVar("schema_registry_forwards")


class ForwardingFailed(Exception):
    """The leader's registry could not be reached or did not answer."""


@dataclass(frozen=True)
class ForwardedCall:
    """What goes to the leader: the request as it arrived (path still percent-encoded)."""

    method: str
    raw_path: bytes
    query_string: bytes
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)  # lower-case names


@dataclass(frozen=True)
class LeaderAnswer:
    status: int
    body: bytes
    content_type: str | None
    # Where the leader's ``_schemas`` stood once the write was applied there
    # (``APPLIED_OFFSET_HEADER``): the follower waits for its own copy to get that far.
    applied_offset: int | None = None


# On a write's answer, the leader's applied ``_schemas`` offset: a follower that forwarded
# the write answers once it has applied that much itself, so its client reads its own write
# from the follower it wrote through (Confluent gives read-your-writes on the leader only).
APPLIED_OFFSET_HEADER = "X-Kafkette-Applied-Offset"


async def forward(
    leader_url: str, call: ForwardedCall, *, tls: ssl.SSLContext | None = None
) -> LeaderAnswer:
    """Send ``call`` to ``leader_url`` (``http(s)://host:port``) and return its answer,
    error statuses included; raises ``ForwardingFailed`` when there is no answer."""
    try:
        limiter = _LIMITER.get()
    except LookupError:
        limiter = trio.CapacityLimiter(MAX_FORWARDS)
        _LIMITER.set(limiter)
    return await trio.to_thread.run_sync(
        _send, leader_url, call, tls, abandon_on_cancel=True, limiter=limiter
    )


def forward_url(leader_url: str, call: ForwardedCall) -> str:
    url = leader_url.rstrip("/") + call.raw_path.decode("ascii", "replace")
    if call.query_string:
        url += "?" + call.query_string.decode("ascii", "replace")
    return url


def _send(leader_url: str, call: ForwardedCall, tls: ssl.SSLContext | None) -> LeaderAnswer:
    headers = {name: value for name, value in call.headers.items() if name in COPIED_HEADERS}
    headers[FORWARDED_HEADER] = "1"
    request = urllib.request.Request(
        forward_url(leader_url, call),
        data=call.body if call.method in ("POST", "PUT") else None,
        headers=headers,
        method=call.method,
    )
    context = tls if leader_url.lower().startswith("https:") else None
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}),  # not the environment's proxies
        _NoRedirect(),
        urllib.request.HTTPSHandler(context=context),
    )
    try:
        with opener.open(request, timeout=FORWARD_TIMEOUT_S) as answer:
            return LeaderAnswer(
                answer.status,
                answer.read(MAX_ANSWER_BYTES),
                answer.headers.get("Content-Type"),
                _offset(answer.headers.get(APPLIED_OFFSET_HEADER)),
            )
    except urllib.error.HTTPError as error:  # an answer, with an error status: relayed
        with error:
            body = error.read(MAX_ANSWER_BYTES)
        return LeaderAnswer(error.code, body, error.headers.get("Content-Type"))
    except (OSError, ValueError, http.client.HTTPException) as exc:  # no answer, bad URL
        raise ForwardingFailed(f"{leader_url}: {exc}") from exc


def _offset(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx from the leader is its answer (relayed), not a place to go."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
