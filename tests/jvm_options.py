"""How the suite's short-lived JVMs run: Kafka's tools and the reference broker (the root
conftest.py), Spark's driver (spark-examples/tests), the Streams apps and the Java clients of
compat-tests. They live seconds and do little work, so they take the client compiler alone and
the serial collector: Java's defaults (the server compiler, G1) spend more CPU starting than
the work does, CPU the rest of the suite running beside them gets back. One list, so every
launcher says the same.
"""

SHORT_RUN_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
