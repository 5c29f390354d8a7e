"""kafkette as a cluster: brokers coordinated through ZooKeeper (only with zookeeper.connect)."""
