#!/usr/bin/env bash
# Manual smoke check of issue 13 (compaction) with the reference Kafka's Streams and Connect:
#   1. Kafka Streams WordCountDemo (in-memory stores, changelog compacted with small segments)
#      counts exactly what Python counts, then restores its state from the compacted
#      changelog after a restart with its state dir deleted, and goes on counting exactly;
#   2. Kafka Connect in distributed mode starts (compacted config/offset/status topics) and a
#      FileStream source + sink move a file through a topic line for line.
# Exit 0 when both hold. Usage: compat-tests/streams/smoke.sh [KAFKETTE_BIN] [WORK_DIR]
# Takes about 2.5 minutes (three JVM starts). Not part of CI: the next step is a pytest test.
set -euo pipefail
KAFKETTE=${1:-$(dirname "$0")/../../.venv/bin/kafkette}
WORK=${2:-$(mktemp -d /tmp/kafkette-streams-smoke.XXXXXX)}
mkdir -p "$WORK"
KH=$(/work/shared/reference-kafka/kafka-ref home)
export KAFKA_HEAP_OPTS=-Xmx512m
PORT=29396
BOOT=127.0.0.1:$PORT
PIDS=()
cleanup() {  # newest first (Connect before the broker it talks to); SIGKILL after 20 s
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT

"$KAFKETTE" serve --listen "$BOOT" --data-dir "$WORK/data" \
  --config group.initial.rebalance.delay.ms=0 --config log.cleaner.backoff.ms=500 \
  > "$WORK/broker.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do grep -q "kafkette ready" "$WORK/broker.log" && break; sleep 0.2; done

cat > "$WORK/streams.properties" <<P
bootstrap.servers=$BOOT
application.id=smoke-wordcount
dsl.store.suppliers.class=org.apache.kafka.streams.state.BuiltInDslStoreSuppliers\$InMemoryDslStoreSuppliers
commit.interval.ms=200
state.dir=$WORK/state
topic.segment.bytes=65536
topic.min.cleanable.dirty.ratio=0.01
statestore.cache.max.bytes=0
P
python3 - "$WORK" <<'PY'
import random, sys
work = sys.argv[1]
for name, seed, count in (("lines1.txt", 7, 6000), ("lines2.txt", 8, 300)):
    r = random.Random(seed); words = ["w%d" % i for i in range(40)]
    with open(f"{work}/{name}", "w") as f:
        f.write("\n".join(" ".join(r.choice(words) for _ in range(8)) for _ in range(count)) + "\n")
PY
"$KH/bin/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic streams-plaintext-input --partitions 1 >/dev/null
"$KH/bin/kafka-topics.sh" --bootstrap-server "$BOOT" --create --topic streams-wordcount-output --partitions 1 >/dev/null
"$KH/bin/kafka-console-producer.sh" --bootstrap-server "$BOOT" --topic streams-plaintext-input < "$WORK/lines1.txt"

run_streams() {  # $1: seconds
  timeout "$1" "$KH/bin/kafka-run-class.sh" org.apache.kafka.streams.examples.wordcount.WordCountDemo \
    "$WORK/streams.properties" >> "$WORK/streams.log" 2>&1 || true
}
run_streams 50
grep -q "changelog 0" "$WORK/data/cleaner-offset-checkpoint" || { echo "changelog never cleaned"; exit 1; }
rm -rf "$WORK/state"
run_streams 45 &
STREAMS=$!
sleep 15
"$KH/bin/kafka-console-producer.sh" --bootstrap-server "$BOOT" --topic streams-plaintext-input < "$WORK/lines2.txt"
wait "$STREAMS"
timeout 30 "$KH/bin/kafka-console-consumer.sh" --bootstrap-server "$BOOT" --topic streams-wordcount-output \
  --from-beginning --property print.key=true --timeout-ms 8000 \
  --value-deserializer org.apache.kafka.common.serialization.LongDeserializer > "$WORK/out.txt" 2>/dev/null || true
python3 - "$WORK" <<'PY'
import sys
from collections import Counter
work = sys.argv[1]
expected = Counter(w for f in ("lines1.txt", "lines2.txt") for l in open(f"{work}/{f}") for w in l.split())
last = {}
for line in open(f"{work}/out.txt"):
    key, value = line.rstrip("\n").split("\t")
    last[key] = int(value)
if last != dict(expected):
    sys.exit(f"streams: counts differ: {sorted(set(last.items()) ^ set(expected.items()))[:6]}")
print(f"streams: {len(last)} words, {sum(last.values())} counted, equal to Python's, after a restore")
PY

sed -e "s/^bootstrap.servers=.*/bootstrap.servers=$BOOT/" -e 's/^#*plugin.path=.*//' \
  "$KH/config/connect-distributed.properties" > "$WORK/connect.properties"
printf 'plugin.path=%s\nlisteners=HTTP://127.0.0.1:28383\n' "$KH/libs/connect-file-4.0.0.jar" >> "$WORK/connect.properties"
"$KH/bin/connect-distributed.sh" "$WORK/connect.properties" > "$WORK/connect.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 60); do curl -sf 127.0.0.1:28383/ >/dev/null && break; sleep 1; done
seq 1 500 | sed 's/^/line-/' > "$WORK/in.txt"
curl -sf -X POST -H 'Content-Type: application/json' 127.0.0.1:28383/connectors -d \
  "{\"name\":\"src\",\"config\":{\"connector.class\":\"FileStreamSource\",\"file\":\"$WORK/in.txt\",\"topic\":\"connect-test\"}}" >/dev/null
curl -sf -X POST -H 'Content-Type: application/json' 127.0.0.1:28383/connectors -d \
  "{\"name\":\"sink\",\"config\":{\"connector.class\":\"FileStreamSink\",\"file\":\"$WORK/out-connect.txt\",\"topics\":\"connect-test\"}}" >/dev/null
for _ in $(seq 60); do [ -f "$WORK/out-connect.txt" ] && [ "$(wc -l < "$WORK/out-connect.txt")" -ge 500 ] && break; sleep 1; done
cmp "$WORK/in.txt" "$WORK/out-connect.txt" && echo "connect: 500 lines moved through kafkette, identical"
