"""The broker's network side: connections in, answers out.

- connection.py: one connection's loop (read frames, run handlers, answer in order);
- answer.py: the one way out of a connection: every response is throttled (client
  quotas), finished (its ``finish`` hook), encoded once and written here;
- finishing.py: ``FinishingAnswer``, a response with a last step that waits for the
  quota decision (a Fetch's session work);
- response_writer.py: a response's chunks onto the socket (sendfile, TLS pieces);
- request_memory.py: ``queued.max.request.bytes``, the bytes requests may hold;
- connection_limits.py: ``max.connections`` and ``max.connections.per.ip``.

The quota decisions themselves are broker/quotas/enforcement.py's; this package applies
them.
"""
