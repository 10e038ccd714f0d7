"""Topics and configs: CreateTopics, DeleteTopics, CreatePartitions,
DescribeConfigs, AlterConfigs, IncrementalAlterConfigs."""

from __future__ import annotations

import re
import uuid

from .. import messages as M
from ..error_codes import ErrorCode as E

# config types (DescribeConfigs v3+)
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
# config sources
DYNAMIC_TOPIC, DYNAMIC_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 4, 5
LONG_MAX = str((1 << 63) - 1)

#: a topic's configs with Kafka 4.4's defaults and types
TOPIC_DEFAULTS = {
    "cleanup.policy": ("delete", LIST),
    "compression.gzip.level": ("-1", INT),
    "compression.lz4.level": ("9", INT),
    "compression.type": ("producer", STRING),
    "compression.zstd.level": ("3", INT),
    "delete.retention.ms": ("86400000", LONG),
    "errors.deadletterqueue.group.enable": ("false", BOOLEAN),
    "file.delete.delay.ms": ("60000", LONG),
    "flush.messages": (LONG_MAX, LONG),
    "flush.ms": (LONG_MAX, LONG),
    "follower.replication.throttled.replicas": ("", LIST),
    "index.interval.bytes": ("4096", INT),
    "leader.replication.throttled.replicas": ("", LIST),
    "local.retention.bytes": ("-2", LONG),
    "local.retention.ms": ("-2", LONG),
    "max.compaction.lag.ms": (LONG_MAX, LONG),
    "max.decompressed.message.bytes": ("2147483639", INT),
    "max.message.bytes": ("1048588", INT),
    "message.timestamp.after.max.ms": ("3600000", LONG),
    "message.timestamp.before.max.ms": (LONG_MAX, LONG),
    "message.timestamp.type": ("CreateTime", STRING),
    "min.cleanable.dirty.ratio": ("0.5", DOUBLE),
    "min.compaction.lag.ms": ("0", LONG),
    "min.insync.replicas": ("1", INT),
    "preallocate": ("false", BOOLEAN),
    "remote.copy.lag.bytes": ("-1", LONG),
    "remote.copy.lag.ms": ("0", LONG),
    "remote.log.copy.disable": ("false", BOOLEAN),
    "remote.log.delete.on.disable": ("false", BOOLEAN),
    "remote.storage.enable": ("false", BOOLEAN),
    "retention.bytes": ("-1", LONG),
    "retention.ms": ("604800000", LONG),
    "segment.bytes": ("1073741824", INT),
    "segment.index.bytes": ("10485760", INT),
    "segment.jitter.ms": ("0", LONG),
    "segment.ms": ("604800000", LONG),
    "unclean.leader.election.enable": ("false", BOOLEAN),
}

#: the order DescribeConfigs lists a topic's configs in (Kafka's: that of a hash map of their names)
DESCRIBE_ORDER = [
    "compression.type", "errors.deadletterqueue.group.enable", "remote.copy.lag.bytes",
    "remote.log.delete.on.disable", "leader.replication.throttled.replicas", "remote.storage.enable",
    "min.insync.replicas", "segment.jitter.ms", "remote.log.copy.disable", "local.retention.ms", "cleanup.policy",
    "flush.ms", "follower.replication.throttled.replicas", "compression.lz4.level", "segment.bytes", "retention.ms",
    "compression.gzip.level", "remote.copy.lag.ms", "flush.messages", "compression.zstd.level",
    "max.compaction.lag.ms", "file.delete.delay.ms", "max.message.bytes", "min.compaction.lag.ms",
    "message.timestamp.type", "local.retention.bytes", "preallocate", "index.interval.bytes",
    "min.cleanable.dirty.ratio", "unclean.leader.election.enable", "retention.bytes", "delete.retention.ms",
    "message.timestamp.after.max.ms", "max.decompressed.message.bytes", "message.timestamp.before.max.ms",
    "segment.ms", "segment.index.bytes"]
#: topic configs a KRaft cluster sets as dynamic cluster-wide defaults when it is formatted
CLUSTER_DEFAULTS = {"min.insync.replicas"}
DYNAMIC_DEFAULT_BROKER = 3

_LEGAL_NAME = re.compile(r"[a-zA-Z0-9._-]+")


def _topic_name_error(name: str) -> str | None:
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > 249:
        return f"Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
    if not _LEGAL_NAME.fullmatch(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than ASCII alphanumerics, "
                "'.', '_' and '-'")
    return None


#: topic configs whose default is a broker setting of another name
BROKER_SYNONYMS = {"cleanup.policy": "log.cleanup.policy", "max.message.bytes": "message.max.bytes",
                   "message.timestamp.type": "log.message.timestamp.type", "retention.bytes": "log.retention.bytes",
                   "retention.ms": "log.retention.ms", "segment.bytes": "log.segment.bytes",
                   "compression.type": "compression.type", "min.insync.replicas": "min.insync.replicas"}


class AdminHandlers:
    # -- configs -------------------------------------------------------------------

    def topic_config(self, topic, name: str) -> str:
        """A topic's value of a config: its own, the brokers', or Kafka's default."""
        if name in topic.configs:
            return topic.configs[name]
        broker = BROKER_SYNONYMS.get(name)
        if broker is not None and broker in self.broker_configs:
            return self.broker_configs[broker]
        return TOPIC_DEFAULTS[name][0]

    def topic_configs(self, topic) -> list[tuple[str, str, int, int]]:
        """(name, value, source, type) of each config of a topic."""
        out = []
        for name, (default, ctype) in TOPIC_DEFAULTS.items():
            broker = BROKER_SYNONYMS.get(name)
            if name in topic.configs:
                out.append((name, topic.configs[name], DYNAMIC_TOPIC, ctype))
            elif broker is not None and broker in self.broker_configs:
                out.append((name, self.broker_configs[broker], STATIC_BROKER, ctype))
            else:
                out.append((name, default, DYNAMIC_DEFAULT_BROKER if name in CLUSTER_DEFAULTS else DEFAULT, ctype))
        return out

    def node_configs(self, node_id: int) -> list[tuple[str, str, int, int]]:
        node = self.nodes[node_id]
        static = [("advertised.listeners", f"PLAINTEXT://{node.host}:{node.port}", LIST),
                  ("auto.create.topics.enable", str(self.auto_create_topics).lower(), BOOLEAN),
                  ("broker.id", str(node_id), INT), ("node.id", str(node_id), INT),
                  ("default.replication.factor", str(self.replication_factor), INT),
                  ("listeners", f"PLAINTEXT://{node.host}:{node.port}", LIST),
                  ("log.message.timestamp.type", "CreateTime", STRING),
                  ("message.max.bytes", "1048588", INT),
                  ("num.partitions", str(self.default_partitions), INT),
                  ("process.roles", "broker,controller", LIST)]
        out = [(n, self.broker_configs.get(n, val), DYNAMIC_BROKER if n in self.broker_configs else STATIC_BROKER, t)
               for n, val, t in static]
        known = {n for n, *_ in static}
        out += [(n, val, DYNAMIC_BROKER, STRING) for n, val in self.broker_configs.items() if n not in known]
        return out

    def _other_configs(self):
        if not hasattr(self, "_others"):
            self._others = {}
        return self._others

    def describe_configs(self, ctx, m, v):
        R = M.DescribeConfigsResponse
        out = []
        for r in m.resources:
            error, message, configs = 0, None, []
            if r.resource_type == 2:
                topic = self.topics.get(r.resource_name)
                if topic is None:  # Kafka says no more than the code
                    error, message = E.UNKNOWN_TOPIC_OR_PARTITION, ""
                else:
                    order = {n: i for i, n in enumerate(DESCRIBE_ORDER)}
                    configs = sorted(self.topic_configs(topic), key=lambda c: order.get(c[0], len(order)))
            elif r.resource_type == 4:
                if r.resource_name == "":
                    configs = [(n, val, 3, STRING) for n, val in self.broker_configs.items()]
                elif r.resource_name.isdigit() and int(r.resource_name) in self.nodes:
                    configs = self.node_configs(int(r.resource_name))
                else:
                    error, message = E.INVALID_REQUEST, f"no broker {r.resource_name}"
            elif r.resource_type in (16, 32):  # client metrics' or a group's configs: those set
                configs = [(n, val, 1, STRING) for n, val in self._other_configs().get(
                    (r.resource_type, r.resource_name), {}).items()]
            else:
                error, message = E.INVALID_REQUEST, f"resource type {r.resource_type} is not described here"
            keys = None if r.configuration_keys is None else set(r.configuration_keys)
            out.append(R.DescribeConfigsResult(
                error_code=error, error_message=message or "", resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[R.DescribeConfigsResourceResult(name=n, value=val, read_only=False, config_source=src,
                                                         config_type=t, is_sensitive=False, is_default=False,
                                                         documentation=None)
                         for n, val, src, t in configs if keys is None or n in keys]))
        return R(results=out)

    def _alter(self, resource_type: int, name: str, changes, validate_only: bool) -> tuple[int, str | None]:
        """Apply [(config, op, value)] (op 0 set, 1 delete, 2 append, 3 subtract) to a resource."""
        if resource_type == 2:
            topic = self.topics.get(name)
            if topic is None:
                return E.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {name} does not exist"
            target, legal = dict(topic.configs), TOPIC_DEFAULTS
        elif resource_type == 4:
            if name and not (name.isdigit() and int(name) in self.nodes):
                return E.INVALID_REQUEST, f"no broker {name}"
            target, legal = dict(self.broker_configs), None
        elif resource_type in (16, 32):
            target, legal = dict(self._other_configs().get((resource_type, name), {})), None
        else:
            return E.INVALID_REQUEST, f"resource type {resource_type} cannot be altered here"
        for config, op, value in changes:
            if legal is not None and config not in legal:
                return E.INVALID_CONFIG, f"Unknown topic config name: {config}"
            current = target.get(config, legal[config][0] if legal else "")
            if op == 0:
                target[config] = value
            elif op == 1:
                target.pop(config, None)
            elif op in (2, 3):
                if legal is not None and legal[config][1] != LIST:
                    return E.INVALID_CONFIG, f"{config} is not a list"
                items = [x for x in current.split(",") if x]
                new = [x for x in (value or "").split(",") if x]
                items = items + [x for x in new if x not in items] if op == 2 else [x for x in items if x not in new]
                target[config] = ",".join(items)
            else:
                return E.INVALID_REQUEST, f"unknown config operation {op}"
        if not validate_only:
            if resource_type == 2:
                self.topics[name].configs = target
            elif resource_type == 4:
                self.broker_configs = target
            else:
                self._other_configs()[resource_type, name] = target
        return 0, None

    def _alter_all(self, R, m, changes_of):
        """Both alter apis' answer: each resource altered by ``changes_of(resource)``."""
        out = []
        for r in m.resources:
            error, message = self._alter(r.resource_type, r.resource_name, changes_of(r), m.validate_only)
            out.append(R.AlterConfigsResourceResponse(error_code=error, error_message=message,
                                                      resource_type=r.resource_type, resource_name=r.resource_name))
        return R(responses=out)

    def incremental_alter_configs(self, ctx, m, v):
        return self._alter_all(M.IncrementalAlterConfigsResponse, m,
                               lambda r: [(c.name, c.config_operation, c.value) for c in r.configs])

    def alter_configs(self, ctx, m, v):
        def changes(r):
            if r.resource_type == 2 and r.resource_name in self.topics:  # the whole set is replaced
                return [(c, 1, None) for c in self.topics[r.resource_name].configs] + \
                    [(c.name, 0, c.value) for c in r.configs]
            return [(c.name, 0, c.value) for c in r.configs]

        return self._alter_all(M.AlterConfigsResponse, m, changes)

    # -- topics --------------------------------------------------------------------

    def create_topics(self, ctx, m, v):
        R = M.CreateTopicsResponse
        out = []
        for t in m.topics:
            res = R.CreatableTopicResult(name=t.name, num_partitions=-1, replication_factor=-1, error_message=None)
            out.append(res)
            n = self.default_partitions if t.num_partitions == -1 else t.num_partitions
            rf = self.replication_factor if t.replication_factor == -1 else t.replication_factor
            assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments} if t.assignments else None
            if assignments:
                n, rf = len(assignments), len(next(iter(assignments.values())))
            configs = {c.name: c.value for c in t.configs}
            error = ctx.error_for(t.name)
            message = None
            bad = _topic_name_error(t.name)
            if not error and bad:
                error, message = E.INVALID_TOPIC_EXCEPTION, bad
            elif not error and t.name in self.topics:
                error, message = E.TOPIC_ALREADY_EXISTS, f"Topic '{t.name}' already exists."
            elif not error and n <= 0:
                error, message = E.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            elif not error and (rf <= 0 or rf > len(self.nodes)):
                error = E.INVALID_REPLICATION_FACTOR
                message = (f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} "
                           f"cannot be reached because only {len(self.live())} broker(s) are registered.")
            elif not error:
                unknown = [c for c in configs if c not in TOPIC_DEFAULTS]
                if unknown:
                    error, message = E.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}"
            if error:
                res.error_code, res.error_message = error, message
                continue
            if m.validate_only:
                topic_id = uuid.UUID(int=0)
                shown = type("T", (), {"configs": configs})()
            else:
                topic = self.create_topic(t.name, n, configs, rf, assignments)
                topic_id, shown = topic.id, topic
            res.topic_id, res.num_partitions, res.replication_factor = topic_id, n, rf
            res.configs = [R.CreatableTopicConfigs(name=c, value=val, read_only=False, config_source=src,
                                                   is_sensitive=False)
                           for c, val, src, _t in self.topic_configs(shown)]
        return R(topics=out)

    def delete_topics(self, ctx, m, v):
        R = M.DeleteTopicsResponse
        wanted = [(t.name, t.topic_id) for t in m.topics] if v >= 6 else [(n, None) for n in m.topic_names]
        out = []
        for name, topic_id in wanted:
            topic = self._topic_named(name, topic_id)
            error = ctx.error_for(name or "")
            if not error and topic is None:
                error = E.UNKNOWN_TOPIC_ID if name is None else E.UNKNOWN_TOPIC_OR_PARTITION
            res = R.DeletableTopicResult(name=topic.name if topic is not None else name,
                                         topic_id=topic.id if topic is not None else (topic_id or uuid.UUID(int=0)),
                                         error_code=error)
            if not error:
                self.delete_topic(topic)
            else:
                res.error_message = "This server does not host this topic ID." if error == E.UNKNOWN_TOPIC_ID \
                    else "This server does not host this topic-partition." \
                    if error == E.UNKNOWN_TOPIC_OR_PARTITION else None
            out.append(res)
        return R(responses=out)

    def create_partitions(self, ctx, m, v):
        R = M.CreatePartitionsResponse
        out = []
        for t in m.topics:
            topic = self.topics.get(t.name)
            error, message = ctx.error_for(t.name), None
            if not error and topic is None:
                error, message = E.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
            elif not error and t.count < len(topic.partitions):
                error = E.INVALID_PARTITIONS
                message = (f"Topic currently has {len(topic.partitions)} partitions, which is higher than the "
                           f"requested {t.count}.")
            elif not error and t.count == len(topic.partitions):
                error, message = E.INVALID_PARTITIONS, f"Topic already has {t.count} partitions."
            if not error and not m.validate_only:
                start = len(topic.partitions)
                assignments = {start + k: list(a.broker_ids) for k, a in enumerate(t.assignments)} \
                    if t.assignments else None
                self.add_partitions(topic, t.count, None, assignments)
            out.append(R.CreatePartitionsTopicResult(name=t.name, error_code=error, error_message=message))
        return R(results=out)
