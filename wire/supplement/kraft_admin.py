"""The KRaft administration APIs an admin client may send to any broker, which forwards
them to the controller quorum: UnregisterBroker (64, KIP-631) and AddRaftVoter (80) and
RemoveRaftVoter (81), KIP-853's dynamic quorum membership, as Kafka 4.3 defines them.

AddRaftVoter names the new voter by id and directory id and lists its controller
listeners; its version 1 adds ``AckWhenCommitted`` (default true: answer once the new
voter set is committed; false: once the leader has written it locally). Blocks are
separated by a blank line.
"""

DEFINITIONS = """\
UnregisterBrokerRequest request api=64 valid=0 flexible=0+
BrokerId int32 0+

UnregisterBrokerResponse response api=64 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+

AddRaftVoterRequest request api=80 valid=0-1 flexible=0+
ClusterId string 0+ null=0+
TimeoutMs int32 0+
VoterId int32 0+
VoterDirectoryId uuid 0+
Listeners []Listener 0+
  Name string 0+
  Host string 0+
  Port uint16 0+
AckWhenCommitted bool 1+ default=true

AddRaftVoterResponse response api=80 valid=0-1 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+

RemoveRaftVoterRequest request api=81 valid=0 flexible=0+
ClusterId string 0+ null=0+
VoterId int32 0+
VoterDirectoryId uuid 0+

RemoveRaftVoterResponse response api=81 valid=0 flexible=0+
ThrottleTimeMs int32 0+
ErrorCode int16 0+
ErrorMessage string 0+ null=0+
"""
