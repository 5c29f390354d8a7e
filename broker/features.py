"""The feature levels kafkette serves (KIP-584), as ApiVersions and UpdateFeatures report them.

Kafka 4.0 finalizes its features in the metadata log and lets an operator move
them with ``kafka-features.sh``; each level switches a behaviour on (group.version
1 turns on the KIP-848 consumer group protocol, transaction.version 2 the KIP-890
part 2 transaction protocol). kafkette's levels are not switchable: each feature is
always finalized at the one level kafkette serves. A client then reads what kafkette
really does: KIP-848 groups are served (group.version 1), transactions are KIP-890
part 2 (transaction.version 2, Kafka 4.0's default: clients that know it bump the
epoch at every EndTxn v5 and let Produce 12+ and TxnOffsetCommit 5 add partitions),
the metadata is Kafka 4.0's (metadata.version 4.0-IV3, 25) with a static single
voter (kraft.version 0) and no eligible leader replicas (0).

The supported range is that one level, except for transaction.version, which
reports Kafka 4.0's 0-2: kafkette serves the clients of every level at once (the
coordinator follows each request's version, as Kafka does: librdkafka, kafka-python,
aiokafka and the Java 3.x client keep the v1 protocol), so levels 0 and 1 are
supported in that sense; they cannot be finalized, though. Kafka 4.0 lets an
operator downgrade transaction.version (``kafka-features.sh downgrade``);
kafkette refuses that with INVALID_UPDATE_VERSION and says why (a known difference,
docs/transactions.md).

As in Kafka, a feature at level 0 is supported but not listed among the finalized
features, and UpdateFeatures refuses, with Kafka's messages, any level outside
the supported range; a request for the level already finalized succeeds and
changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

# Kafka's epoch is the offset of the last feature record; kafkette's levels never
# change, so one fixed epoch (clients only compare it with the one they saw last).
FINALIZED_FEATURES_EPOCH = 0

# UpdateFeatures upgrade types (v1+); v0's allow_downgrade maps to SAFE_DOWNGRADE.
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


@dataclass(frozen=True, slots=True)
class Feature:
    name: str
    min_version: int
    max_version: int
    finalized: int


FEATURES: tuple[Feature, ...] = (
    Feature("metadata.version", 25, 25, 25),  # 4.0-IV3, Kafka 4.0's latest
    Feature("kraft.version", 0, 0, 0),
    Feature("group.version", 1, 1, 1),
    Feature("transaction.version", 0, 2, 2),  # Kafka 4.0's range and default
    Feature("eligible.leader.replicas.version", 0, 0, 0),
    Feature("share.version", 1, 1, 1),  # KIP-932 share groups (Kafka 4.2+ finalizes 1)
)
BY_NAME = {f.name: f for f in FEATURES}
# The finalized transaction.version: the one the coordinator uses for what it does on its
# own (aborting a timed-out or fenced transaction) and for its records' layout, as Kafka.
TRANSACTION_VERSION = BY_NAME["transaction.version"].finalized


SHARE_VERSION = "share.version"


def supported_features(api_version: int = 4, share_groups: bool = True) -> list[dict]:
    """ApiVersions v3+ ``supported_features`` (``share.version`` only with
    ``share_groups``: where the topology serves them).

    Before ApiVersions v4 a feature whose minimum supported level is 0 is left out,
    as Kafka 4.0 does (KAFKA-17011): older clients (the Java client before 3.9)
    reject a supported range starting at 0 and would fail the whole answer."""
    return [
        {"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
        for f in FEATURES
        if (api_version >= 4 or f.min_version > 0) and (share_groups or f.name != SHARE_VERSION)
    ]


def finalized_features(share_groups: bool = True) -> list[dict]:
    """ApiVersions v3+ ``finalized_features``: those above level 0, as Kafka lists them."""
    return [
        {"name": f.name, "max_version_level": f.finalized, "min_version_level": f.finalized}
        for f in FEATURES
        if f.finalized > 0 and (share_groups or f.name != SHARE_VERSION)
    ]


def update_problem(name: str, level: int, upgrade_type: int, node_id: int) -> str | None:
    """Why ``name`` cannot be set to ``level`` (Kafka's wording), or None if it can.

    The checks run in Kafka 4.0's controller order (measured on the reference): the
    upgrade type, a negative level, whether this node serves the feature at that
    level, and only then whether the change is an upgrade or a downgrade."""
    feature = BY_NAME.get(name)
    prefix = f"Invalid update version {level} for feature {name}."
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return f"{prefix} The controller does not support the given upgrade type."
    if level < 0:
        return f"{prefix} A feature version cannot be less than 0."
    if feature is None:
        if level == 0:
            return f"{prefix} Feature {name} not found."
        return f"{prefix} Local controller {node_id} does not support this feature."
    if not feature.min_version <= level <= feature.max_version:
        return (
            f"{prefix} Local controller {node_id} only supports versions "
            f"{feature.min_version}-{feature.max_version}"
        )
    if level < feature.finalized and upgrade_type == UPGRADE:
        return (
            f"{prefix} Can't downgrade the version of this feature without setting the "
            "upgrade type to either safe or unsafe downgrade."
        )
    if level > feature.finalized and upgrade_type != UPGRADE:
        return f"{prefix} Can't downgrade to a newer version."
    if level != feature.finalized:
        # Kafka would downgrade; kafkette's levels are fixed (transaction.version only:
        # the other features support their finalized level alone).
        return (
            f"{prefix} kafkette keeps {name} finalized at {feature.finalized}: "
            "its feature levels cannot be changed."
        )
    return None
