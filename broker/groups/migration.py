"""Moving a group between the classic and the consumer protocol (KIP-848).

A non-empty classic group is upgraded online when a consumer-protocol member joins
it (policy ``upgrade`` / ``bidirectional``); a consumer group whose last
consumer-protocol member left, with only classic members remaining, goes back to
the classic protocol (policy ``downgrade`` / ``bidirectional``). Kafka's
``validateOnlineUpgrade`` / ``validateOnlineDowngrade`` and their conversions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkette.wire.errors import ErrorCode

from .classic import DEAD, EMPTY, STABLE, ClassicGroups
from .context import GroupsContext
from .model import Group, Member, SyncResponse
from .subscription import CONSUMER_PROTOCOL_TYPE

if TYPE_CHECKING:
    from .consumer.state import ConsumerGroups


class Migration:
    """Upgrades and downgrades between the two protocols' groups of one coordinator."""

    def __init__(self, ctx: GroupsContext, classic: ClassicGroups) -> None:
        self._ctx = ctx
        self._classic = classic

    def upgrade_to_consumer(
        self, consumer: ConsumerGroups, group_id: str, topics, now_ms: int, join
    ):
        """KIP-848's online upgrade of a non-empty classic group, whatever its state
        (Kafka's validateOnlineUpgrade: protocol type ``consumer``, at most
        ``group.consumer.max.size`` members; the caller checked the policy). Its members
        move into a consumer group as classic members with their last assignment
        (possibly empty); ``join()`` (the triggering heartbeat) then runs on it. None when
        the group cannot be upgraded; else ``join()``'s result. If that result is an
        error, the conversion is undone (Kafka writes both or neither); else pending
        JoinGroup/SyncGroup calls are answered REBALANCE_IN_PROGRESS and the classic
        group keeps its offsets and an empty membership, persisted (a restart does not
        bring the members back)."""
        group = self._ctx.groups.get(group_id)
        if (
            group is None or not group.members or group.state is DEAD
            or group.protocol_type != CONSUMER_PROTOCOL_TYPE
            or len(group.members) > self._ctx.config.group_consumer_max_size
        ):
            return None
        members = []
        for m in group.members.values():
            chosen = [(n, meta) for n, meta in m.protocols if n == group.protocol_name]
            members.append({
                "member_id": m.member_id, "instance_id": m.group_instance_id,
                "client_id": m.client_id, "client_host": m.client_host,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "session_timeout_ms": m.session_timeout_ms,
                "protocols": chosen or list(m.protocols), "assignment": m.assignment,
            })
        try:
            consumer.upgrade_classic(group_id, group.generation_id, members, topics, now_ms)
        except ValueError:  # a member's metadata is not the consumer protocol's
            consumer.groups.pop(group_id, None)
            return None
        try:
            result = join()
        except BaseException:
            consumer.groups.pop(group_id, None)  # undone: the classic group is untouched
            raise
        if result.error != ErrorCode.NONE:
            consumer.groups.pop(group_id, None)  # undone: the classic group is untouched
            return result
        for m in group.members.values():
            if m.join_ticket is not None:
                self._ctx.join_error(m.join_ticket, m.member_id, ErrorCode.REBALANCE_IN_PROGRESS)
            if m.sync_ticket is not None:
                self._ctx.reply(m.sync_ticket, SyncResponse(ErrorCode.REBALANCE_IN_PROGRESS))
        group.members.clear()
        group.static_members.clear()
        group.pending_members.clear()
        group.pending_sync.clear()
        group.join_deadline_ms = None
        group.sync_deadline_ms = None
        group.initial_delay_active = False
        group.leader_id = None
        group.generation_id += 1
        group.state = EMPTY
        group.state_timestamp_ms = now_ms
        self._classic.write_metadata(group)
        return result

    def maybe_downgrade(
        self, consumer: ConsumerGroups | None, group_id: str, now_ms: int
    ) -> bool:
        """KIP-848's downgrade: once the last consumer-protocol member of a consumer group
        with classic members is gone (policy ``downgrade`` / ``bidirectional``), the
        classic members become a classic group again, which rebalances (they rejoin)."""
        config = self._ctx.config
        cg = None if consumer is None else consumer.groups.get(group_id)
        if (
            consumer is None or cg is None or not cg.members
            or any(m.classic is None for m in cg.members.values())
            or config.group_consumer_migration_policy not in ("downgrade", "bidirectional")
            or len(cg.members) > config.group_max_size  # Kafka's validateOnlineDowngrade
        ):
            return False
        common = set.intersection(
            *({name for name, _ in m.classic.protocols} for m in cg.members.values() if m.classic)
        )
        if not common:  # no protocol every member speaks: the group stays a consumer group
            return False
        from .consumer.embedded_protocol import encode_assignment

        group = self._ctx.groups.get(group_id)
        if group is None:
            group = Group(group_id, EMPTY, now_ms)
            self._ctx.groups[group_id] = group
        group.protocol_type = CONSUMER_PROTOCOL_TYPE
        # Kafka's: the consumer group's epoch (never below a generation the classic
        # group already used); a member that knows another generation rejoins.
        group.generation_id = max(cg.group_epoch, group.generation_id)
        for m in cg.members.values():
            assert m.classic is not None
            member = Member(
                m.member_id, m.instance_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE,
                list(m.classic.protocols),
                assignment=encode_assignment(consumer._ids_to_names(m.assigned)),
            )
            group.members[m.member_id] = member
            if m.instance_id is not None:
                group.static_members[m.instance_id] = m.member_id
            member.schedule_heartbeat(now_ms)
        group.leader_id = next(iter(group.members))
        group.protocol_name = self._classic.select_protocol(group)
        group.subscribed_topics = self._classic.compute_subscribed_topics(group)
        group.state = STABLE
        group.state_timestamp_ms = now_ms
        del consumer.groups[group_id]
        self._classic.write_metadata(group)
        self._classic.prepare_rebalance(group, now_ms)
        return True
