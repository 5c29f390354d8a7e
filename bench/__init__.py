"""kafkette's performance harness: ``python -m bench`` runs kafkette side by side with peers.

Kept import-free so that sibling scripts (``bench.log_bench``, ``bench.codec_bench``) do not pay
for the harness's dependencies (confluent-kafka, rich, matplotlib) when they are imported.
"""
