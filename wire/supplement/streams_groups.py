"""KIP-1071's streams rebalance protocol: StreamsGroupHeartbeat (88) and
StreamsGroupDescribe (89), version 0, as Kafka 4.3 defines them.

A Kafka Streams application joins a streams group by heartbeating its topology (its
subtopologies: source, changelog and repartition topics, and which of them must be
co-partitioned) to the group coordinator, which assigns tasks (active, standby and warm-up,
each a subtopology and its partitions) instead of partitions. Members report their tasks'
changelog offsets (which tell when a warm-up task has caught up) and may ask the whole
application to shut down; the coordinator answers with ``Status`` codes about the group,
and with each endpoint's partitions for interactive queries. Describe returns the topology
and every member's current and target assignment. Blocks are separated by a blank line.
"""

DEFINITIONS = """\
StreamsGroupHeartbeatRequest request api=88 valid=0 flexible=0+
GroupId string 0+
MemberId string 0+
MemberEpoch int32 0+
EndpointInformationEpoch int32 0+
InstanceId string 0+ null=0+ default=null
RackId string 0+ null=0+ default=null
RebalanceTimeoutMs int32 0+ default=-1
Topology Topology 0+ null=0+ default=null
  Epoch int32 0+
  Subtopologies []Subtopology 0+
    SubtopologyId string 0+
    SourceTopics []string 0+
    SourceTopicRegex []string 0+
    StateChangelogTopics []TopicInfo 0+
    RepartitionSinkTopics []string 0+
    RepartitionSourceTopics []TopicInfo 0+
    CopartitionGroups []CopartitionGroup 0+
      SourceTopics []int16 0+
      SourceTopicRegex []int16 0+
      RepartitionSourceTopics []int16 0+
ActiveTasks []TaskIds 0+ null=0+ default=null
StandbyTasks []TaskIds 0+ null=0+ default=null
WarmupTasks []TaskIds 0+ null=0+ default=null
ProcessId string 0+ null=0+ default=null
UserEndpoint Endpoint 0+ null=0+ default=null
ClientTags []KeyValue 0+ null=0+ default=null
TaskOffsets []TaskOffset 0+ null=0+ default=null
TaskEndOffsets []TaskOffset 0+ null=0+ default=null
ShutdownApplication bool 0+ default=false
struct KeyValue
Key string 0+
Value string 0+
struct TopicInfo
Name string 0+
Partitions int32 0+
ReplicationFactor int16 0+
TopicConfigs []KeyValue 0+
struct Endpoint
Host string 0+
Port uint16 0+
struct TaskOffset
SubtopologyId string 0+
Partition int32 0+
Offset int64 0+
struct TaskIds
SubtopologyId string 0+
Partitions []int32 0+

StreamsGroupHeartbeatResponse response api=88 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
MemberId string 0+
MemberEpoch int32 0+
HeartbeatIntervalMs int32 0+
AcceptableRecoveryLag int32 0+
TaskOffsetIntervalMs int32 0+
Status []Status 0+ null=0+
ActiveTasks []TaskIds 0+ null=0+ default=null
StandbyTasks []TaskIds 0+ null=0+ default=null
WarmupTasks []TaskIds 0+ null=0+ default=null
EndpointInformationEpoch int32 0+
PartitionsByUserEndpoint []EndpointToPartitions 0+ null=0+ default=null
  UserEndpoint Endpoint 0+
  ActivePartitions []TopicPartition 0+
  StandbyPartitions []TopicPartition 0+
struct Status
StatusCode int8 0+
StatusDetail string 0+
struct TopicPartition
Topic string 0+
Partitions []int32 0+
struct TaskIds
SubtopologyId string 0+
Partitions []int32 0+
struct Endpoint
Host string 0+
Port uint16 0+

StreamsGroupDescribeRequest request api=89 valid=0 flexible=0+
GroupIds []string 0+
IncludeAuthorizedOperations bool 0+

StreamsGroupDescribeResponse response api=89 valid=0 flexible=0+
ThrottleTimeMs int32 0+
Groups []DescribedGroup 0+
  ErrorCode int16 0+
  ErrorMessage string 0+ null=0+ default=null
  GroupId string 0+
  GroupState string 0+
  GroupEpoch int32 0+
  AssignmentEpoch int32 0+
  Topology Topology 0+ null=0+ default=null
    Epoch int32 0+
    Subtopologies []Subtopology 0+ null=0+ default=null
      SubtopologyId string 0+
      SourceTopics []string 0+
      RepartitionSinkTopics []string 0+
      StateChangelogTopics []TopicInfo 0+
      RepartitionSourceTopics []TopicInfo 0+
  Members []Member 0+
    MemberId string 0+
    MemberEpoch int32 0+
    InstanceId string 0+ null=0+ default=null
    RackId string 0+ null=0+ default=null
    ClientId string 0+
    ClientHost string 0+
    TopologyEpoch int32 0+
    ProcessId string 0+
    UserEndpoint Endpoint 0+ null=0+ default=null
    ClientTags []KeyValue 0+
    TaskOffsets []TaskOffset 0+
    TaskEndOffsets []TaskOffset 0+
    Assignment Assignment 0+
    TargetAssignment Assignment 0+
    IsClassic bool 0+
  AuthorizedOperations int32 0+ default=-2147483648
struct Endpoint
Host string 0+
Port uint16 0+
struct TaskOffset
SubtopologyId string 0+
Partition int32 0+
Offset int64 0+
struct Assignment
ActiveTasks []TaskIds 0+
StandbyTasks []TaskIds 0+
WarmupTasks []TaskIds 0+
struct TaskIds
SubtopologyId string 0+
Partitions []int32 0+
struct KeyValue
Key string 0+
Value string 0+
struct TopicInfo
Name string 0+
Partitions int32 0+
ReplicationFactor int16 0+
TopicConfigs []KeyValue 0+
"""
