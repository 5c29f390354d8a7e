"""The fault-injection harness of issue 34: a cluster in network namespaces, faults, checks."""
