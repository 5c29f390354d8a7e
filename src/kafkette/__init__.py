"""kafkette: a Kafka-wire-compatible broker in Python on Trio.

The code lives in three subpackages mapped from the repository's top-level
folders: ``kafkette.wire`` (the sans-I/O protocol codec), ``kafkette.log``
(the segmented partition log) and ``kafkette.broker`` (the Trio server).
"""

__version__ = "0.1.0"
