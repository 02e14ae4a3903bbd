// The bodies of etcd's JSON gateway (its v3 API with protobuf's JSON
// mapping: keys and values in base64, 64-bit numbers as strings), made and
// read without any I/O, for EtcdClient.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hvd/common/status.h"
#include "hvd/rendezvous/etcd_client.h"

namespace hvd::rendezvous::etcd_json {

// The end of the key range holding every key that starts with `prefix`
// (etcd's rule: the prefix with its last byte below 0xff increased);
// "\0" (every key) for an empty prefix or one of 0xff bytes only.
std::string PrefixEnd(std::string_view prefix);

std::string PutBody(const std::string& key, const std::string& value,
                    int64_t lease);
std::string RangeBody(const std::string& key, bool prefix);
std::string DeleteBody(const std::string& key, bool prefix);
std::string TxnBody(const std::vector<EtcdCompare>& compare,
                    const std::vector<EtcdOp>& success,
                    const std::vector<EtcdOp>& failure);
std::string LeaseGrantBody(int64_t ttl);
std::string LeaseIdBody(int64_t lease);
std::string AuthBody(const std::string& user, const std::string& password);
// A watch of `key` (every key with it as prefix) from `start_revision` on.
std::string WatchBody(const std::string& key, bool prefix,
                      int64_t start_revision);

// An error the gateway answered with: gRPC's code and etcd's message.
struct GatewayError {
  int code = 0;
  std::string message;
};
// The error in `body`, if it is one.
std::optional<GatewayError> ErrorOf(std::string_view body);
// The status for an error, naming etcd's message: kTransport for
// Unavailable (another member may serve), kUnauthenticated for a bad or
// missing token, user or password and for a denied permission,
// kInvalidArgument, kNotFound, kTimeout, else kInternal.
common::Status StatusOf(const GatewayError& error);
// gRPC's Unavailable: this member cannot serve now; another may.
bool TryAnotherMember(const GatewayError& error);

common::Result<int64_t> RevisionOf(std::string_view put_or_txn_body);
common::Result<std::vector<EtcdKeyValue>> KeyValuesOf(
    std::string_view range_body);
common::Result<int64_t> DeletedOf(std::string_view delete_body);
common::Result<EtcdTxnResult> TxnResultOf(std::string_view txn_body);
common::Result<int64_t> LeaseIdOf(std::string_view grant_body);
// The TTL left after a keep-alive; kNotFound when the lease has expired.
common::Result<int64_t> KeepAliveTtlOf(std::string_view keepalive_body);
common::Result<std::string> TokenOf(std::string_view authenticate_body);

// One message of a watch's stream (the gateway writes one JSON object per
// line): the keys put, in order (deletes are left out); whether etcd
// ended the watch, and why (a start revision compacted away:
// `compact_revision`). An error object is its status.
struct WatchMessage {
  std::vector<EtcdKeyValue> puts;
  bool canceled = false;
  std::string cancel_reason;
  int64_t compact_revision = 0;
};
common::Result<WatchMessage> WatchMessageOf(std::string_view line);

}  // namespace hvd::rendezvous::etcd_json
