import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.state.Stores;

/**
 * A stateful Kafka Streams app for compat-tests/test_streams_connect.py (issue 13): counts
 * records per key in tumbling event-time windows and writes every updated count to the output
 * topic as key {@code "<key>@<windowStartMs>"}, value the count in decimal, so Python can parse
 * it without Kafka's windowed serdes.
 *
 * <p>The window store is in memory ({@code Stores.inMemoryWindowStore}: no RocksDB native
 * library, nothing of the counts on local disk), so after a restart every count comes back from
 * its changelog topic, which Streams creates with {@code cleanup.policy=compact,delete}.
 *
 * <p>Usage: {@code WindowedCountApp <streams.properties> <input> <output> <store> <windowMs>
 * <graceMs>}. SIGTERM closes the app cleanly (offsets committed); if Streams dies on its own
 * the JVM exits with status 1, so the test sees it at once instead of waiting for counts.
 */
public final class WindowedCountApp {
    private WindowedCountApp() {}

    public static void main(String[] args) throws IOException, InterruptedException {
        if (args.length != 6) {
            System.err.println(
                "usage: WindowedCountApp <props> <input> <output> <store> <windowMs> <graceMs>");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        String input = args[1];
        String output = args[2];
        String store = args[3];
        Duration window = Duration.ofMillis(Long.parseLong(args[4]));
        Duration grace = Duration.ofMillis(Long.parseLong(args[5]));

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupByKey()
            .windowedBy(TimeWindows.ofSizeAndGrace(window, grace))
            // Retention must cover window + grace, or late records of open windows are lost.
            .count(Materialized.<String, Long>as(
                    Stores.inMemoryWindowStore(store, window.plus(grace), window, false))
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long()))
            .toStream()
            .map((windowed, count) -> KeyValue.pair(
                windowed.key() + "@" + windowed.window().start(), String.valueOf(count)))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch stopped = new CountDownLatch(1);
        AtomicBoolean asked = new AtomicBoolean(false);
        streams.setUncaughtExceptionHandler(exc -> {
            exc.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            asked.set(true);
            streams.close(Duration.ofSeconds(15));
            stopped.countDown();
        }, "windowed-count-shutdown"));
        streams.start();
        stopped.await();
        if (!asked.get()) {
            System.err.println("WindowedCountApp: Kafka Streams stopped on its own: "
                + streams.state());
            streams.close(Duration.ofSeconds(5));
            System.exit(1);
        }
    }
}
