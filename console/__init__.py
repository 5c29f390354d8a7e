"""kafkette's web console: topics, a message browser, consumer groups, served by the broker.

``kafkette serve --ui`` runs it in the broker process (an ASGI app on hypercorn's Trio
worker). It reads the broker only through ``kafkette.broker.state_view.BrokerStateView``
and writes (produce a record, with ``--ui-allow-writes``) only as a Kafka client would,
through the broker's own listener. See docs/operations.md, "Web console".
"""
