"""Share groups (KIP-932, "queues for Kafka"): many consumers reading the same partitions, each
record delivered to one of them at a time and acknowledged one by one. The package holds the
pieces as Kafka splits them: the share group coordinator (membership and assignment, like the
consumer groups' KIP-848 state machine), the per-share-partition delivery state a partition's
leader keeps for each group (``delivery_state``: which records are in flight, who holds them,
how often each was delivered, and what of it is persisted in ``__share_group_state``), and the
share sessions through which ShareFetch and ShareAcknowledge name their partitions. Like the
other coordinators, the state machines are pure (no I/O, no clock, no trio) and the broker
drives them.
"""
