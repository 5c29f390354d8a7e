// A Java 4.x consumer with group.protocol=consumer (KIP-848) for
// compat-tests/test_consumer_group_protocol.py. Run as a single source file:
//   java -cp <kafka-clients 4.x jars> Consume848.java BOOTSTRAP GROUP TOPIC [INSTANCE_ID]
// Prints one JSON object per line (the events tests/broker/group_helpers.py reads):
// {"ev":"assignment","partitions":[...]}, {"ev":"records","items":[[p,offset,value]]},
// {"ev":"error","error":"..."}, {"ev":"closed"}. Commits synchronously after each
// non-empty poll; stops (close(): commit, leave) when stdin says "stop" or closes.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

public class Consume848 {
    static volatile boolean stop = false;

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("group.protocol", "consumer");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("client.id", "kafkette-848-java");
        if (args.length > 3 && !args[3].isEmpty()) {
            p.put("group.instance.id", args[3]);
        }
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { }
            } catch (Exception e) { }
            stop = true;
        });
        reader.setDaemon(true);
        reader.start();
        String last = null;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(args[2]));
            while (!stop) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) {
                    StringBuilder items = new StringBuilder();
                    for (ConsumerRecord<String, String> r : records) {
                        if (items.length() > 0) items.append(',');
                        items.append('[').append(r.partition()).append(',').append(r.offset())
                            .append(",\"").append(r.value()).append("\"]");
                    }
                    try {
                        consumer.commitSync();
                    } catch (Exception e) {
                        System.out.println("{\"ev\":\"error\",\"error\":\"commit: "
                            + e.getClass().getSimpleName() + "\"}");
                    }
                    System.out.println("{\"ev\":\"records\",\"items\":[" + items + "]}");
                }
                List<Integer> parts = new ArrayList<>();
                for (TopicPartition tp : consumer.assignment()) parts.add(tp.partition());
                Collections.sort(parts);
                String now = parts.toString().replace(" ", "");
                if (!now.equals(last)) {
                    last = now;
                    System.out.println("{\"ev\":\"assignment\",\"partitions\":" + now + "}");
                }
                System.out.flush();
            }
        }
        System.out.println("{\"ev\":\"closed\"}");
        System.out.flush();
    }
}
