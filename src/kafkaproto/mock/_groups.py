"""Group coordination: the classic protocol (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup; rebalances, session timeouts, KIP-394's member id
round trip), the consumer protocol of KIP-848 (ConsumerGroupHeartbeat with
server-side assignment and revocation before reassignment,
ConsumerGroupDescribe) and committed offsets (OffsetCommit, OffsetFetch,
OffsetDelete, DeleteGroups, ListGroups, DescribeGroups, FindCoordinator)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid

from .. import messages as M
from ..error_codes import ErrorCode as E

INT32_MIN = -(1 << 31)


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


class ClassicGroup:
    """A classic group: members join, the leader assigns, everyone syncs."""

    kind = "classic"

    def __init__(self):
        # member id -> {"protocols", "timeout" (rebalance), "session", "client", "instance", "assignment", "seen"}
        self.members: dict[str, dict] = {}
        # member ids handed out by MEMBER_ID_REQUIRED, not joined yet -> when they lapse (ms: the
        # session timeout of the JoinGroup that asked); a rebalance waits for them, as Kafka's does
        self.pending: dict[str, float] = {}
        self.joining: dict = {}  # member id -> future of its JoinGroup response
        self.syncing: dict = {}  # member id -> future of its SyncGroup response
        self.generation, self.leader, self.protocol, self.protocol_type = 0, "", None, None
        self.state, self.timer = "Empty", None  # -> PreparingRebalance -> CompletingRebalance -> Stable
        self.offsets: dict = {}  # (topic, partition) -> (offset, leader epoch, metadata)

    def rebalance(self):
        """Every member must join again; done when all have, or the longest rebalance timeout passes."""
        if self.state != "PreparingRebalance":
            self.state = "PreparingRebalance"
            self.answer_syncs(lambda member_id: M.SyncGroupResponse(error_code=E.REBALANCE_IN_PROGRESS))
            wait = max((m["timeout"] for m in self.members.values()), default=0) / 1000
            if self.timer is not None:
                self.timer.cancel()
            self.timer = asyncio.get_running_loop().call_later(wait, self.complete)
        if self.all_joined():
            self.complete()

    def all_joined(self) -> bool:
        """Every member has sent its JoinGroup, and no member id handed out waits for one (Kafka's rule)."""
        return self.joining.keys() >= self.members.keys() and not self.pending

    def complete(self):
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.members = {k: m for k, m in self.members.items() if k in self.joining}  # the others are out
        if not self.members:
            self.state, self.protocol = "Empty", None
            self.generation += 1
            return
        self.state, self.generation = "CompletingRebalance", self.generation + 1
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self.protocol = next((p for p in self.members[self.leader]["protocols"]
                              if all(p in m["protocols"] for m in self.members.values())), "")
        R = M.JoinGroupResponse
        metadata = [R.JoinGroupResponseMember(member_id=k, group_instance_id=m["instance"],
                                              metadata=m["protocols"][self.protocol])
                    for k, m in self.members.items()]
        now = _monotonic_ms()
        for member_id, fut in self.joining.items():  # the leader gets every member's metadata, to assign
            self.members[member_id]["seen"] = now
            if not fut.done():
                fut.set_result(R(generation_id=self.generation, protocol_type=self.protocol_type,
                                 protocol_name=self.protocol, leader=self.leader, member_id=member_id,
                                 members=metadata if member_id == self.leader else []))
        self.joining.clear()

    def answer_syncs(self, response):
        for member_id, fut in self.syncing.items():
            if not fut.done():
                fut.set_result(response(member_id))
        self.syncing.clear()

    def assignment(self, member_id):
        return M.SyncGroupResponse(protocol_type=self.protocol_type, protocol_name=self.protocol,
                                   assignment=self.members[member_id].get("assignment", b""))

    def check(self, member_id, generation):
        """The error code for a member's Heartbeat, SyncGroup or OffsetCommit (0: none)."""
        if member_id not in self.members:
            return E.UNKNOWN_MEMBER_ID
        if generation != self.generation:
            return E.ILLEGAL_GENERATION
        self.members[member_id]["seen"] = _monotonic_ms()
        return E.REBALANCE_IN_PROGRESS if self.state == "PreparingRebalance" else 0

    def remove(self, member_id):
        self.members.pop(member_id, None)
        if member_id in self.joining:
            fut = self.joining.pop(member_id)
            if not fut.done():
                fut.set_result(M.JoinGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
        if member_id in self.syncing:
            fut = self.syncing.pop(member_id)
            if not fut.done():
                fut.set_result(M.SyncGroupResponse(error_code=E.UNKNOWN_MEMBER_ID))
        if self.members:
            self.rebalance()
        elif self.state != "Empty":
            self.complete()

    def expire(self, now: float) -> None:
        """Members whose session timed out leave (Kafka's heartbeat expiry), in a
        rebalance too: those waiting for their JoinGroup or SyncGroup answer
        have the rebalance timeout instead.  Member ids handed out and not
        joined with lapse after their session timeout; a rebalance that
        waited only for them completes."""
        for member_id, deadline in list(self.pending.items()):
            if now > deadline:
                del self.pending[member_id]
        for member_id, m in list(self.members.items()):
            if member_id not in self.syncing and member_id not in self.joining and now - m["seen"] > m["session"]:
                self.remove(member_id)
        if self.state == "PreparingRebalance" and self.all_joined():
            self.complete()

    @property
    def empty(self) -> bool:
        return not self.members

    def describe(self, group_id):
        """As Kafka describes a group: members' metadata and assignments only once it is Stable."""
        R = M.DescribeGroupsResponse
        stable = self.state == "Stable"
        return R.DescribedGroup(
            group_id=group_id, group_state=self.state, protocol_type=self.protocol_type or "",
            protocol_data=self.protocol if stable else "",
            members=[R.DescribedGroupMember(member_id=k, group_instance_id=m["instance"], client_id=m["client"][0],
                                            client_host="/" + m["client"][1],
                                            member_metadata=m["protocols"].get(self.protocol, b"") if stable else b"",
                                            member_assignment=m.get("assignment", b"") if stable else b"")
                     for k, m in self.members.items()])


class ConsumerMember:
    __slots__ = ("id", "instance", "rack", "client", "subscribed", "regex", "epoch", "assigned", "revoking",
                 "sent", "rebalance_timeout", "assignor", "seen")

    def __init__(self, member_id, client):
        self.id, self.client = member_id, client
        self.instance = self.rack = self.regex = self.assignor = None
        self.subscribed: list[str] = []
        self.epoch = 0
        self.assigned: set = set()  # (topic name, partition) the member was told it owns
        self.revoking = False
        self.sent = None  # the assignment last sent, to send only changes
        self.rebalance_timeout = 300000
        self.seen = _monotonic_ms()


class ConsumerGroup:
    """A group of the consumer protocol (KIP-848): the coordinator assigns."""

    kind = "consumer"
    protocol_type = "consumer"

    def __init__(self):
        self.members: dict[str, ConsumerMember] = {}
        self.epoch = 0
        self.assignment_epoch = 0
        self.target: dict[str, set] = {}
        self.offsets: dict = {}

    @property
    def empty(self) -> bool:
        return not self.members

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.epoch:
            return "Assigning"
        if any(m.epoch != self.epoch or m.assigned != self.target.get(m.id, set()) for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def compute_target(self, topics) -> dict[str, set]:
        """The range assignment per topic: each topic's partitions split in
        runs over the members subscribed to it (member ids in order)."""
        target = {m: set() for m in self.members}
        names = sorted({t for m in self.members.values() for t in m.subscribed})
        for name in names:
            topic = topics.get(name)
            if topic is None:
                continue
            subs = sorted(m.id for m in self.members.values() if name in m.subscribed)
            n = len(topic.partitions)
            per, extra = divmod(n, len(subs))
            at = 0
            for k, member_id in enumerate(subs):
                take = per + (1 if k < extra else 0)
                target[member_id].update((name, p) for p in range(at, at + take))
                at += take
        return target

    def refresh(self, topics, changed: bool = False) -> None:
        """A new target assignment, and group epoch, when members or their
        subscriptions ``changed`` or the topics they subscribe to did."""
        target = self.compute_target(topics)
        if changed or target != self.target:
            self.epoch += 1
            self.target = target
        self.assignment_epoch = self.epoch

    def reconcile(self, member: ConsumerMember, owned) -> None:
        """Move ``member`` toward its target: what it must give up first, then
        (once it says it has) the new epoch and the partitions no one else holds."""
        target = self.target.get(member.id, set())
        if member.revoking and owned is not None and owned <= member.assigned:
            member.revoking = False
        if member.revoking:
            return
        if member.assigned - target:
            member.assigned &= target
            member.revoking = True
            return
        held = {tp for m in self.members.values() if m is not member for tp in m.assigned}
        member.assigned |= {tp for tp in target if tp not in held}
        member.epoch = self.epoch

    def remove(self, member_id, topics) -> None:
        if self.members.pop(member_id, None) is not None:
            self.refresh(topics, changed=True)

    def expire(self, now: float, session_ms: float, topics) -> None:
        for member_id, m in list(self.members.items()):
            if now - m.seen > session_ms:
                self.remove(member_id, topics)


class GroupHandlers:
    def __init__(self):
        self.groups: dict[str, ClassicGroup | ConsumerGroup] = {}
        self._sweeper = None

    def start_sweeper(self) -> None:
        """Expire members whose sessions timed out, twice a second."""
        async def sweep():
            while True:
                await asyncio.sleep(0.5)
                now = _monotonic_ms()
                for g in list(self.groups.values()):
                    if isinstance(g, ConsumerGroup):
                        g.expire(now, self.group_session_timeout_ms, self.topics)
                    else:
                        g.expire(now)
                self.expire_transactions()

        self._sweeper = asyncio.ensure_future(sweep())

    def _coordinator_error(self, ctx, key: str) -> int:
        return 0 if self.coordinator(key) == ctx.node.id else E.NOT_COORDINATOR

    def _classic(self, group_id, create=False):
        g = self.groups.get(group_id)
        if g is None and create:
            g = self.groups[group_id] = ClassicGroup()
        return g

    # -- FindCoordinator -----------------------------------------------------------

    def find_coordinator(self, ctx, m, v):
        R = M.FindCoordinatorResponse
        keys = list(m.coordinator_keys) if v >= 4 else [m.key]
        out = []
        for key in keys:
            if m.key_type not in (0, 1):
                out.append(R.Coordinator(key=key, node_id=-1, host="", port=-1, error_code=E.INVALID_REQUEST))
                continue
            node = self.coordinator(key)
            if node == -1:
                out.append(R.Coordinator(key=key, node_id=-1, host="", port=-1,
                                         error_code=E.COORDINATOR_NOT_AVAILABLE))
                continue
            out.append(R.Coordinator(key=key, node_id=node, host=self.nodes[node].host, port=self.nodes[node].port))
        if v >= 4:
            return R(coordinators=out)
        c = out[0]
        return R(error_code=c.error_code, node_id=c.node_id, host=c.host, port=c.port)

    # -- the classic protocol --------------------------------------------------------

    async def join_group(self, ctx, m, v):
        def R(**kw):  # an error's answer names no protocol (null where the version allows it)
            kw.setdefault("protocol_name", None if v >= 7 else "")
            return M.JoinGroupResponse(**kw)

        error = self._coordinator_error(ctx, m.group_id)
        if not error and not m.group_id:
            error = E.INVALID_GROUP_ID
        if not error and not 6000 <= m.session_timeout_ms <= 1800000:  # group.min/max.session.timeout.ms
            error = E.INVALID_SESSION_TIMEOUT
        if error:
            return R(error_code=error, member_id=m.member_id)
        g = self.groups.get(m.group_id)
        if isinstance(g, ConsumerGroup):
            if not g.empty:
                return R(error_code=E.INCONSISTENT_GROUP_PROTOCOL, member_id=m.member_id)
            del self.groups[m.group_id]
            g = None
        g = self._classic(m.group_id, create=True)
        if g.protocol_type is not None and g.members and m.protocol_type != g.protocol_type:
            return R(error_code=E.INCONSISTENT_GROUP_PROTOCOL, member_id=m.member_id)
        instance = m.group_instance_id if v >= 5 else None
        member_id = m.member_id
        if instance is not None:
            known = next((k for k, x in g.members.items() if x["instance"] == instance), None)
            if not member_id:
                member_id = known or f"{instance}-{uuid.uuid4()}"
                if known and known != member_id:
                    g.members[member_id] = g.members.pop(known)
            elif known is not None and known != member_id:
                return R(error_code=E.FENCED_INSTANCE_ID, member_id=member_id)
        elif not member_id:
            member_id = f"{ctx.client_id}-{uuid.uuid4()}"
            theirs = [x["protocols"] for x in g.members.values()]
            if not m.protocols or not any(all(p.name in o for o in theirs) for p in m.protocols):
                return R(error_code=E.INCONSISTENT_GROUP_PROTOCOL, member_id="")
            if v >= 4:  # KIP-394: the member id first, then the join with it
                g.pending[member_id] = _monotonic_ms() + m.session_timeout_ms
                return R(error_code=E.MEMBER_ID_REQUIRED, member_id=member_id)
        elif member_id not in g.members and member_id not in g.pending:
            return R(error_code=E.UNKNOWN_MEMBER_ID, member_id=member_id)
        g.pending.pop(member_id, None)
        protocols = {p.name: bytes(p.metadata) for p in m.protocols}
        others = [x["protocols"] for k, x in g.members.items() if k != member_id]
        if not protocols or not any(all(p in o for o in others) for p in protocols):
            return R(error_code=E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id)
        timeout = m.rebalance_timeout_ms if v >= 1 and m.rebalance_timeout_ms >= 0 else m.session_timeout_ms
        old = g.members.get(member_id, {})
        if old and old["protocols"] == protocols and g.state in ("Stable", "CompletingRebalance") \
                and (g.state == "CompletingRebalance" or member_id != g.leader):
            # Kafka's rule: a member that joins again unchanged gets the current generation, no rebalance
            # (in Stable, the leader's join starts one: it may have new assignments to make)
            old["seen"] = _monotonic_ms()
            leader = member_id == g.leader
            return M.JoinGroupResponse(
                generation_id=g.generation, protocol_type=g.protocol_type, protocol_name=g.protocol,
                leader=g.leader, member_id=member_id, members=[
                    M.JoinGroupResponse.JoinGroupResponseMember(member_id=k, group_instance_id=x["instance"],
                                                               metadata=x["protocols"][g.protocol])
                    for k, x in g.members.items()] if leader else [])
        g.members[member_id] = {"protocols": protocols, "timeout": timeout, "session": m.session_timeout_ms,
                                "client": (ctx.client_id, ctx.host), "instance": instance,
                                "assignment": old.get("assignment", b""), "seen": _monotonic_ms()}
        g.protocol_type = m.protocol_type
        if member_id in g.joining:  # joined twice: the first request must be answered too
            fut = g.joining[member_id]
            if not fut.done():
                fut.set_result(R(error_code=E.REBALANCE_IN_PROGRESS, member_id=member_id))
        g.joining[member_id] = fut = asyncio.get_running_loop().create_future()
        g.rebalance()
        return await fut

    async def sync_group(self, ctx, m, v):
        R = M.SyncGroupResponse
        error = self._coordinator_error(ctx, m.group_id)
        g = self._classic(m.group_id)
        if not error:
            error = g.check(m.member_id, m.generation_id) if isinstance(g, ClassicGroup) else E.UNKNOWN_MEMBER_ID
        if not error and v >= 5 and (m.protocol_type not in (None, g.protocol_type)
                                     or m.protocol_name not in (None, g.protocol)):
            error = E.INCONSISTENT_GROUP_PROTOCOL
        if error:
            return R(error_code=error)
        if g.state == "Stable":
            return g.assignment(m.member_id)
        if m.member_id != g.leader:  # wait for the leader's assignments
            g.syncing[m.member_id] = fut = asyncio.get_running_loop().create_future()
            return await fut
        for a in m.assignments:
            if a.member_id in g.members:
                g.members[a.member_id]["assignment"] = bytes(a.assignment)
        g.state = "Stable"
        g.answer_syncs(g.assignment)
        return g.assignment(m.member_id)

    def heartbeat(self, ctx, m, v):
        error = self._coordinator_error(ctx, m.group_id)
        g = self._classic(m.group_id)
        if not error:
            error = g.check(m.member_id, m.generation_id) if isinstance(g, ClassicGroup) else E.UNKNOWN_MEMBER_ID
        return M.HeartbeatResponse(error_code=error)

    def leave_group(self, ctx, m, v):
        R = M.LeaveGroupResponse
        error = self._coordinator_error(ctx, m.group_id)
        if error:
            return R(error_code=error)
        g = self._classic(m.group_id)
        if v >= 3:
            leaving = [(x.member_id, x.group_instance_id) for x in m.members]
        else:
            leaving = [(m.member_id, None)]
        if not isinstance(g, ClassicGroup):
            if v < 3:
                return R(error_code=E.UNKNOWN_MEMBER_ID)
            return R(members=[R.MemberResponse(member_id=i, group_instance_id=inst, error_code=E.UNKNOWN_MEMBER_ID)
                              for i, inst in leaving])
        out = []
        for member_id, instance in leaving:
            if instance is not None and not member_id:
                member_id = next((k for k, x in g.members.items() if x["instance"] == instance), "")
            if member_id not in g.members:
                out.append(R.MemberResponse(member_id=member_id, group_instance_id=instance,
                                            error_code=E.UNKNOWN_MEMBER_ID))
                continue
            g.remove(member_id)
            out.append(R.MemberResponse(member_id=member_id, group_instance_id=instance))
        if v < 3:
            return R(error_code=out[0].error_code)
        return R(members=out)

    # -- the consumer protocol (KIP-848) ---------------------------------------------------

    def consumer_group_heartbeat(self, ctx, m, v):
        R = M.ConsumerGroupHeartbeatResponse
        error = self._coordinator_error(ctx, m.group_id)
        if not error and not m.group_id:
            error = E.INVALID_REQUEST
        if error:
            return R(error_code=error, member_id=m.member_id or None)
        g = self.groups.get(m.group_id)
        if isinstance(g, ClassicGroup):
            if not g.empty:
                return R(error_code=E.GROUP_ID_NOT_FOUND, member_id=m.member_id or None,
                         error_message=f"group {m.group_id} uses the classic protocol")
            g = None
        if g is None:
            old = self.groups.get(m.group_id)
            g = self.groups[m.group_id] = ConsumerGroup()
            if old is not None:
                g.offsets = old.offsets
        if m.member_epoch in (-1, -2):  # leaving (-2: a static member, for now)
            g.remove(m.member_id, self.topics)
            return R(member_id=m.member_id, member_epoch=m.member_epoch)
        member = g.members.get(m.member_id)
        if m.member_epoch == 0:
            if not m.member_id and v >= 1:
                return R(error_code=E.INVALID_REQUEST, error_message="a member id is required")
            if not m.subscribed_topic_names and not m.subscribed_topic_regex and member is None:
                return R(error_code=E.INVALID_REQUEST, error_message="no subscription")
            member_id = m.member_id or str(uuid.uuid4())
            if member is not None:
                g.remove(member_id, self.topics)
            member = g.members[member_id] = ConsumerMember(member_id, (ctx.client_id, ctx.host))
            changed = True
        elif member is None:
            return R(error_code=E.UNKNOWN_MEMBER_ID, member_id=None,
                     error_message=f"Member {m.member_id} is not a member of group {m.group_id}.")
        elif m.member_epoch != member.epoch:
            return R(error_code=E.FENCED_MEMBER_EPOCH, member_id=None,
                     error_message=f"The consumer group member has a smaller member epoch ({member.epoch}) than the "
                                   f"one known by the group coordinator ({m.member_epoch}). The member must abandon "
                                   "all its partitions and rejoin." if m.member_epoch > member.epoch else
                                   f"The consumer group member has a larger member epoch ({member.epoch}) than the "
                                   f"one known by the group coordinator ({m.member_epoch}).")
        else:
            changed = False
        member.seen = _monotonic_ms()
        if m.instance_id is not None:
            member.instance = m.instance_id
        if m.rack_id is not None:
            member.rack = m.rack_id
        if m.rebalance_timeout_ms > 0:
            member.rebalance_timeout = m.rebalance_timeout_ms
        if m.server_assignor is not None:
            member.assignor = m.server_assignor
        subscribed = m.subscribed_topic_names
        if v >= 1 and m.subscribed_topic_regex is not None:  # an empty one clears it (Kafka's rule)
            member.regex = m.subscribed_topic_regex or None
        if member.regex is not None:  # the topics it matches now, with those named
            rx = re.compile(member.regex)
            names = set(subscribed if subscribed is not None else member.subscribed)
            subscribed = sorted(names | {n for n in self.topics if rx.fullmatch(n)})
        if subscribed is not None and sorted(subscribed) != sorted(member.subscribed):
            member.subscribed = list(subscribed)
            changed = True
        g.refresh(self.topics, changed)
        owned = None
        if m.topic_partitions is not None:
            owned = set()
            for tp in m.topic_partitions:
                t = self.topic_ids.get(tp.topic_id)
                if t is not None:
                    owned.update((t.name, p) for p in tp.partitions)
        g.reconcile(member, owned)
        response = R(member_id=member.id, member_epoch=member.epoch,
                     heartbeat_interval_ms=self.heartbeat_interval_ms)
        current = frozenset(member.assigned)
        if current != member.sent or m.member_epoch == 0:
            member.sent = current
            by_topic: dict = {}
            for name, p in sorted(current):
                by_topic.setdefault(name, []).append(p)
            response.assignment = R.Assignment(topic_partitions=[
                R.TopicPartitions(topic_id=self.topics[name].id, partitions=ps)
                for name, ps in by_topic.items() if name in self.topics])
        return response

    def consumer_group_describe(self, ctx, m, v):
        R = M.ConsumerGroupDescribeResponse
        out = []
        for group_id in m.group_ids:
            error = self._coordinator_error(ctx, group_id)
            g = self.groups.get(group_id)
            if error or not isinstance(g, ConsumerGroup):
                out.append(R.DescribedGroup(group_id=group_id, error_code=error or E.GROUP_ID_NOT_FOUND,
                                            error_message=None if error else f"Group {group_id} not found."
                                            if g is None else f"Group {group_id} is not a consumer group."))
                continue

            def assignment(tps):
                by_topic: dict = {}
                for name, p in sorted(tps):
                    by_topic.setdefault(name, []).append(p)
                return R.Assignment(topic_partitions=[
                    R.TopicPartitions(topic_id=self.topics[n].id, topic_name=n, partitions=ps)
                    for n, ps in by_topic.items() if n in self.topics])

            out.append(R.DescribedGroup(
                group_id=group_id, group_state=g.state, group_epoch=g.epoch, assignment_epoch=g.assignment_epoch,
                assignor_name="uniform",
                authorized_operations=INT32_MIN if not m.include_authorized_operations else 0b11111000,
                members=[R.Member(member_id=x.id, instance_id=x.instance, rack_id=x.rack, member_epoch=x.epoch,
                                  client_id=x.client[0], client_host="/" + x.client[1],
                                  subscribed_topic_names=list(x.subscribed), subscribed_topic_regex=x.regex or "",
                                  assignment=assignment(x.assigned),
                                  target_assignment=assignment(g.target.get(x.id, ())), member_type=1)
                         for x in g.members.values()]))
        return R(groups=out)

    # -- offsets -----------------------------------------------------------------------

    def _commit_check(self, g, member_id, epoch, instance=None) -> int:
        if isinstance(g, ConsumerGroup):
            if epoch < 0 and not member_id:
                return 0 if g.empty else E.UNKNOWN_MEMBER_ID
            member = g.members.get(member_id)
            if member is None:
                return E.UNKNOWN_MEMBER_ID
            if epoch > member.epoch:
                return E.FENCED_MEMBER_EPOCH
            return E.STALE_MEMBER_EPOCH if epoch < member.epoch else 0
        if epoch < 0 and not member_id:  # a consumer outside the group (assign(), not subscribe())
            return 0 if g is None or g.empty else E.UNKNOWN_MEMBER_ID
        if g is None:
            return E.ILLEGAL_GENERATION
        # Kafka's rule: a member of the current generation may commit while the group prepares a
        # rebalance (eager clients commit as they give their partitions up), not while it completes one
        if g.state == "CompletingRebalance":
            return E.REBALANCE_IN_PROGRESS
        if member_id not in g.members:
            return E.UNKNOWN_MEMBER_ID
        if epoch != g.generation:
            return E.ILLEGAL_GENERATION
        g.members[member_id]["seen"] = _monotonic_ms()
        return 0

    def offset_commit(self, ctx, m, v):
        R = M.OffsetCommitResponse
        error = self._coordinator_error(ctx, m.group_id)
        g = self.groups.get(m.group_id)
        if not error:
            error = self._commit_check(g, m.member_id, m.generation_id_or_member_epoch)
        if not error and g is None:
            g = self.groups[m.group_id] = ClassicGroup()
        out = []
        for t in m.topics:
            topic = self._topic_named(t.name, t.topic_id if v >= 10 else None)
            name = topic.name if topic is not None else t.name
            out.append(R.OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id if v >= 10 else None))
            for p in t.partitions:
                code = error or ctx.error_for(name, p.partition_index)
                if not code and v >= 10 and topic is None:
                    code = E.UNKNOWN_TOPIC_ID
                if not code and len(p.committed_metadata or "") > 4096:  # offset.metadata.max.bytes
                    code = E.OFFSET_METADATA_TOO_LARGE
                if not code:
                    g.offsets[name, p.partition_index] = (p.committed_offset, p.committed_leader_epoch,
                                                          p.committed_metadata or "")
                out[-1].partitions.append(R.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                                                          error_code=code))
        return R(topics=out)

    def _pending_txn_offsets(self, group_id) -> set:
        return {tp for txn in self.transactions.values() for tp in txn.offsets.get(group_id, ())}

    def offset_fetch(self, ctx, m, v):
        R = M.OffsetFetchResponse
        if v >= 8:
            groups = [(x.group_id, x.topics, x.member_id, x.member_epoch) for x in m.groups]
        else:
            groups = [(m.group_id, m.topics, None, -1)]
        answers = []
        for group_id, topics, member_id, member_epoch in groups:
            error = self._coordinator_error(ctx, group_id)
            g = self.groups.get(group_id)
            if not error and member_id is not None and isinstance(g, ConsumerGroup):
                member = g.members.get(member_id)
                error = E.UNKNOWN_MEMBER_ID if member is None else \
                    E.STALE_MEMBER_EPOCH if member_epoch != member.epoch else 0
            offsets = g.offsets if g is not None else {}
            pending = self._pending_txn_offsets(group_id) if m.require_stable else set()
            if topics is None:
                wanted: dict = {}
                for (name, i) in sorted(offsets):
                    wanted.setdefault(name, []).append(i)
                wanted = [(name, self.topics[name].id if v >= 10 and name in self.topics else None, idx)
                          for name, idx in wanted.items()]
            else:
                wanted = []
                for t in topics:
                    if v >= 10:  # by topic id only
                        topic = self.topic_ids.get(t.topic_id)
                        wanted.append((topic.name if topic else None, t.topic_id, t.partition_indexes))
                    else:
                        wanted.append((t.name, None, t.partition_indexes))
            answers.append((group_id, error, [(name, tid, [
                (i,) + offsets.get((name, i), (-1, -1, "")) + (
                    E.UNSTABLE_OFFSET_COMMIT if (name, i) in pending else
                    ctx.error_for(name or "", i) if name is not None else E.UNKNOWN_TOPIC_ID,)
                for i in idx]) for name, tid, idx in wanted]))
        if v >= 8:
            P = R.OffsetFetchResponsePartitions
            return R(groups=[R.OffsetFetchResponseGroup(group_id=gid, error_code=error, topics=[] if error else [
                R.OffsetFetchResponseTopics(name=name, topic_id=tid, partitions=[
                    P(partition_index=i, committed_offset=o, committed_leader_epoch=e, metadata=md, error_code=c)
                    for i, o, e, md, c in parts]) for name, tid, parts in ts]) for gid, error, ts in answers])
        gid, error, ts = answers[0]
        P = R.OffsetFetchResponsePartition
        return R(error_code=error, topics=[] if error else [R.OffsetFetchResponseTopic(name=name, partitions=[
            P(partition_index=i, committed_offset=o, committed_leader_epoch=e, metadata=md, error_code=c)
            for i, o, e, md, c in parts]) for name, _tid, parts in ts])

    def offset_delete(self, ctx, m, v):
        R = M.OffsetDeleteResponse
        error = self._coordinator_error(ctx, m.group_id)
        g = self.groups.get(m.group_id)
        if not error and g is None:
            error = E.GROUP_ID_NOT_FOUND
        if error:
            return R(error_code=error)
        out = []
        for t in m.topics:
            out.append(R.OffsetDeleteResponseTopic(name=t.name))
            for p in t.partitions:
                code = ctx.error_for(t.name, p.partition_index)
                if not code and self._subscribed(g, t.name):
                    code = E.GROUP_SUBSCRIBED_TO_TOPIC
                if not code:
                    g.offsets.pop((t.name, p.partition_index), None)
                out[-1].partitions.append(R.OffsetDeleteResponsePartition(partition_index=p.partition_index,
                                                                          error_code=code))
        return R(topics=out)

    @staticmethod
    def _subscribed(g, topic: str) -> bool:
        if isinstance(g, ConsumerGroup):
            return any(topic in x.subscribed for x in g.members.values())
        if g.protocol_type != "consumer" or not g.members:
            return False
        for x in g.members.values():
            meta = x["protocols"].get(g.protocol)
            if meta is None or len(meta) < 2:
                continue
            got = M.decode_versioned("ConsumerProtocolSubscription", meta)
            if got is None:  # metadata that does not read: assume the member subscribes
                return True
            if topic in got[1].topics:
                return True
        return False

    # -- admin of groups ----------------------------------------------------------------

    def list_groups(self, ctx, m, v):
        R = M.ListGroupsResponse
        states = {s.lower() for s in (m.states_filter if v >= 4 else [])}
        types = {t.lower() for t in (m.types_filter if v >= 5 else [])}
        out = []
        for group_id, g in self.groups.items():
            if self.coordinator(group_id) != ctx.node.id:
                continue
            if states and g.state.lower() not in states or types and g.kind not in types:
                continue
            out.append(R.ListedGroup(group_id=group_id, protocol_type=g.protocol_type or "", group_state=g.state,
                                     group_type=g.kind))
        return R(groups=out)

    def describe_groups(self, ctx, m, v):
        R = M.DescribeGroupsResponse
        out = []
        for group_id in m.groups:
            error = self._coordinator_error(ctx, group_id)
            g = self.groups.get(group_id)
            if error:
                out.append(R.DescribedGroup(group_id=group_id, error_code=error))
            elif isinstance(g, ClassicGroup):
                out.append(g.describe(group_id))
            elif isinstance(g, ConsumerGroup):  # Kafka: a consumer group is not described by this api (v6+ says so)
                out.append(R.DescribedGroup(group_id=group_id, group_state="Dead", protocol_type="",
                                            error_code=E.GROUP_ID_NOT_FOUND if v >= 6 else 0,
                                            error_message=f"Group {group_id} is not a classic group."
                                            if v >= 6 else None))
            else:  # v6+ says so (KIP-1043); before, an unknown group is a Dead one
                out.append(R.DescribedGroup(group_id=group_id, group_state="Dead", protocol_type="",
                                            error_code=E.GROUP_ID_NOT_FOUND if v >= 6 else 0,
                                            error_message=f"Group {group_id} not found." if v >= 6 else None))
        return R(groups=out)

    def delete_groups(self, ctx, m, v):
        R = M.DeleteGroupsResponse
        out = []
        for group_id in m.groups_names:
            error = self._coordinator_error(ctx, group_id)
            g = self.groups.get(group_id)
            if not error and g is None:
                error = E.GROUP_ID_NOT_FOUND
            if not error and not g.empty:
                error = E.NON_EMPTY_GROUP
            if not error:
                del self.groups[group_id]
            out.append(R.DeletableGroupResult(group_id=group_id, error_code=error, error_message=None))
        return R(results=out)
