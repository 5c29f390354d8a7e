"""Helpers for the client compatibility suite: one driver per client family, the broker
fixture's process handling, and the outcome recorder. Imported by ``conftest.py``, which puts
``compat-tests/`` on ``sys.path`` (the folder name has a hyphen, so it is not a package)."""
