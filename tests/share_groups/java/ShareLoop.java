// Kafka 4.3's Java share consumer and Admin against a broker, one step per printed line
// (tests/share_groups/test_share_java.py reads them). Run with the source launcher:
// java -cp <kafka-clients 4.3 jars> ShareLoop.java BOOTSTRAP TOPIC GROUP
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareLoop {
    static void say(String step, String detail) {
        System.out.println(step + "\t" + detail);
        System.out.flush();
    }

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, String topic) {
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("group.id", group);
        props.put("share.acknowledgement.mode", "explicit");
        KafkaShareConsumer<String, String> c =
            new KafkaShareConsumer<>(props, new StringDeserializer(), new StringDeserializer());
        c.subscribe(List.of(topic));
        return c;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(adminProps)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"),
                AlterConfigOp.OpType.SET)))).all().get();
            Properties producerProps = new Properties();
            producerProps.put("bootstrap.servers", bootstrap);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                    producerProps, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 20; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, "v" + i));
                }
                producer.flush();
            }
            say("produced", "20");

            KafkaShareConsumer<String, String> c = consumer(bootstrap, group, topic);
            Set<Long> finished = new TreeSet<>();
            List<String> deliveries = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60_000;
            while (finished.size() < 20 && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<String, String> r : records) {
                    int count = r.deliveryCount().orElse((short) -1);
                    deliveries.add(r.offset() + ":" + count);
                    if (r.offset() == 3 && count == 1) {
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else if (r.offset() == 5) {
                        c.acknowledge(r, AcknowledgeType.REJECT);
                        finished.add(r.offset());
                    } else {
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        finished.add(r.offset());
                    }
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                }
            }
            say("deliveries", String.join(",", deliveries));
            say("lock_ms", String.valueOf(c.acquisitionLockTimeoutMs().orElse(-1)));

            ShareGroupDescription described =
                admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            say("described", described.groupState() + " members="
                + described.members().size() + " assignment="
                + described.members().iterator().next().assignment().topicPartitions());
            TopicPartition tp = new TopicPartition(topic, 0);
            Map<TopicPartition, SharePartitionOffsetInfo> offsets = admin.listShareGroupOffsets(
                Map.of(group, new ListShareGroupOffsetsSpec())).partitionsToOffsetInfo(group).get();
            SharePartitionOffsetInfo info = offsets.get(tp);
            say("offsets", info.startOffset() + " lag=" + info.lag().orElse(-1L));
            Collection<GroupListing> listed = admin.listGroups(
                new ListGroupsOptions().withTypes(Set.of(GroupType.SHARE))).all().get();
            StringBuilder names = new StringBuilder();
            for (GroupListing g : listed) {
                names.append(g.groupId()).append(':').append(g.type().orElse(null)).append(' ');
            }
            say("listed", names.toString().trim());
            c.close();

            admin.alterShareGroupOffsets(group, Map.of(tp, 15L)).all().get();
            KafkaShareConsumer<String, String> again = consumer(bootstrap, group, topic);
            List<Long> redone = new ArrayList<>();
            deadline = System.currentTimeMillis() + 30_000;
            while (redone.size() < 5 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : again.poll(Duration.ofMillis(500))) {
                    redone.add(r.offset());
                    again.acknowledge(r, AcknowledgeType.ACCEPT);
                }
                again.commitSync();
            }
            say("after_alter", redone.toString());
            again.close();
            admin.deleteShareGroups(List.of(group)).all().get();
            Collection<GroupListing> left = admin.listGroups(
                new ListGroupsOptions().withTypes(Set.of(GroupType.SHARE))).all().get();
            say("after_delete", String.valueOf(left.size()));
        }
    }
}
