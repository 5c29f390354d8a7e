"""KIP-48's delegation tokens: CreateDelegationToken (38), RenewDelegationToken (39),
ExpireDelegationToken (40) and DescribeDelegationToken (41), as Kafka 4.3 defines them.

A client authenticated by other means asks for a token (an id and an HMAC) that others
then use with SASL/SCRAM; its owner or a listed renewer can renew it, and it can be
expired early. Version 0 of all four was removed in Kafka 4.0 (KIP-896), so they start at
1, which is the same message as 0; version 2 made each flexible; version 3 of Create and
Describe adds an owner principal to the request (creating a token for someone else) and
the requester's principal to the answers. Blocks are separated by a blank line.
"""

DEFINITIONS = """\
CreateDelegationTokenRequest request api=38 valid=1-3 flexible=2+
OwnerPrincipalType string 3+ null=3+
OwnerPrincipalName string 3+ null=3+
Renewers []CreatableRenewers 0+
  PrincipalType string 0+
  PrincipalName string 0+
MaxLifetimeMs int64 0+

CreateDelegationTokenResponse response api=38 valid=1-3 flexible=2+
ErrorCode int16 0+
PrincipalType string 0+
PrincipalName string 0+
TokenRequesterPrincipalType string 3+
TokenRequesterPrincipalName string 3+
IssueTimestampMs int64 0+
ExpiryTimestampMs int64 0+
MaxTimestampMs int64 0+
TokenId string 0+
Hmac bytes 0+
ThrottleTimeMs int32 0+

RenewDelegationTokenRequest request api=39 valid=1-2 flexible=2+
Hmac bytes 0+
RenewPeriodMs int64 0+

RenewDelegationTokenResponse response api=39 valid=1-2 flexible=2+
ErrorCode int16 0+
ExpiryTimestampMs int64 0+
ThrottleTimeMs int32 0+

ExpireDelegationTokenRequest request api=40 valid=1-2 flexible=2+
Hmac bytes 0+
ExpiryTimePeriodMs int64 0+

ExpireDelegationTokenResponse response api=40 valid=1-2 flexible=2+
ErrorCode int16 0+
ExpiryTimestampMs int64 0+
ThrottleTimeMs int32 0+

DescribeDelegationTokenRequest request api=41 valid=1-3 flexible=2+
Owners []DescribeDelegationTokenOwner 0+ null=0+
  PrincipalType string 0+
  PrincipalName string 0+

DescribeDelegationTokenResponse response api=41 valid=1-3 flexible=2+
ErrorCode int16 0+
Tokens []DescribedDelegationToken 0+
  PrincipalType string 0+
  PrincipalName string 0+
  TokenRequesterPrincipalType string 3+
  TokenRequesterPrincipalName string 3+
  IssueTimestamp int64 0+
  ExpiryTimestamp int64 0+
  MaxTimestamp int64 0+
  TokenId string 0+
  Hmac bytes 0+
  Renewers []DescribedDelegationTokenRenewer 0+
    PrincipalType string 0+
    PrincipalName string 0+
ThrottleTimeMs int32 0+
"""
