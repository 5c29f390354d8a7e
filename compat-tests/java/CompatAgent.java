import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java-client family of the compatibility suite, as one long-lived JVM: it reads one JSON
 * request per line on stdin ({"op": ..., args}) and answers one JSON line on stdout, either
 * {"ok": true, "result": ...} or {"ok": false, "error": "ExceptionClass: message"}. One JVM
 * start serves the whole run. Bytes travel as base64, absent bytes as null. Each request
 * opens and closes its own clients; every client call is bounded by client timeouts.
 */
public final class CompatAgent {
    private static final int REQUEST_TIMEOUT_MS = 10_000;
    private static final long WAIT_S = 15;
    private static final Duration POLL_BUDGET = Duration.ofSeconds(12);

    private final String defaultBootstrap;
    // Per request: the bootstrap and the client properties (security.protocol, ssl.*, sasl.*)
    // a request may carry, so that one JVM serves every listener and user of a secured broker.
    private String bootstrap;
    private Map<String, String> clientConfig = Map.of();

    private CompatAgent(String bootstrap) {
        this.defaultBootstrap = bootstrap;
        this.bootstrap = bootstrap;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: CompatAgent HOST:PORT   (then JSON requests on stdin)");
            System.exit(2);
        }
        // Only protocol lines may reach stdout: route stray client output to stderr.
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        CompatAgent agent = new CompatAgent(args[0]);
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("{\"ok\":true,\"result\":\"ready\"}");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            Map<String, Object> reply = new LinkedHashMap<>();
            try {
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) Json.parse(line);
                reply.put("ok", true);
                reply.put("result", agent.handle(req));
            } catch (Throwable t) {
                reply.clear();
                reply.put("ok", false);
                reply.put("error", describe(t));
            }
            out.println(Json.write(reply));
        }
    }

    static String describe(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof RuntimeException)
                && t.getCause() != null && t.getCause() != t
                && t.getClass().getName().startsWith("java.")) {
            t = t.getCause();
        }
        // A client left in an error state says only that, and keeps what put it there as the
        // cause (the producer whose InitProducerId was refused, when the send comes after the
        // answer): the causes name the error the broker gave, so they are part of the reply.
        StringBuilder text = new StringBuilder(t.getClass().getName() + ": " + t.getMessage());
        Throwable cause = t.getCause();
        for (int depth = 0; cause != null && cause != t && depth < 4; depth++) {
            text.append(" (caused by ").append(cause.getClass().getName()).append(": ")
                    .append(cause.getMessage()).append(")");
            t = cause;
            cause = cause.getCause();
        }
        return text.toString();
    }

    private Object handle(Map<String, Object> r) throws Exception {
        String op = (String) r.get("op");
        Object given = r.get("bootstrap");
        bootstrap = given == null ? defaultBootstrap : (String) given;
        Map<String, String> config = new HashMap<>();
        @SuppressWarnings("unchecked")
        Map<String, Object> extra = (Map<String, Object>) r.get("client_config");
        if (extra != null) extra.forEach((k, v) -> config.put(k, String.valueOf(v)));
        clientConfig = config;
        switch (op) {
            case "version": return org.apache.kafka.common.utils.AppInfoParser.getVersion();
            case "partitions_for": return partitionsFor(str(r, "topic"));
            case "list_topics": return listTopics();
            case "create_topic": return createTopic(r);
            case "delete_topic": return deleteTopic(str(r, "topic"));
            case "create_partitions": return createPartitions(str(r, "topic"), num(r, "total"));
            case "describe_partition_count": return describePartitionCount(str(r, "topic"));
            case "produce": return produce(r);
            case "consume": return consume(r);
            case "seek_reread": return seekReread(r);
            case "list_offset": return listOffset(r);
            case "group_consume": return groupConsume(r);
            case "list_groups": return listGroups();
            case "describe_group": return describeGroup(str(r, "group"));
            case "describe_configs": return describeConfigs(str(r, "topic"));
            case "alter_configs": return alterConfigs(r);
            case "delete_records": return deleteRecords(r);
            case "spark_read": return sparkRead(r);
            case "group_two_members": return groupTwoMembers(r);
            case "txn_produce": return txnProduce(r);
            case "txn_copy": return txnCopy(r);
            case "committed_offset": return committedOffset(r);
            case "txn_fencing": return txnFencing(r);
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ---- clients --------------------------------------------------------------------------

    private Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS + 2_000);
        p.putAll(clientConfig);
        return Admin.create(p);
    }

    /** Producer with default settings except serializers, timeouts and the given overrides. */
    private KafkaProducer<byte[], byte[]> producer(Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS + 3_000);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, REQUEST_TIMEOUT_MS);
        p.putAll(clientConfig);
        if (overrides != null) {
            for (Map.Entry<String, Object> e : overrides.entrySet()) {
                p.put(e.getKey(), String.valueOf(e.getValue()));
            }
        }
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private KafkaConsumer<byte[], byte[]> consumer(String group, Map<String, String> extra) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, REQUEST_TIMEOUT_MS + 2_000);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.putAll(clientConfig);
        if (group != null) p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        if (extra != null) p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static <T> T get(Future<T> f) throws Exception {
        return f.get(WAIT_S, TimeUnit.SECONDS);
    }

    // ---- operations -------------------------------------------------------------------------

    private Object partitionsFor(String topic) {
        try (KafkaProducer<byte[], byte[]> p = producer(null)) {
            return p.partitionsFor(topic).size();
        }
    }

    private Object listTopics() throws Exception {
        try (Admin a = admin()) {
            return new ArrayList<>(get(a.listTopics().names()));
        }
    }

    private Object createTopic(Map<String, Object> r) throws Exception {
        NewTopic t = new NewTopic(str(r, "topic"), num(r, "partitions"), (short) 1);
        @SuppressWarnings("unchecked")
        Map<String, Object> configs = (Map<String, Object>) r.get("configs");
        if (configs != null) {
            Map<String, String> c = new HashMap<>();
            configs.forEach((k, v) -> c.put(k, String.valueOf(v)));
            t.configs(c);
        }
        try (Admin a = admin()) {
            get(a.createTopics(List.of(t)).all());
        }
        return null;
    }

    private Object deleteTopic(String topic) throws Exception {
        try (Admin a = admin()) {
            get(a.deleteTopics(List.of(topic)).all());
        }
        return null;
    }

    private Object createPartitions(String topic, int total) throws Exception {
        try (Admin a = admin()) {
            get(a.createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all());
        }
        return null;
    }

    private Object describePartitionCount(String topic) throws Exception {
        try (Admin a = admin()) {
            return get(a.describeTopics(List.of(topic)).allTopicNames())
                    .get(topic).partitions().size();
        }
    }

    @SuppressWarnings("unchecked")
    private Object produce(Map<String, Object> r) throws Exception {
        Map<String, Object> overrides = new HashMap<>();
        Object config = r.get("config");
        if (config != null) overrides.putAll((Map<String, Object>) config);
        String codec = (String) r.get("codec");
        if (codec != null) overrides.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        String topic = str(r, "topic");
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer(overrides)) {
            for (Object o : (List<Object>) r.get("records")) {
                Map<String, Object> rec = (Map<String, Object>) o;
                List<Header> headers = new ArrayList<>();
                for (Object h : (List<Object>) rec.get("headers")) {
                    List<Object> kv = (List<Object>) h;
                    headers.add(new RecordHeader((String) kv.get(0), bytes(kv.get(1))));
                }
                Object partition = rec.get("partition");
                Integer part = partition == null ? null : ((Number) partition).intValue();
                futures.add(p.send(new ProducerRecord<>(topic, part, null,
                        bytes(rec.get("key")), bytes(rec.get("value")), headers)));
            }
            p.flush();
            List<Object> acks = new ArrayList<>();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata m = get(f);
                acks.add(List.of(m.partition(), m.offset()));
            }
            return acks;
        }
    }

    private static List<Object> poll(KafkaConsumer<byte[], byte[]> c, int count) {
        List<Object> got = new ArrayList<>();
        long deadline = System.nanoTime() + POLL_BUDGET.toNanos();
        while (got.size() < count && System.nanoTime() < deadline) {
            for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) {
                if (got.size() < count) got.add(record(rec));
            }
        }
        return got;
    }

    /** Assigns, positions and polls without a group (the way Spark's executors read). */
    @SuppressWarnings("unchecked")
    private Object consume(Map<String, Object> r) {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        Map<String, Object> start = (Map<String, Object>) r.get("start");
        String kind = (String) start.get("kind");
        long value = ((Number) start.get("value")).longValue();
        Object isolation = r.get("isolation");
        Map<String, String> extra = isolation == null ? null
                : Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, (String) isolation);
        try (KafkaConsumer<byte[], byte[]> c = consumer(null, extra)) {
            c.assign(List.of(tp));
            switch (kind) {
                case "earliest": c.seekToBeginning(List.of(tp)); break;
                case "offset": c.seek(tp, value); break;
                case "tail":
                    c.seekToEnd(List.of(tp));
                    c.seek(tp, Math.max(0, c.position(tp) - value));
                    break;
                case "timestamp":
                    OffsetAndTimestamp found = c.offsetsForTimes(Map.of(tp, value)).get(tp);
                    if (found == null) c.seekToEnd(List.of(tp));
                    else c.seek(tp, found.offset());
                    break;
                default: throw new IllegalArgumentException("start kind " + kind);
            }
            return poll(c, num(r, "count"));
        }
    }

    private Object seekReread(Map<String, Object> r) {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        try (KafkaConsumer<byte[], byte[]> c = consumer(null, null)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            List<Object> one = poll(c, num(r, "first"));
            c.seek(tp, num(r, "seek_to"));
            return List.of(one, poll(c, num(r, "second")));
        }
    }

    private Object listOffset(Map<String, Object> r) throws Exception {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        Object spec = r.get("spec");
        OffsetSpec s;
        if ("earliest".equals(spec)) s = OffsetSpec.earliest();
        else if ("latest".equals(spec)) s = OffsetSpec.latest();
        else s = OffsetSpec.forTimestamp(((Number) spec).longValue());
        try (Admin a = admin()) {
            ListOffsetsResult.ListOffsetsResultInfo info =
                    get(a.listOffsets(Map.of(tp, s)).partitionResult(tp));
            return info.offset();
        }
    }

    private Object groupConsume(Map<String, Object> r) {
        String topic = str(r, "topic");
        Map<String, String> extra = groupTimeouts(r);
        try (KafkaConsumer<byte[], byte[]> c = consumer(str(r, "group"), extra)) {
            c.subscribe(List.of(topic));
            List<Object> got = poll(c, num(r, "count"));
            if (!got.isEmpty()) {
                @SuppressWarnings("unchecked")
                Map<String, Object> last = (Map<String, Object>) got.get(got.size() - 1);
                int partition = ((Number) last.get("partition")).intValue();
                long next = ((Number) last.get("offset")).longValue() + 1;
                c.commitSync(Map.of(new TopicPartition(topic, partition),
                        new OffsetAndMetadata(next)));
            }
            return got;
        }
    }

    /**
     * Two members of one group on one thread, polled in turn until each owns some partitions
     * and together they have seen ``total`` distinct records (or the poll budget ran out).
     * Returns [assignment of member 1, assignment of member 2, records seen as [p, offset]].
     */
    private Object groupTwoMembers(Map<String, Object> r) {
        String topic = str(r, "topic");
        Map<String, String> extra = groupTimeouts(r);
        int total = num(r, "total");
        try (KafkaConsumer<byte[], byte[]> a = consumer(str(r, "group"), extra);
                KafkaConsumer<byte[], byte[]> b = consumer(str(r, "group"), extra)) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            java.util.Set<List<Object>> seen = new java.util.LinkedHashSet<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (System.nanoTime() < deadline) {
                for (KafkaConsumer<byte[], byte[]> c : List.of(a, b)) {
                    for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) {
                        seen.add(List.of(rec.partition(), rec.offset()));
                    }
                }
                // Settled: both own partitions and none has two owners (a member's
                // assignment() can lag the group's decision during a rebalance).
                if (seen.size() >= total && !a.assignment().isEmpty()
                        && !b.assignment().isEmpty()
                        && java.util.Collections.disjoint(a.assignment(), b.assignment())) break;
            }
            return List.of(partitions(a.assignment()), partitions(b.assignment()),
                    new ArrayList<>(seen));
        }
    }

    private static List<Object> partitions(java.util.Set<TopicPartition> tps) {
        List<Object> out = new ArrayList<>();
        for (TopicPartition tp : tps) out.add(tp.partition());
        return out;
    }

    private static Map<String, String> groupTimeouts(Map<String, Object> r) {
        return Map.of(
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, String.valueOf(num(r, "session_ms")),
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                String.valueOf(num(r, "heartbeat_ms")));
    }

    private Object listGroups() throws Exception {
        try (Admin a = admin()) {
            List<Object> ids = new ArrayList<>();
            Collection<ConsumerGroupListing> all = get(a.listConsumerGroups().all());
            for (ConsumerGroupListing g : all) ids.add(g.groupId());
            return ids;
        }
    }

    private Object describeGroup(String group) throws Exception {
        try (Admin a = admin()) {
            ConsumerGroupDescription d =
                    get(a.describeConsumerGroups(List.of(group)).describedGroups().get(group));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("state", d.state().toString());
            // Admin exposes the protocol type only as "simple group" (empty protocol type).
            m.put("protocol_type", d.isSimpleConsumerGroup() ? "" : "consumer");
            m.put("members", d.members().size());
            m.put("assignor", d.partitionAssignor());
            return m;
        }
    }

    private Object describeConfigs(String topic) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin a = admin()) {
            Config config = get(a.describeConfigs(List.of(res)).all()).get(res);
            Map<String, Object> m = new LinkedHashMap<>();
            for (ConfigEntry e : config.entries()) m.put(e.name(), e.value());
            return m;
        }
    }

    @SuppressWarnings("unchecked")
    private Object alterConfigs(Map<String, Object> r) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, str(r, "topic"));
        List<AlterConfigOp> ops = new ArrayList<>();
        ((Map<String, Object>) r.get("configs")).forEach((k, v) -> ops.add(new AlterConfigOp(
                new ConfigEntry(k, String.valueOf(v)), AlterConfigOp.OpType.SET)));
        try (Admin a = admin()) {
            get(a.incrementalAlterConfigs(Map.of(res, ops)).all());
        }
        return null;
    }

    private Object deleteRecords(Map<String, Object> r) throws Exception {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        try (Admin a = admin()) {
            return get(a.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(num(r, "before"))))
                    .lowWatermarks().get(tp)).lowWatermark();
        }
    }

    /**
     * Reads [from, until) like a Spark executor's consumer: a private group id that is never
     * joined, no auto commit, auto.offset.reset=none; first the available offset range
     * (seekToBeginning/seekToEnd + position, as Spark checks for data loss), then assign +
     * seek + poll. Returns {"range": [earliest, latest], "records": [...]}.
     */
    private Object sparkRead(Map<String, Object> r) {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        long from = ((Number) r.get("from")).longValue();
        long until = ((Number) r.get("until")).longValue();
        String group = "spark-kafka-source-" + UUID.randomUUID() + "-executor";
        Map<String, String> extra = Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        try (KafkaConsumer<byte[], byte[]> c = consumer(group, extra)) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long earliest = c.position(tp);
            c.seekToEnd(List.of(tp));
            long latest = c.position(tp);
            c.seek(tp, from);
            List<Object> got = new ArrayList<>();
            long deadline = System.nanoTime() + POLL_BUDGET.toNanos();
            while (c.position(tp) < until && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(512))) {
                    if (rec.offset() < until) got.add(record(rec));
                }
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("range", List.of(earliest, latest));
            out.put("records", got);
            return out;
        }
    }

    // ---- transactions -----------------------------------------------------------------------

    private KafkaProducer<byte[], byte[]> txnProducer(String transactionalId) {
        Map<String, Object> o = new HashMap<>();
        o.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return producer(o);
    }

    @SuppressWarnings("unchecked")
    private static ProducerRecord<byte[], byte[]> producerRecord(String topic, Object o) {
        Map<String, Object> rec = (Map<String, Object>) o;
        List<Header> headers = new ArrayList<>();
        for (Object h : (List<Object>) rec.get("headers")) {
            List<Object> kv = (List<Object>) h;
            headers.add(new RecordHeader((String) kv.get(0), bytes(kv.get(1))));
        }
        Object partition = rec.get("partition");
        Integer part = partition == null ? null : ((Number) partition).intValue();
        return new ProducerRecord<>(topic, part, null, bytes(rec.get("key")),
                bytes(rec.get("value")), headers);
    }

    /** init, then per {"records", "commit"}: begin, send all (acked), commit or abort. */
    @SuppressWarnings("unchecked")
    private Object txnProduce(Map<String, Object> r) throws Exception {
        String topic = str(r, "topic");
        try (KafkaProducer<byte[], byte[]> p = txnProducer(str(r, "transactional_id"))) {
            p.initTransactions();
            for (Object t : (List<Object>) r.get("txns")) {
                Map<String, Object> txn = (Map<String, Object>) t;
                p.beginTransaction();
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (Object rec : (List<Object>) txn.get("records")) {
                    futures.add(p.send(producerRecord(topic, rec)));
                }
                p.flush();
                for (Future<RecordMetadata> f : futures) get(f);
                if (Boolean.TRUE.equals(txn.get("commit"))) p.commitTransaction();
                else p.abortTransaction();
            }
        }
        return null;
    }

    /** Consume-transform-produce once, offsets through sendOffsetsToTransaction. */
    private Object txnCopy(Map<String, Object> r) throws Exception {
        TopicPartition src = new TopicPartition(str(r, "source"), 0);
        String dest = str(r, "dest");
        Map<String, String> extra =
                Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        try (KafkaConsumer<byte[], byte[]> c = consumer(str(r, "group"), extra);
                KafkaProducer<byte[], byte[]> p = txnProducer(str(r, "transactional_id"))) {
            p.initTransactions();
            c.assign(List.of(src));
            List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
            int count = num(r, "count");
            long deadline = System.nanoTime() + POLL_BUDGET.toNanos();
            while (read.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) {
                    if (read.size() < count) read.add(rec);
                }
            }
            p.beginTransaction();
            List<Object> got = new ArrayList<>();
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (ConsumerRecord<byte[], byte[]> rec : read) {
                got.add(record(rec));
                byte[] prefix = "copied:".getBytes(StandardCharsets.UTF_8);
                byte[] value = new byte[prefix.length + rec.value().length];
                System.arraycopy(prefix, 0, value, 0, prefix.length);
                System.arraycopy(rec.value(), 0, value, prefix.length, rec.value().length);
                futures.add(p.send(new ProducerRecord<>(dest, 0, rec.key(), value)));
            }
            if (!read.isEmpty()) {
                long next = read.get(read.size() - 1).offset() + 1;
                p.sendOffsetsToTransaction(Map.of(src, new OffsetAndMetadata(next)),
                        c.groupMetadata());
            }
            p.flush();
            for (Future<RecordMetadata> f : futures) get(f);
            if (Boolean.TRUE.equals(r.get("commit"))) p.commitTransaction();
            else p.abortTransaction();
            return got;
        }
    }

    private Object committedOffset(Map<String, Object> r) throws Exception {
        TopicPartition tp = new TopicPartition(str(r, "topic"), num(r, "partition"));
        try (Admin a = admin()) {
            OffsetAndMetadata m = get(a.listConsumerGroupOffsets(str(r, "group"))
                    .partitionsToOffsetAndMetadata()).get(tp);
            return m == null ? null : m.offset();
        }
    }

    /**
     * Zombie fencing: A begins and sends "first"; B (same transactional.id) initialises,
     * which fences A and aborts its transaction, then commits "successor"; A then sends
     * "late" (unless null) and commits. Returns [what A's send raised, what its commit
     * raised] ("" for no error).
     */
    private Object txnFencing(Map<String, Object> r) throws Exception {
        String topic = str(r, "topic");
        String id = str(r, "transactional_id");
        KafkaProducer<byte[], byte[]> zombie = txnProducer(id);
        try {
            zombie.initTransactions();
            zombie.beginTransaction();
            get(zombie.send(producerRecord(topic, r.get("first"))));
            try (KafkaProducer<byte[], byte[]> successor = txnProducer(id)) {
                successor.initTransactions();
                successor.beginTransaction();
                get(successor.send(producerRecord(topic, r.get("successor"))));
                successor.commitTransaction();
            }
            String sendError = "";
            String commitError = "";
            if (r.get("late") != null) {
                try {
                    Future<RecordMetadata> late =
                            zombie.send(producerRecord(topic, r.get("late")));
                    zombie.flush();
                    get(late);
                } catch (Exception e) {
                    sendError = describe(e);
                }
            }
            try {
                zombie.commitTransaction();
            } catch (Exception e) {
                commitError = describe(e);
            }
            return List.of(sendError, commitError);
        } finally {
            zombie.close(Duration.ofSeconds(2));
        }
    }

    // ---- encoding ---------------------------------------------------------------------------

    private static Map<String, Object> record(ConsumerRecord<byte[], byte[]> rec) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("partition", rec.partition());
        m.put("offset", rec.offset());
        m.put("timestamp", rec.timestamp());
        m.put("key", b64(rec.key()));
        m.put("value", b64(rec.value()));
        List<Object> headers = new ArrayList<>();
        for (Header h : rec.headers()) {
            List<Object> kv = new ArrayList<>();
            kv.add(h.key());
            kv.add(b64(h.value()));
            headers.add(kv);
        }
        m.put("headers", headers);
        return m;
    }

    private static String b64(byte[] b) {
        return b == null ? null : Base64.getEncoder().encodeToString(b);
    }

    private static byte[] bytes(Object o) {
        return o == null ? null : Base64.getDecoder().decode((String) o);
    }

    private static String str(Map<String, Object> r, String k) {
        return (String) r.get(k);
    }

    private static int num(Map<String, Object> r, String k) {
        return ((Number) r.get(k)).intValue();
    }
}
