"""KIP-714's client telemetry APIs: GetTelemetrySubscriptions (71) and PushTelemetry (72),
version 0, as Kafka 4.0 serves them.

A client asks for its subscription (the metrics a broker wants, how often, how big, which
compressions) and then pushes them; ``Metrics`` is the compressed OpenTelemetry payload.
A zero ``ClientInstanceId`` asks the broker to assign one. Blocks are separated by a blank line.
"""

DEFINITIONS = """\
GetTelemetrySubscriptionsRequest request api=71 valid=0 flexible=0+
ClientInstanceId uuid 0+

GetTelemetrySubscriptionsResponse response api=71 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ClientInstanceId uuid 0+
SubscriptionId int32 0+
AcceptedCompressionTypes []int8 0+
PushIntervalMs int32 0+
TelemetryMaxBytes int32 0+
DeltaTemporality bool 0+
RequestedMetrics []string 0+

PushTelemetryRequest request api=72 valid=0 flexible=0+
ClientInstanceId uuid 0+
SubscriptionId int32 0+
Terminating bool 0+
CompressionType int8 0+
Metrics bytes 0+

PushTelemetryResponse response api=72 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
"""
