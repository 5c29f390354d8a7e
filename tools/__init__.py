"""Client-side tools behind ``kafkette <subcommand>``: they talk to any Kafka-compatible broker.

Each module named in ``SUBCOMMAND_MODULES`` has ``register(commands)``, which adds its
subparser (with ``run`` set) to the ``kafkette`` command. Modules import their client library
(confluent-kafka), rich and the like inside ``run``, never at import time. The broker never
imports this package.
"""

SUBCOMMAND_MODULES = (
    "topics",
    "produce",
    "consume",
    "groups",
    "configs",
    "dump_log",
    "schemas",
    "metadata",
    "transactions",
    "acls",
    "users",
    "quotas",
    "reassign",
    "elect_leaders",
)
