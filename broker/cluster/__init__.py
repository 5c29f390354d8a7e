"""kafkette as a cluster: brokers coordinated through ZooKeeper, as Kafka's 2.x brokers were.

Nothing here is imported by a single-node broker (no ``zookeeper.connect``):
``kafkette.broker.server`` and ``kafkette.broker.config`` import these modules
lazily, so a single node starts exactly as before, without kazoo.
"""
