"""The transaction coordinator (KIP-98, KIP-447; KIP-890 parts 1 and 2).

Kafka's protocols v1 and v2 (transaction.version 2: an epoch bump per transaction,
partitions added by the leaders the client writes to), each request served by the
version it comes in, as Kafka does. ``state`` is the pure state machine, ``log_records``
the ``__transaction_state`` record layout, ``markers`` writes COMMIT/ABORT control
batches, ``remote_markers`` the requests to other brokers (markers, TV2's adds),
``coordinator`` is the trio glue the handlers call. Kept import-light: ``broker.config``
imports ``transactions.config`` at start.
"""
