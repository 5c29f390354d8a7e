"""KIP-932's share groups ("queues for Kafka"), as Kafka 4.3 defines them.

Consumers in a share group read the same partitions together: the share-partition leader
hands out records under a time-limited acquisition lock, one delivery at a time, and the
consumer acknowledges each batch (accept, release, reject) instead of committing an offset.
Twelve APIs carry this:

* ShareGroupHeartbeat (76) and ShareGroupDescribe (77): membership and assignment, run by
  the group coordinator much like KIP-848's consumer group protocol;
* ShareFetch (78) and ShareAcknowledge (79): the data path, on a share session that is
  opened with epoch 0, advanced by one per request and closed with -1;
* InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState (85),
  DeleteShareGroupState (86) and ReadShareGroupStateSummary (87): what share-partition
  leaders send to the share coordinator to keep each share-partition's delivery state
  (start offset, state epoch, batches of delivery state and count) durable;
* DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and DeleteShareGroupOffsets
  (92): the admin client's view of a share group's start offsets.

Versions. Kafka 4.0 shipped 76-79 as version 0, an early-access preview that 4.1 removed:
version 1 is the first stable one and 4.3 accepts nothing below it. Fields that existed
only in version 0 stay in the definitions at ``0``, so they are never on the wire (as in
Kafka's own definitions); ShareFetch v1 dropped the per-partition ``PartitionMaxBytes``
and added ``MaxRecords``, ``BatchSize`` and, in the answer, ``AcquisitionLockTimeoutMs``.
ShareFetch v2 adds ``ShareAcquireMode`` (0 batch-optimized, 1 record-limit; KIP-1206) and
``IsRenewAck`` (KIP-1222: acknowledge type 4, renew, extends a lock without delivering
again); ShareAcknowledge v2 adds the same ``IsRenewAck`` and returns
``AcquisitionLockTimeoutMs``. KIP-1226 (v1 of 85, 87 and 90) adds the count of records
whose delivery is complete to the persisted state and its summary, and ``Lag`` to
DescribeShareGroupOffsets. Every version of all twelve is flexible. ShareFetch's
``Records`` may be null only in the removed version 0. Blocks are separated by a blank line.
"""

DEFINITIONS = """\
ShareGroupHeartbeatRequest request api=76 valid=1 flexible=0+
GroupId string 0+
MemberId string 0+
MemberEpoch int32 0+
RackId string 0+ null=0+ default=null
SubscribedTopicNames []string 0+ null=0+ default=null

ShareGroupHeartbeatResponse response api=76 valid=1 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
MemberId string 0+ null=0+ default=null
MemberEpoch int32 0+
HeartbeatIntervalMs int32 0+
Assignment Assignment 0+ null=0+ default=null
  TopicPartitions []TopicPartitions 0+
struct TopicPartitions
TopicId uuid 0+
Partitions []int32 0+

ShareGroupDescribeRequest request api=77 valid=1 flexible=0+
GroupIds []string 0+
IncludeAuthorizedOperations bool 0+

ShareGroupDescribeResponse response api=77 valid=1 flexible=0+
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
    RackId string 0+ null=0+ default=null
    MemberEpoch int32 0+
    ClientId string 0+
    ClientHost string 0+
    SubscribedTopicNames []string 0+
    Assignment Assignment 0+
  AuthorizedOperations int32 0+ default=-2147483648
struct TopicPartitions
TopicId uuid 0+
TopicName string 0+
Partitions []int32 0+
struct Assignment
TopicPartitions []TopicPartitions 0+

ShareFetchRequest request api=78 valid=1-2 flexible=0+
GroupId string 0+ null=0+ default=null
MemberId string 0+ null=0+
ShareSessionEpoch int32 0+
MaxWaitMs int32 0+
MinBytes int32 0+
MaxBytes int32 0+ default=0x7fffffff
MaxRecords int32 1+
BatchSize int32 1+
ShareAcquireMode int8 2+ default=0
IsRenewAck bool 2+ default=false
Topics []FetchTopic 0+
  TopicId uuid 0+
  Partitions []FetchPartition 0+
    PartitionIndex int32 0+
    PartitionMaxBytes int32 0
    AcknowledgementBatches []AcknowledgementBatch 0+
      FirstOffset int64 0+
      LastOffset int64 0+
      AcknowledgeTypes []int8 0+
ForgottenTopicsData []ForgottenTopic 0+
  TopicId uuid 0+
  Partitions []int32 0+

ShareFetchResponse response api=78 valid=1-2 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
AcquisitionLockTimeoutMs int32 1+
Responses []ShareFetchableTopicResponse 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    PartitionIndex int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null
    AcknowledgeErrorCode int16 0+
    AcknowledgeErrorMessage string 0+ null=0+ default=null
    CurrentLeader LeaderIdAndEpoch 0+
      LeaderId int32 0+
      LeaderEpoch int32 0+
    Records records 0+ null=0
    AcquiredRecords []AcquiredRecords 0+
      FirstOffset int64 0+
      LastOffset int64 0+
      DeliveryCount int16 0+
NodeEndpoints []NodeEndpoint 0+
  NodeId int32 0+
  Host string 0+
  Port int32 0+
  Rack string 0+ null=0+ default=null

ShareAcknowledgeRequest request api=79 valid=1-2 flexible=0+
GroupId string 0+ null=0+ default=null
MemberId string 0+ null=0+
ShareSessionEpoch int32 0+
IsRenewAck bool 2+ default=false
Topics []AcknowledgeTopic 0+
  TopicId uuid 0+
  Partitions []AcknowledgePartition 0+
    PartitionIndex int32 0+
    AcknowledgementBatches []AcknowledgementBatch 0+
      FirstOffset int64 0+
      LastOffset int64 0+
      AcknowledgeTypes []int8 0+

ShareAcknowledgeResponse response api=79 valid=1-2 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
AcquisitionLockTimeoutMs int32 2+
Responses []ShareAcknowledgeTopicResponse 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    PartitionIndex int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null
    CurrentLeader LeaderIdAndEpoch 0+
      LeaderId int32 0+
      LeaderEpoch int32 0+
NodeEndpoints []NodeEndpoint 0+
  NodeId int32 0+
  Host string 0+
  Port int32 0+
  Rack string 0+ null=0+ default=null

InitializeShareGroupStateRequest request api=83 valid=0 flexible=0+
GroupId string 0+
Topics []InitializeStateData 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    Partition int32 0+
    StateEpoch int32 0+
    StartOffset int64 0+

InitializeShareGroupStateResponse response api=83 valid=0 flexible=0+
Results []InitializeStateResult 0+
  TopicId uuid 0+
  Partitions []PartitionResult 0+
    Partition int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null

ReadShareGroupStateRequest request api=84 valid=0 flexible=0+
GroupId string 0+
Topics []ReadStateData 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    Partition int32 0+
    LeaderEpoch int32 0+

ReadShareGroupStateResponse response api=84 valid=0 flexible=0+
Results []ReadStateResult 0+
  TopicId uuid 0+
  Partitions []PartitionResult 0+
    Partition int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null
    StateEpoch int32 0+
    StartOffset int64 0+
    StateBatches []StateBatch 0+
      FirstOffset int64 0+
      LastOffset int64 0+
      DeliveryState int8 0+
      DeliveryCount int16 0+

WriteShareGroupStateRequest request api=85 valid=0-1 flexible=0+
GroupId string 0+
Topics []WriteStateData 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    Partition int32 0+
    StateEpoch int32 0+
    LeaderEpoch int32 0+
    StartOffset int64 0+
    DeliveryCompleteCount int32 1+ default=-1
    StateBatches []StateBatch 0+
      FirstOffset int64 0+
      LastOffset int64 0+
      DeliveryState int8 0+
      DeliveryCount int16 0+

WriteShareGroupStateResponse response api=85 valid=0-1 flexible=0+
Results []WriteStateResult 0+
  TopicId uuid 0+
  Partitions []PartitionResult 0+
    Partition int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null

DeleteShareGroupStateRequest request api=86 valid=0 flexible=0+
GroupId string 0+
Topics []DeleteStateData 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    Partition int32 0+

DeleteShareGroupStateResponse response api=86 valid=0 flexible=0+
Results []DeleteStateResult 0+
  TopicId uuid 0+
  Partitions []PartitionResult 0+
    Partition int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null

ReadShareGroupStateSummaryRequest request api=87 valid=0-1 flexible=0+
GroupId string 0+
Topics []ReadStateSummaryData 0+
  TopicId uuid 0+
  Partitions []PartitionData 0+
    Partition int32 0+
    LeaderEpoch int32 0+

ReadShareGroupStateSummaryResponse response api=87 valid=0-1 flexible=0+
Results []ReadStateSummaryResult 0+
  TopicId uuid 0+
  Partitions []PartitionResult 0+
    Partition int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null
    StateEpoch int32 0+
    LeaderEpoch int32 0+
    StartOffset int64 0+
    DeliveryCompleteCount int32 1+ default=-1

DescribeShareGroupOffsetsRequest request api=90 valid=0-1 flexible=0+
Groups []DescribeShareGroupOffsetsRequestGroup 0+
  GroupId string 0+
  Topics []DescribeShareGroupOffsetsRequestTopic 0+ null=0+
    TopicName string 0+
    Partitions []int32 0+

DescribeShareGroupOffsetsResponse response api=90 valid=0-1 flexible=0+
ThrottleTimeMs int32 0+
Groups []DescribeShareGroupOffsetsResponseGroup 0+
  GroupId string 0+
  Topics []DescribeShareGroupOffsetsResponseTopic 0+
    TopicName string 0+
    TopicId uuid 0+
    Partitions []DescribeShareGroupOffsetsResponsePartition 0+
      PartitionIndex int32 0+
      StartOffset int64 0+
      LeaderEpoch int32 0+
      Lag int64 1+ default=-1
      ErrorCode int16 0+
      ErrorMessage string 0+ null=0+ default=null
  ErrorCode int16 0+
  ErrorMessage string 0+ null=0+ default=null

AlterShareGroupOffsetsRequest request api=91 valid=0 flexible=0+
GroupId string 0+
Topics []AlterShareGroupOffsetsRequestTopic 0+
  TopicName string 0+
  Partitions []AlterShareGroupOffsetsRequestPartition 0+
    PartitionIndex int32 0+
    StartOffset int64 0+

AlterShareGroupOffsetsResponse response api=91 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
Responses []AlterShareGroupOffsetsResponseTopic 0+
  TopicName string 0+
  TopicId uuid 0+
  Partitions []AlterShareGroupOffsetsResponsePartition 0+
    PartitionIndex int32 0+
    ErrorCode int16 0+
    ErrorMessage string 0+ null=0+ default=null

DeleteShareGroupOffsetsRequest request api=92 valid=0 flexible=0+
GroupId string 0+
Topics []DeleteShareGroupOffsetsRequestTopic 0+
  TopicName string 0+

DeleteShareGroupOffsetsResponse response api=92 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+ default=null
Responses []DeleteShareGroupOffsetsResponseTopic 0+
  TopicName string 0+
  TopicId uuid 0+
  ErrorCode int16 0+
  ErrorMessage string 0+ null=0+ default=null
"""
