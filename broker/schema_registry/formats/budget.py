"""A bound on the work of one compatibility check.

The diffs run in the broker, on schemas any client sends, and a few hundred bytes of schema
can describe a graph whose walk is exponential (a chain of ``anyOf`` through ``$ref``s, message
fields through references). The walks memoise what they can; every comparison and every
difference copied from the memo also spends a step of a ``Budget``, and a check that runs out
raises ``SchemaFormatError(TOO_COMPLEX)``. So does one nested too deeply for Python's stack.

That is not an incompatibility (the schemas may well be compatible): ``levels.check_level``
lets it propagate, and the registry answers it as an invalid schema (422, 42201, this text),
never as 409.
"""

from __future__ import annotations

from kafkette.broker.schema_registry.formats import SchemaFormatError

TOO_COMPLEX = "schema too complex to compare"
STEPS = 100_000  # per check: about a second of work at most


class Budget:
    """The steps one check may still take (``STEPS`` unless told)."""

    def __init__(self, steps: int | None = None) -> None:
        self.left = STEPS if steps is None else steps

    def spend(self, steps: int = 1) -> None:
        """Take ``steps``; raises ``SchemaFormatError(TOO_COMPLEX)`` past the bound."""
        self.left -= steps
        if self.left < 0:
            raise SchemaFormatError(TOO_COMPLEX)
