"""The transaction coordinator (KIP-98, KIP-447; Kafka's transaction protocol v1).

``state`` is the pure state machine, ``log_records`` the ``__transaction_state``
record layout, ``markers`` writes COMMIT/ABORT control batches, ``coordinator``
is the trio glue the handlers call. Kept import-light: ``broker.config``
imports ``transactions.config`` at start.
"""
