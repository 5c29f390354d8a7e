"""The broker's network side: connections in, answers out.

- connection.py: one connection's loop (read frames, run handlers, answer in order);
- response_writer.py: a response's chunks onto the socket (sendfile, TLS pieces);
- request_memory.py: ``queued.max.request.bytes``, the bytes requests may hold;
- connection_limits.py: ``max.connections`` and ``max.connections.per.ip``.
"""
