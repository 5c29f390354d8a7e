"""The partitions this broker serves: the one door to a partition's data and role.

``Partition`` (``partition.py``) appends, truncates, reads and answers for the
leader/follower role; produce's ordered multi-partition append is ``append.py``.
Which partition a request is served by (or the error to answer) is
``TopicRegistry.serving`` (``broker/topics.py``).
"""

from kafkette.broker.partitions.partition import LEADER_EPOCH, Partition

__all__ = ["LEADER_EPOCH", "Partition"]
