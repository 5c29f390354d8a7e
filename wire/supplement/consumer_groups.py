"""KIP-848's consumer group protocol: ConsumerGroupHeartbeat (68) and
ConsumerGroupDescribe (69), versions 0-1, as Kafka 4.0 serves them.

v1 of the heartbeat adds ``SubscribedTopicRegex`` (KIP-848's server-side regex) and makes
the member id the client's own (KIP-1082); v1 of describe adds ``MemberType``
(KIP-1099: -1 unknown, 0 classic, 1 consumer). Blocks are separated by a blank line.
"""

DEFINITIONS = """\
ConsumerGroupHeartbeatRequest request api=68 valid=0-1 flexible=0+
GroupId string 0+
MemberId string 0+
MemberEpoch int32 0+
InstanceId string 0+ null=0+ default=null
RackId string 0+ null=0+ default=null
RebalanceTimeoutMs int32 0+ default=-1
SubscribedTopicNames []string 0+ null=0+ default=null
SubscribedTopicRegex string 1+ null=1+ default=null
ServerAssignor string 0+ null=0+ default=null
TopicPartitions []TopicPartitions 0+ null=0+ default=null
  TopicId uuid 0+
  Partitions []int32 0+

ConsumerGroupHeartbeatResponse response api=68 valid=0-1 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
MemberId string 0+ null=0+ default=null
MemberEpoch int32 0+
HeartbeatIntervalMs int32 0+
Assignment Assignment 0+ null=0+ default=null
  TopicPartitions []TopicPartitions 0+
    TopicId uuid 0+
    Partitions []int32 0+

ConsumerGroupDescribeRequest request api=69 valid=0-1 flexible=0+
GroupIds []string 0+
IncludeAuthorizedOperations bool 0+

ConsumerGroupDescribeResponse response api=69 valid=0-1 flexible=0+
ThrottleTimeMs int32 0+
Groups []DescribedGroup 0+
  ErrorCode int16 0+
  ErrorMessage string 0+ null=0+ default=null
  GroupId string 0+
  GroupState string 0+
  GroupEpoch int32 0+
  AssignmentEpoch int32 0+
  AssignorName string 0+
  Members []Member 0+
    MemberId string 0+
    InstanceId string 0+ null=0+ default=null
    RackId string 0+ null=0+ default=null
    MemberEpoch int32 0+
    ClientId string 0+
    ClientHost string 0+
    SubscribedTopicNames []string 0+
    SubscribedTopicRegex string 0+ null=0+ default=null
    Assignment Assignment 0+
    TargetAssignment Assignment 0+
    MemberType int8 1+ default=-1
  AuthorizedOperations int32 0+ default=-2147483648
struct Assignment
TopicPartitions []TopicPartitions 0+
  TopicId uuid 0+
  TopicName string 0+
  Partitions []int32 0+
"""
