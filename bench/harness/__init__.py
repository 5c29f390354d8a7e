"""The harness behind ``python -m bench`` and the scripts beside it: starting brokers (kafkette,
Apache Kafka, peers), driving workloads, measuring processes, reporting; plus what the test
suites share with it: one ``kafkette serve`` child process handle (``serve_process``), one
raw request client (``raw_wire``) and the kill -9 loads (``crash_load``, ``txn_crash_load``).

Import-free, as ``bench`` itself: each module pulls in only what it needs.
"""
