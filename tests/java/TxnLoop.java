// A transactional producer loop for tests/java_txn_loop.py (tests/broker/test_transactions_v2.py,
// tests/cluster/test_transactions_v2_cluster.py), run by the JVM's
// source-file launcher (java -cp <kafka-clients jars> TxnLoop.java ...): no build step.
//
// Args: bootstrap topic transactionalId transactions recordsPerTransaction group
// Transaction i sends recordsPerTransaction records (value "t<i>-<j>", partition j % 3)
// and commits offset i + 1 of partition 0 for the group (sendOffsetsToTransaction); every
// third transaction (i % 3 == 2) is aborted, the others committed. After each end, one
// JSON line: the transaction's index, whether it committed, and the id's producer id,
// epoch and state as DescribeTransactions answers them.
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnLoop {
    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable failure) {
            // The source launcher trims a failure's stack trace and can fail doing so
            // (JDK 17: "IllegalArgumentException: 0 > -7"), hiding the cause: print it here.
            failure.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        String transactionalId = args[2];
        int transactions = Integer.parseInt(args[3]);
        int perTransaction = Integer.parseInt(args[4]);
        String group = args[5];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("enable.metrics.push", "false");  // KIP-714 needs jars not on the classpath
        props.put("transactional.id", transactionalId);
        props.put("transaction.timeout.ms", "60000");
        props.put("max.block.ms", "60000");
        props.put("delivery.timeout.ms", "60000");
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        Properties adminProps = new Properties();
        adminProps.put("bootstrap.servers", bootstrap);
        adminProps.put("enable.metrics.push", "false");
        try (Admin admin = Admin.create(adminProps);
             KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            for (int i = 0; i < transactions; i++) {
                producer.beginTransaction();
                for (int j = 0; j < perTransaction; j++) {
                    producer.send(new ProducerRecord<>(topic, j % 3, "k" + j, "t" + i + "-" + j));
                }
                producer.sendOffsetsToTransaction(
                    Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(i + 1)),
                    new ConsumerGroupMetadata(group));
                boolean commit = i % 3 != 2;
                if (commit) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
                TransactionDescription d = admin.describeTransactions(List.of(transactionalId))
                    .description(transactionalId).get(30, TimeUnit.SECONDS);
                System.out.println("{\"txn\": " + i + ", \"committed\": " + commit
                    + ", \"producer_id\": " + d.producerId() + ", \"epoch\": " + d.producerEpoch()
                    + ", \"state\": \"" + d.state() + "\"}");
                System.out.flush();
            }
        }
        System.out.println("{\"done\": true}");
    }
}
