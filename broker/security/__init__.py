"""Security: listeners and TLS, SASL authentication, and the ACL authorizer.

Each connection carries a ``Session`` (``session.py``): the listener it came in on,
its security protocol, the client's address and, once authenticated, its principal.
Handlers ask ``broker.authorizer`` whether that principal may do what it asks; with no
authorizer configured (the development default) everything is allowed, as in Kafka.
"""
