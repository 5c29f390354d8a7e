"""KIP-227 incremental fetch sessions.

A consumer (or follower) reading many partitions sends them all once, in a
*full* fetch; the broker keeps them in a session and answers with its id. From
then on the client sends only what changed (new fetch offsets, partitions to add,
``forgotten_topics_data`` to drop), and the broker answers only the partitions
with something new (records, a moved high watermark or log start, an error).
With thousands of partitions that removes most of the bytes of every fetch.

``cache.py`` holds the sessions (``max.incremental.fetch.session.cache.slots``,
Kafka's eviction rules); ``context.py`` turns a request's session id and epoch
into what the Fetch handler must do (sessionless, full, incremental, or an error);
``responses.py`` picks the partitions an incremental answer carries; ``answer.py``
holds the session work an answer does once it is known not to be throttled (the
``finish`` hook the answer path runs, broker/network/finishing.py).
"""

from kafkette.broker.fetch_sessions.answer import creating_session, updating_session
from kafkette.broker.fetch_sessions.cache import (
    CachedPartition,
    FetchSession,
    FetchSessionCache,
)
from kafkette.broker.fetch_sessions.context import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    FetchContext,
    open_context,
)
from kafkette.broker.fetch_sessions.responses import incremental_answer, new_session_partitions

__all__ = [
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "CachedPartition",
    "FetchContext",
    "FetchSession",
    "FetchSessionCache",
    "creating_session",
    "incremental_answer",
    "new_session_partitions",
    "open_context",
    "updating_session",
]
