import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RaftVoterEndpoint;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's own Java clients (kafka-clients 4.4.0) driven through one scenario
 * against a broker: the admin client (topics, configs, ACLs, quotas, SCRAM,
 * log dirs, reassignments, features, the quorum, delegation tokens, groups,
 * transactions), an idempotent and a transactional producer, a classic and a
 * KIP-848 consumer, a share consumer.
 *
 * <pre>java -cp driver:kafka-jars/* KafkaClients BOOTSTRAP PREFIX
 * java -cp driver:kafka-jars/* KafkaClients moving BOOTSTRAP TOPIC SECONDS
 * java -cp driver:kafka-jars/* KafkaClients controller CONTROLLERS</pre>
 *
 * Every step prints one JSON line, {"step": name, "ok": bool, "detail": text}:
 * a step the broker refuses is traffic too (delegation tokens over plaintext,
 * a voter that does not exist), so a failed step does not stop the scenario.
 * Topics and groups are named after PREFIX.  Exits 0 unless the set-up
 * itself (topics, records to read) failed.
 */
public final class KafkaClients {
    static final long WAIT = 20;
    static String bootstrap;
    static int failures;

    interface Step { Object run() throws Exception; }

    static Object step(String name, Step body) {
        Object value = null;
        String detail;
        boolean ok;
        try {
            value = body.run();
            detail = String.valueOf(value);
            ok = true;
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            detail = cause.getClass().getSimpleName() + ": " + cause.getMessage();
            ok = false;
        }
        if (detail.length() > 300) detail = detail.substring(0, 300) + "...";
        System.out.println("{\"step\":" + quote(name) + ",\"ok\":" + ok + ",\"detail\":" + quote(detail) + "}");
        System.out.flush();
        return value;
    }

    /** A step the rest depends on (topics, records to read): its failure fails the run. */
    static void required(String name, Step body) {
        if (step(name, () -> { Object v = body.run(); return v == null ? "done" : v; }) == null) {
            failures++;
        }
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static Properties props(String clientId) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, clientId);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        return p;
    }

    static Properties producerProps(String clientId) {
        Properties p = props(clientId);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        return p;
    }

    static Properties consumerProps(String clientId, String group, String protocol) {
        Properties p = props(clientId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        if (protocol != null) {
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        }
        if ("classic".equals(protocol)) {
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "200");
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        }
        return p;
    }

    static Properties shareProps(String group) {
        Properties p = consumerProps("java-share", group, null);
        p.put("share.acknowledgement.mode", "explicit");  // c.acknowledge(record), then commitSync
        return p;
    }

    static ProducerRecord<byte[], byte[]> record(String topic, int partition, int i) {
        ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, partition, ("key-" + i).getBytes(),
                ("value " + i + " from Kafka's Java producer").getBytes());
        r.headers().add(new RecordHeader("dup", "a".getBytes())).add(new RecordHeader("dup", "b".getBytes()));
        return r;
    }

    static <T> T get(org.apache.kafka.common.KafkaFuture<T> f) throws Exception {
        return f.get(WAIT, TimeUnit.SECONDS);
    }

    static ConfigResource topic(String name) {
        return new ConfigResource(ConfigResource.Type.TOPIC, name);
    }

    static int poll(KafkaConsumer<byte[], byte[]> c, int want) {
        int got = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
        while (got < want && System.nanoTime() < deadline) {
            got += c.poll(Duration.ofMillis(200)).count();
        }
        if (got < want) throw new IllegalStateException("read " + got + " of " + want + " records");
        return got;
    }

    /**
     * {@code moving BOOTSTRAP TOPIC SECONDS}: an idempotent producer writes a
     * record every 20 ms to partition 0 and a consumer reads it back, for as
     * long as that, while the caller moves the partition's leader: their
     * requests meet NOT_LEADER_OR_FOLLOWER answers that name the new leader.
     */
    static void moving(String topic, int seconds) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Properties pp = producerProps("java-producer-moving");
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        TopicPartition tp = new TopicPartition(topic, 0);
        Thread reader = new Thread(() -> step("movingConsumer", () -> {
            Properties cp = consumerProps("java-consumer-moving", topic + "-readers", null);
            cp.remove(ConsumerConfig.GROUP_ID_CONFIG);
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
            int got = 0;
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
                c.assign(List.of(tp));
                while (System.nanoTime() < end) got += c.poll(Duration.ofMillis(100)).count();
            }
            return got + " records";
        }));
        reader.start();
        step("movingProducer", () -> {
            int sent = 0;
            try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
                while (System.nanoTime() < end) {
                    p.send(record(topic, 0, sent++)).get(WAIT, TimeUnit.SECONDS);
                    Thread.sleep(20);
                }
            }
            return sent + " records";
        });
        reader.join();
    }

    /**
     * {@code controller CONTROLLERS}: the admin client on the controller
     * listener (KIP-919, {@code bootstrap.controllers}): the cluster, the
     * quorum, features and configs as the controllers answer them.
     */
    static void controller(String controllers) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, controllers);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "java-admin-controller");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        try (Admin admin = Admin.create(p)) {
            Object first = step("describeCluster", () -> get(admin.describeCluster().nodes()).iterator().next().id());
            step("describeMetadataQuorum", () -> get(admin.describeMetadataQuorum().quorumInfo()).voters().size());
            step("describeFeatures", () -> get(admin.describeFeatures().featureMetadata()).finalizedFeatures()
                    .keySet());
            step("describeConfigs", () -> get(admin.describeConfigs(List.of(new ConfigResource(
                    ConfigResource.Type.BROKER, String.valueOf(first)))).all()).size());
        }
    }

    public static void main(String[] args) throws Exception {
        if (args[0].equals("controller")) {
            controller(args[1]);
            System.exit(0);
        }
        if (args[0].equals("moving")) {
            bootstrap = args[1];
            moving(args[2], Integer.parseInt(args[3]));
            System.exit(0);
        }
        bootstrap = args[0];
        String prefix = args[1];
        String main = prefix + "-java", txnTopic = prefix + "-java-txn", shareTopic = prefix + "-java-share";
        String doomed = prefix + "-java-deleted";
        String classic = prefix + "-classic", modern = prefix + "-consumer", share = prefix + "-share";

        try (Admin admin = Admin.create(props("java-admin"))) {
            // -- topics, the cluster, configs ---------------------------------
            required("createTopics", () -> get(admin.createTopics(List.of(new NewTopic(main, 2, (short) 1),
                    new NewTopic(txnTopic, 1, (short) 1), new NewTopic(shareTopic, 1, (short) 1),
                    new NewTopic(doomed, 1, (short) 1))).all()));
            // KIP-714: every client of this run pushes its metrics once a second
            step("clientMetricsSubscription", () -> get(admin.incrementalAlterConfigs(Map.of(
                    new ConfigResource(ConfigResource.Type.CLIENT_METRICS, prefix + "-all"), List.of(
                            new AlterConfigOp(new ConfigEntry("metrics", "*"), AlterConfigOp.OpType.SET),
                            new AlterConfigOp(new ConfigEntry("interval.ms", "1000"), AlterConfigOp.OpType.SET))))
                    .all()));
            step("listTopics", () -> get(admin.listTopics().names()));
            step("describeTopics", () -> get(admin.describeTopics(List.of(main)).allTopicNames()).keySet());
            step("describeCluster", () -> get(admin.describeCluster().clusterId()));
            Object first = step("describeCluster.nodes", () -> get(admin.describeCluster().nodes()).iterator().next()
                    .id());
            int node = first instanceof Integer ? (Integer) first : 1;
            step("describeFeatures", () -> get(admin.describeFeatures().featureMetadata()).finalizedFeatures());
            step("updateFeatures", () -> get(admin.updateFeatures(Map.of("group.version",
                    new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                    new UpdateFeaturesOptions().validateOnly(true)).all()));
            step("describeMetadataQuorum", () -> get(admin.describeMetadataQuorum().quorumInfo()).leaderId());
            step("describeConfigs", () -> get(admin.describeConfigs(List.of(topic(main),
                    new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(node)))).all()).size());
            step("incrementalAlterConfigs", () -> get(admin.incrementalAlterConfigs(Map.of(topic(main), List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET))))
                    .all()));
            step("listConfigResources", () -> get(admin.listConfigResources().all()).size());
            step("createPartitions", () -> get(admin.createPartitions(Map.of(main, NewPartitions.increaseTo(3))).all()));
            step("deleteTopics", () -> get(admin.deleteTopics(List.of(doomed)).all()));

            // -- ACLs, quotas, SCRAM --------------------------------------------
            AclBinding acl = new AclBinding(new ResourcePattern(ResourceType.TOPIC, main, PatternType.LITERAL),
                    new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
            step("createAcls", () -> get(admin.createAcls(List.of(acl)).all()));
            step("describeAcls", () -> get(admin.describeAcls(AclBindingFilter.ANY).values()).size());
            step("deleteAcls", () -> get(admin.deleteAcls(List.of(acl.toFilter())).all()).size());
            ClientQuotaEntity alice = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, "alice"));
            step("alterClientQuotas", () -> get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(alice,
                    List.of(new ClientQuotaAlteration.Op("producer_byte_rate", 1048576.0))))).all()));
            step("describeClientQuotas", () -> get(admin.describeClientQuotas(ClientQuotaFilter.all()).entities()));
            step("alterUserScramCredentials", () -> get(admin.alterUserScramCredentials(List.of(
                    new UserScramCredentialUpsertion("alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                            4096), "alice-secret"))).all()));
            step("describeUserScramCredentials", () -> get(admin.describeUserScramCredentials().all()).keySet());

            // -- log dirs, leaders, reassignments -------------------------------
            TopicPartitionReplica replica = new TopicPartitionReplica(main, 0, node);
            Object dirs = step("describeLogDirs", () -> get(admin.describeLogDirs(List.of(node)).allDescriptions())
                    .get(node).keySet().iterator().next());
            step("describeReplicaLogDirs", () -> get(admin.describeReplicaLogDirs(List.of(replica)).all()));
            step("alterReplicaLogDirs", () -> get(admin.alterReplicaLogDirs(Map.of(replica, String.valueOf(dirs)))
                    .all()));
            step("electLeaders", () -> get(admin.electLeaders(ElectionType.PREFERRED,
                    Set.of(new TopicPartition(main, 0))).partitions()));
            step("alterPartitionReassignments", () -> get(admin.alterPartitionReassignments(Map.of(
                    new TopicPartition(main, 0), Optional.of(new NewPartitionReassignment(List.of(node))))).all()));
            step("listPartitionReassignments", () -> get(admin.listPartitionReassignments().reassignments()));

            // -- what a plaintext single-node cluster refuses: still an exchange --
            step("createDelegationToken", () -> get(admin.createDelegationToken().delegationToken()));
            step("describeDelegationToken", () -> get(admin.describeDelegationToken().delegationTokens()));
            step("renewDelegationToken", () -> get(admin.renewDelegationToken("no-such-token".getBytes())
                    .expiryTimestamp()));
            step("expireDelegationToken", () -> get(admin.expireDelegationToken("no-such-token".getBytes())
                    .expiryTimestamp()));
            step("unregisterBroker", () -> get(admin.unregisterBroker(99).all()));
            step("unregisterController", () -> get(admin.unregisterController(99).all()));
            step("addRaftVoter", () -> get(admin.addRaftVoter(99, Uuid.randomUuid(),
                    Set.of(new RaftVoterEndpoint("CONTROLLER", "127.0.0.1", 1))).all()));
            step("removeRaftVoter", () -> get(admin.removeRaftVoter(99, Uuid.randomUuid()).all()));

            // -- an idempotent producer -----------------------------------------
            Properties pp = producerProps("java-producer");
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd");
            required("idempotentProduce", () -> {
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(pp)) {
                    for (int i = 0; i < 6; i++) p.send(record(main, i % 2, i));
                    for (int i = 0; i < 3; i++) p.send(record(shareTopic, 0, i));
                    p.flush();
                }
                return "9 records";
            });
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            specs.put(new TopicPartition(main, 0), OffsetSpec.latest());
            specs.put(new TopicPartition(main, 1), OffsetSpec.maxTimestamp());
            step("listOffsets", () -> get(admin.listOffsets(specs).all()).size());
            step("deleteRecords", () -> get(admin.deleteRecords(Map.of(new TopicPartition(main, 1),
                    RecordsToDelete.beforeOffset(1))).all()));

            // -- transactions ---------------------------------------------------
            Properties tp = producerProps("java-txn");
            tp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-txn");
            required("transactions", () -> {
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(tp)) {
                    p.initTransactions();
                    p.beginTransaction();
                    for (int i = 0; i < 3; i++) p.send(record(txnTopic, 0, i));
                    p.sendOffsetsToTransaction(Map.of(new TopicPartition(main, 0), new OffsetAndMetadata(1)),
                            new ConsumerGroupMetadata(prefix + "-txn-group"));
                    p.commitTransaction();
                    p.beginTransaction();
                    p.send(record(txnTopic, 0, 3));
                    p.abortTransaction();
                }
                return "committed 3, aborted 1";
            });
            // one left open, for the admin's view of transactions and its abort (WriteTxnMarkers)
            Properties hp = producerProps("java-txn-open");
            hp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, prefix + "-txn-open");
            KafkaProducer<byte[], byte[]> open = new KafkaProducer<>(hp);
            try {
                step("openTransaction", () -> {
                    open.initTransactions();
                    open.beginTransaction();
                    open.send(record(txnTopic, 0, 9)).get(WAIT, TimeUnit.SECONDS);
                    return "open";
                });
                TopicPartition txp = new TopicPartition(txnTopic, 0);
                step("listTransactions", () -> get(admin.listTransactions().all()).size());
                step("describeTransactions", () -> get(admin.describeTransactions(List.of(prefix + "-txn",
                        prefix + "-txn-open")).all()).keySet());
                Object states = step("describeProducers", () -> get(admin.describeProducers(List.of(txp)).all())
                        .get(txp).activeProducers());
                step("abortTransaction", () -> {
                    if (states == null) throw new IllegalStateException("no producers described");
                    for (Object o : (Collection<?>) states) {
                        ProducerState s = (ProducerState) o;
                        if (s.currentTransactionStartOffset().isPresent()) {
                            get(admin.abortTransaction(new AbortTransactionSpec(txp, s.producerId(),
                                    (short) s.producerEpoch(), s.coordinatorEpoch().orElse(0))).all());
                            return "aborted " + s.producerId();
                        }
                    }
                    throw new IllegalStateException("no open transaction on " + txp + ": " + states);
                });
                step("fenceProducers", () -> get(admin.fenceProducers(List.of(prefix + "-txn-open")).all()));
            } finally {
                open.close(Duration.ofSeconds(2));
            }

            // -- a classic consumer group ---------------------------------------
            required("classicConsumer", () -> {
                try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(
                        consumerProps("java-classic", classic, "classic"))) {
                    c.subscribe(List.of(main));
                    int n = poll(c, 5);
                    Thread.sleep(600);  // a member for a while: its heartbeats go out
                    c.poll(Duration.ofMillis(100));
                    c.commitSync();
                    return n + " records";
                }
            });
            step("listGroups", () -> get(admin.listGroups().all()).size());
            step("describeClassicGroups", () -> get(admin.describeClassicGroups(List.of(classic)).all()).keySet());
            step("describeConsumerGroups(classic)", () -> get(admin.describeConsumerGroups(List.of(classic)).all())
                    .get(classic).groupState());
            step("listConsumerGroupOffsets", () -> get(admin.listConsumerGroupOffsets(classic)
                    .partitionsToOffsetAndMetadata()).size());
            step("alterConsumerGroupOffsets", () -> get(admin.alterConsumerGroupOffsets(classic,
                    Map.of(new TopicPartition(main, 0), new OffsetAndMetadata(0))).all()));
            step("deleteConsumerGroupOffsets", () -> get(admin.deleteConsumerGroupOffsets(classic,
                    Set.of(new TopicPartition(main, 0))).all()));
            step("deleteConsumerGroups", () -> get(admin.deleteConsumerGroups(List.of(classic)).all()));

            // -- a KIP-848 consumer group, twice: the second member starts from
            // the first's commits and validates them (OffsetForLeaderEpoch) ----
            for (String who : List.of("java-consumer", "java-consumer-again")) {
                required("consumer(" + who + ")", () -> {
                    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(
                            consumerProps(who, modern, "consumer"))) {
                        c.subscribe(List.of(main));
                        int n = who.endsWith("again") ? c.poll(Duration.ofSeconds(2)).count() : poll(c, 5);
                        c.commitSync();
                        return n + " records";
                    }
                });
            }
            step("describeConsumerGroups(consumer)", () -> get(admin.describeConsumerGroups(List.of(modern)).all())
                    .get(modern).groupState());

            // -- a share group --------------------------------------------------
            step("shareGroupConfig", () -> get(admin.incrementalAlterConfigs(Map.of(
                    new ConfigResource(ConfigResource.Type.GROUP, share), List.of(new AlterConfigOp(
                            new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
                    .all()));
            required("shareConsumer", () -> {
                try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(
                        shareProps(share))) {
                    c.subscribe(List.of(shareTopic));
                    int got = 0;
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
                    while (got < 3 && System.nanoTime() < deadline) {
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                            c.acknowledge(r);
                            got++;
                        }
                    }
                    c.commitSync();
                    if (got < 3) throw new IllegalStateException("read " + got + " of 3 records");
                    return got + " records";
                }
            });
            step("describeShareGroups", () -> get(admin.describeShareGroups(List.of(share)).all()).get(share)
                    .groupState());
            step("listShareGroupOffsets", () -> get(admin.listShareGroupOffsets(Map.of(share,
                    new ListShareGroupOffsetsSpec())).all()));
            step("alterShareGroupOffsets", () -> get(admin.alterShareGroupOffsets(share,
                    Map.of(new TopicPartition(shareTopic, 0), 0L)).all()));
            step("deleteShareGroupOffsets", () -> get(admin.deleteShareGroupOffsets(share, Set.of(shareTopic)).all()));
            step("deleteShareGroups", () -> get(admin.deleteShareGroups(List.of(share)).all()));
            step("describeStreamsGroups", () -> get(admin.describeStreamsGroups(List.of(prefix + "-streams")).all()));
        }
        System.exit(failures == 0 ? 0 : 1);
    }
}
