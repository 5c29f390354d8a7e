"""What the broker tells about itself: the request log, JSON log lines, Prometheus metrics.

See docs/operations.md ("Request log", "Metrics").
"""
