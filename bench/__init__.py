"""kafkette's performance figures: the harness (``python -m bench``, ``bench.harness``) runs
kafkette side by side with peers; each other module here is a script that answers one question
(``python -m bench.<name>``, its docstring says which).

Kept import-free so that the scripts (``bench.log_bench``, ``bench.codec_bench``) do not pay for
the harness's dependencies (confluent-kafka, rich, matplotlib) when they are imported. Nothing in
bench imports ``tests/``; tests may import ``bench.harness`` (its broker process handle, its raw
wire client, its loads).
"""
