import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Kafka's Java clients (kafka-clients 4.4.0) through the scenarios of
 * tests/peers/scenarios.py, the suite that runs the same scenarios against
 * Apache Kafka and the mock cluster.
 *
 * <pre>java -cp driver:kafka-jars/* Scenarios NAME BOOTSTRAP ARGS_JSON
 * java -cp driver:kafka-jars/* Scenarios serve</pre>
 *
 * A scenario prints {"wait": what} and reads one line from stdin where the
 * suite acts between two phases (more records, a leader moved), and ends with
 * one {"result": ...} line, or {"error": ...} and exit code 1.  Records are the
 * suite's (ASCII text): keys and values print as text, headers as pairs.
 */
public final class Scenarios {
    static final long WAIT = 30;
    static final ObjectMapper JSON = new ObjectMapper();
    static final BufferedReader STDIN = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    static String bootstrap;

    static void emit(String kind, Object value) throws Exception {
        System.out.println(JSON.writeValueAsString(Map.of(kind, value)));
        System.out.flush();
    }

    static void pause(String what) throws Exception {
        emit("wait", what);
        if (STDIN.readLine() == null) throw new IllegalStateException("stdin closed while waiting for " + what);
    }

    /** The common settings, as KafkaClients has them (for this scenario's bootstrap). */
    static Properties props(String clientId) {
        KafkaClients.bootstrap = bootstrap;
        return KafkaClients.props(clientId);
    }

    static KafkaProducer<byte[], byte[]> producer(String clientId, Map<String, String> extra) {
        KafkaClients.bootstrap = bootstrap;
        Properties p = KafkaClients.producerProps(clientId);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "25000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.putAll(extra);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String clientId, String group, Map<String, String> extra) {
        Properties p = props(clientId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.putAll(extra);
        return new KafkaConsumer<>(p);
    }

    static Map<String, String> classic(String protocol) {
        Map<String, String> m = new HashMap<>();
        m.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (protocol.equals("classic")) {
            m.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "200");
            m.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
        }
        return m;
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static byte[] bytes(Object s) {
        return s == null ? null : ((String) s).getBytes(StandardCharsets.UTF_8);
    }

    @SuppressWarnings("unchecked")
    static ProducerRecord<byte[], byte[]> record(String topic, Map<String, Object> r) {
        Object ts = r.get("timestamp");
        ProducerRecord<byte[], byte[]> pr = new ProducerRecord<>(topic, 0, ts == null ? null : ((Number) ts).longValue(),
                bytes(r.get("key")), bytes(r.get("value")));
        for (List<Object> h : (List<List<Object>>) r.getOrDefault("headers", List.of())) {
            pr.headers().add((String) h.get(0), bytes(h.get(1)));
        }
        return pr;
    }

    static Map<String, Object> asRecord(ConsumerRecord<byte[], byte[]> r) {
        Map<String, Object> m = new LinkedHashMap<>();
        List<List<String>> headers = new ArrayList<>();
        for (Header h : r.headers()) headers.add(java.util.Arrays.asList(h.key(), text(h.value())));
        m.put("partition", r.partition());
        m.put("offset", r.offset());
        m.put("key", text(r.key()));
        m.put("value", text(r.value()));
        m.put("headers", headers);
        m.put("timestamp", r.timestamp());
        m.put("timestamp_type", r.timestampType() == TimestampType.CREATE_TIME ? 0
                : r.timestampType() == TimestampType.LOG_APPEND_TIME ? 1 : null);
        return m;
    }

    /** Polls until {@code want} records came (or WAIT seconds passed: then throws). */
    static List<ConsumerRecord<byte[], byte[]>> poll(KafkaConsumer<byte[], byte[]> c, int want) {
        List<ConsumerRecord<byte[], byte[]>> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
        while (got.size() < want && System.nanoTime() < deadline) {
            c.poll(Duration.ofMillis(100)).forEach(got::add);
        }
        if (got.size() < want) throw new IllegalStateException("read " + got.size() + " of " + want + " records");
        return got;
    }

    static List<List<Number>> positions(Collection<ConsumerRecord<byte[], byte[]>> rs) {
        List<List<Number>> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : rs) out.add(List.of(r.partition(), r.offset()));
        return out;
    }

    static Map<TopicPartition, OffsetAndMetadata> nextOffsets(Collection<ConsumerRecord<byte[], byte[]>> rs) {
        Map<TopicPartition, OffsetAndMetadata> out = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : rs) {
            TopicPartition tp = new TopicPartition(r.topic(), r.partition());
            if (!out.containsKey(tp) || out.get(tp).offset() <= r.offset()) out.put(tp, new OffsetAndMetadata(r.offset() + 1));
        }
        return out;
    }

    static List<ConsumerRecord<byte[], byte[]>> readAll(String topic, int want, Map<String, String> extra) {
        try (KafkaConsumer<byte[], byte[]> c = consumer("java-reader", null, extra)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            return poll(c, want);
        }
    }

    // -- the scenarios --------------------------------------------------------

    @SuppressWarnings("unchecked")
    static Object codecs(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic");
        for (List<Object> batch : (List<List<Object>>) a.get("batches")) {
            try (KafkaProducer<byte[], byte[]> p = producer("java-producer", Map.of(
                    ProducerConfig.COMPRESSION_TYPE_CONFIG, (String) batch.get(0)))) {
                for (Map<String, Object> r : (List<Map<String, Object>>) batch.get(1)) p.send(record(topic, r));
                p.flush();
            }
        }
        List<Map<String, Object>> records = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : readAll(topic, ((Number) a.get("count")).intValue(), Map.of())) {
            records.add(asRecord(r));
        }
        return Map.of("records", records);
    }

    static Object group(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic"), group = (String) a.get("group");
        String protocol = (String) a.get("protocol");
        int partitions = ((Number) a.get("partitions")).intValue();
        int first = ((Number) a.get("first")).intValue(), second = ((Number) a.get("second")).intValue();
        try (KafkaConsumer<byte[], byte[]> one = consumer("java-member-1", group, classic(protocol));
             KafkaConsumer<byte[], byte[]> two = consumer("java-member-2", group, classic(protocol))) {
            one.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> firstRead = poll(one, first);
            one.commitSync(nextOffsets(firstRead));
            two.subscribe(List.of(topic));
            List<List<ConsumerRecord<byte[], byte[]>>> read = List.of(new ArrayList<>(), new ArrayList<>());
            List<KafkaConsumer<byte[], byte[]>> members = List.of(one, two);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
            while (true) {
                for (int i = 0; i < 2; i++) members.get(i).poll(Duration.ofMillis(50)).forEach(read.get(i)::add);
                Set<TopicPartition> x = one.assignment(), y = two.assignment();
                Set<TopicPartition> both = new HashSet<>(x);
                both.addAll(y);
                if (!x.isEmpty() && !y.isEmpty() && x.size() + y.size() == partitions && both.size() == partitions) break;
                if (System.nanoTime() > deadline) throw new IllegalStateException("no split: " + x + " / " + y);
            }
            List<List<Integer>> assignments = new ArrayList<>();
            for (KafkaConsumer<byte[], byte[]> c : members) {
                TreeSet<Integer> ps = new TreeSet<>();
                for (TopicPartition tp : c.assignment()) ps.add(tp.partition());
                assignments.add(new ArrayList<>(ps));
            }
            pause("rebalanced");
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
            while (read.get(0).size() + read.get(1).size() < second && System.nanoTime() < deadline) {
                for (int i = 0; i < 2; i++) members.get(i).poll(Duration.ofMillis(50)).forEach(read.get(i)::add);
            }
            for (int i = 0; i < 2; i++) members.get(i).commitSync();
            return Map.of("first", positions(firstRead), "assignments", assignments,
                    "second", List.of(positions(read.get(0)), positions(read.get(1))));
        }
    }

    @SuppressWarnings("unchecked")
    static Object commit(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic"), group = (String) a.get("group");
        Map<TopicPartition, OffsetAndMetadata> chosen = new HashMap<>();
        for (Map.Entry<String, Object> e : ((Map<String, Object>) a.get("offsets")).entrySet()) {
            chosen.put(new TopicPartition(topic, Integer.parseInt(e.getKey())),
                    new OffsetAndMetadata(((Number) e.getValue()).longValue()));
        }
        List<List<Number>> first;
        try (KafkaConsumer<byte[], byte[]> one = consumer("java-committer", group, Map.of())) {
            one.subscribe(List.of(topic));
            first = positions(poll(one, ((Number) a.get("first")).intValue()));
            one.commitSync(chosen);
        }
        pause("committed");
        try (KafkaConsumer<byte[], byte[]> two = consumer("java-resumer", group, Map.of())) {
            two.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> resumed = poll(two, ((Number) a.get("second")).intValue());
            two.commitSync();
            Map<String, Long> committed = new TreeMap<>();
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : two.committed(chosen.keySet()).entrySet()) {
                committed.put(String.valueOf(e.getKey().partition()), e.getValue() == null ? null : e.getValue().offset());
            }
            return Map.of("first", first, "resumed", positions(resumed), "committed", committed);
        }
    }

    @SuppressWarnings("unchecked")
    static Object transactions(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic"), group = (String) a.get("group");
        try (KafkaProducer<byte[], byte[]> p = producer("java-txn", Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, (String) a.get("txn")))) {
            p.initTransactions();
            for (List<Object> t : (List<List<Object>>) a.get("transactions")) {
                p.beginTransaction();
                for (Map<String, Object> r : (List<Map<String, Object>>) t.get(0)) p.send(record(topic, r));
                p.flush();  // the records of an aborted transaction are in the log too
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (List<Object> o : (List<List<Object>>) t.get(1)) {
                    offsets.put(new TopicPartition((String) o.get(0), ((Number) o.get(1)).intValue()),
                            new OffsetAndMetadata(((Number) o.get(2)).longValue()));
                }
                if (!offsets.isEmpty()) p.sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(group));
                if ((Boolean) t.get(2)) p.commitTransaction(); else p.abortTransaction();
            }
        }
        Map<String, Object> out = new LinkedHashMap<>();
        for (String level : List.of("read_committed", "read_uncommitted")) {
            int want = ((Number) a.get(level.equals("read_committed") ? "committed" : "uncommitted")).intValue();
            try (KafkaConsumer<byte[], byte[]> c = consumer("java-reader", null,
                    Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, level))) {
                TopicPartition tp = new TopicPartition(topic, 0);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                List<ConsumerRecord<byte[], byte[]>> got = poll(c, want);
                long settle = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(((Number) a.get("settle_ms")).longValue());
                while (System.nanoTime() < settle) c.poll(Duration.ofMillis(50)).forEach(got::add);
                List<Map<String, Object>> rs = new ArrayList<>();
                for (ConsumerRecord<byte[], byte[]> r : got) rs.add(asRecord(r));
                out.put(level, rs);
            }
        }
        return out;
    }

    interface Call { Object run() throws Exception; }

    /**
     * What {@code call} answers once it answers {@code want} (or its last
     * answer after 10 s): Kafka applies a topic's new partitions, configs and
     * deletion on each broker a moment after the admin call returns.
     */
    static Object eventually(Call call, Object want) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            Object got = call.run();
            if (got.equals(want) || System.nanoTime() > deadline) return got;
            Thread.sleep(50);
        }
    }

    static Object admin(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic"), group = (String) a.get("group"), fresh = (String) a.get("new_topic");
        String txn = (String) a.get("txn");
        Map<String, Object> out = new LinkedHashMap<>();
        try (Admin admin = Admin.create(props("java-admin"))) {
            Map<String, Call> calls = new LinkedHashMap<>();
            Call partitions = () -> admin.describeTopics(List.of(fresh)).allTopicNames().get(WAIT, TimeUnit.SECONDS)
                    .get(fresh).partitions().size();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, fresh);
            Call configs = () -> {
                Config c = admin.describeConfigs(List.of(res)).all().get(WAIT, TimeUnit.SECONDS).get(res);
                return Map.of("cleanup.policy", c.get("cleanup.policy").value(), "retention.ms", c.get("retention.ms").value());
            };
            calls.put("create_topics", () -> {
                admin.createTopics(List.of(new NewTopic(fresh, 1, (short) 1))).all().get(WAIT, TimeUnit.SECONDS);
                return eventually(partitions, 1);
            });
            calls.put("create_partitions", () -> {
                admin.createPartitions(Map.of(fresh, NewPartitions.increaseTo(3))).all().get(WAIT, TimeUnit.SECONDS);
                return eventually(partitions, 3);
            });
            calls.put("describe_configs", configs);
            calls.put("alter_configs", () -> {
                admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                        new ConfigEntry("retention.ms", "86400000"), AlterConfigOp.OpType.SET))))
                        .all().get(WAIT, TimeUnit.SECONDS);
                return eventually(() -> ((Map<?, ?>) configs.run()).get("retention.ms"), "86400000");
            });
            calls.put("delete_topics", () -> {
                admin.deleteTopics(List.of(fresh)).all().get(WAIT, TimeUnit.SECONDS);
                return eventually(() -> !admin.listTopics().names().get(WAIT, TimeUnit.SECONDS).contains(fresh), true);
            });
            Call listed = () -> {
                for (GroupListing g : admin.listGroups().all().get(WAIT, TimeUnit.SECONDS)) {
                    if (g.groupId().equals(group)) return true;
                }
                return false;
            };
            calls.put("list_groups", listed);
            calls.put("describe_groups", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all()
                        .get(WAIT, TimeUnit.SECONDS).get(group);
                String state = d.groupState().toString();
                return List.of(state.substring(0, 1).toUpperCase() + state.substring(1).toLowerCase(), d.members().size());
            });
            calls.put("delete_groups", () -> {
                admin.deleteConsumerGroups(List.of(group)).all().get(WAIT, TimeUnit.SECONDS);
                return !(Boolean) listed.run();
            });
            TopicPartition tp = new TopicPartition(topic, 0);
            calls.put("delete_records", () -> {
                admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(2))).all().get(WAIT, TimeUnit.SECONDS);
                return admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get(WAIT, TimeUnit.SECONDS)
                        .get(tp).offset();
            });
            calls.put("describe_producers", () -> admin.describeProducers(List.of(tp)).all()
                    .get(WAIT, TimeUnit.SECONDS).get(tp).activeProducers().size());
            calls.put("list_transactions", () -> {
                for (TransactionListing t : admin.listTransactions().all().get(WAIT, TimeUnit.SECONDS)) {
                    if (t.transactionalId().equals(txn)) return t.state().toString();
                }
                return null;
            });
            calls.put("describe_cluster", () -> {
                var d = admin.describeCluster();
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("brokers", d.nodes().get(WAIT, TimeUnit.SECONDS).size());
                m.put("controller", d.controller().get(WAIT, TimeUnit.SECONDS) != null);
                m.put("cluster_id", d.clusterId().get(WAIT, TimeUnit.SECONDS) != null);
                return m;
            });
            for (Map.Entry<String, Call> e : calls.entrySet()) {
                try {
                    out.put(e.getKey(), e.getValue().run());
                } catch (Exception ex) {
                    Throwable cause = ex.getCause() != null ? ex.getCause() : ex;
                    out.put(e.getKey(), "error: " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
                }
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    static Object leader(Map<String, Object> a) throws Exception {
        String topic = (String) a.get("topic");
        List<Map<String, Object>> before = (List<Map<String, Object>>) a.get("before");
        List<Map<String, Object>> after = (List<Map<String, Object>>) a.get("after");
        List<Long> produced = new ArrayList<>();
        List<List<Object>> read = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer("java-producer", Map.of(ProducerConfig.ACKS_CONFIG, "all"));
             KafkaConsumer<byte[], byte[]> c = consumer("java-consumer", null, Map.of())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            for (Map<String, Object> r : before) produced.add(p.send(record(topic, r)).get(WAIT, TimeUnit.SECONDS).offset());
            for (ConsumerRecord<byte[], byte[]> r : poll(c, before.size())) read.add(List.of(r.offset(), text(r.value())));
            pause("move");
            for (Map<String, Object> r : after) produced.add(p.send(record(topic, r)).get(WAIT, TimeUnit.SECONDS).offset());
            for (ConsumerRecord<byte[], byte[]> r : poll(c, after.size())) read.add(List.of(r.offset(), text(r.value())));
        }
        return Map.of("produced", produced, "read", read);
    }

    /** Runs one scenario and prints its result → whether it succeeded. */
    static boolean run(String name, String target, Map<String, Object> a) throws Exception {
        bootstrap = target;
        try {
            Object result;
            switch (name) {
                case "codecs": result = codecs(a); break;
                case "group": result = group(a); break;
                case "commit": result = commit(a); break;
                case "transactions": result = transactions(a); break;
                case "admin": result = admin(a); break;
                case "leader": result = leader(a); break;
                default: throw new IllegalArgumentException("no scenario " + name);
            }
            emit("result", result);
            return true;
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            emit("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
            return false;
        }
    }

    /**
     * {@code NAME BOOTSTRAP ARGS_JSON}: one scenario; {@code serve}: one
     * scenario for each line of stdin, {"scenario", "bootstrap", "args"}, until
     * stdin ends (one JVM for a whole run of the suite).
     */
    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        if (args[0].equals("serve")) {
            String line;
            while ((line = STDIN.readLine()) != null) {
                if (line.isBlank()) continue;
                Map<String, Object> cmd = JSON.readValue(line, Map.class);
                run((String) cmd.get("scenario"), (String) cmd.get("bootstrap"), (Map<String, Object>) cmd.get("args"));
            }
            System.exit(0);
        }
        System.exit(run(args[0], args[1], JSON.readValue(args[2], Map.class)) ? 0 : 1);
    }
}
