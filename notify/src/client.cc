#include "hvd/notify/client.h"

#include "hvd/common/env.h"
#include "hvd/common/http_client.h"

namespace hvd::notify {

using common::Status;

namespace {

Status Post(const std::string& address, const std::string& secret,
            const char* path, const std::string& body,
            std::chrono::milliseconds timeout, int max_attempts = 2) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("notification address '" + address +
                                   "' is not <host>:<port>");
  }
  common::HttpClientOptions options;
  options.host = address.substr(0, colon);
  auto port = common::ParseInt(address.substr(colon + 1), "notification port",
                               1, 65535);
  if (!port.ok()) return port.status();
  options.port = static_cast<int>(*port);
  options.secret = secret;
  options.connect_timeout = timeout;
  options.read_timeout = timeout;
  options.max_attempts = max_attempts;
  common::HttpClient client(options);
  auto response = client.Send("POST", path, body, std::chrono::milliseconds(0));
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    common::Code code = response->status == 401 ? common::Code::kUnauthenticated
                        : response->status == 400
                            ? common::Code::kInvalidArgument
                            : common::Code::kInternal;
    return Status(code, "POST " + client.Url(path) + ": " +
                            common::HttpStatusText(response->status) + ": " +
                            response->body);
  }
  return Status::Ok();
}

}  // namespace

Status Ping(const std::string& address, const std::string& secret,
            std::chrono::milliseconds timeout) {
  // One attempt: the driver's liveness policy repeats probes itself.
  return Post(address, secret, kPingPath, "", timeout, 1);
}

Status SendHostsUpdated(const std::string& address, const std::string& secret,
                        const HostsUpdated& message,
                        std::chrono::milliseconds timeout) {
  return Post(address, secret, kHostsUpdatedPath, Encode(message), timeout);
}

Status SendAbort(const std::string& address, const std::string& secret,
                 const Abort& message, std::chrono::milliseconds timeout) {
  return Post(address, secret, kAbortPath, Encode(message), timeout);
}

}  // namespace hvd::notify
