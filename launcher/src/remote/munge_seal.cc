#include "remote/munge_seal.h"

#include <munge.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <type_traits>

namespace hvd::launcher {

using common::Result;
using common::Status;

namespace {

using Context = std::unique_ptr<std::remove_pointer_t<munge_ctx_t>,
                                decltype(&munge_ctx_destroy)>;

// A context for `socket`, or the Status of why there is none.
Result<Context> MakeContext(const std::string& socket) {
  Context ctx(munge_ctx_create(), &munge_ctx_destroy);
  if (!ctx) return Status::Internal("MUNGE: cannot create a context");
  if (!socket.empty() && munge_ctx_set(ctx.get(), MUNGE_OPT_SOCKET,
                                       socket.c_str()) != EMUNGE_SUCCESS) {
    return Status::Internal("MUNGE: cannot use the socket " + socket);
  }
  return ctx;
}

// What munged said, with the context's detail when it has one.
std::string Detail(munge_ctx_t ctx, munge_err_t err) {
  const char* detail = ctx != nullptr ? munge_ctx_strerror(ctx) : nullptr;
  return detail != nullptr ? detail : munge_strerror(err);
}

}  // namespace

std::string MungeSocketName(const std::string& socket) {
  return socket.empty() ? std::string("libmunge's default socket")
                        : "the socket " + socket;
}

Result<std::string> MungeSeal(std::string_view payload,
                              const std::string& socket) {
  auto ctx = MakeContext(socket);
  if (!ctx.ok()) return ctx.status();
  // Only this user's processes can decode it: a guard of the job (same
  // uid) can; another user's process that reads it off the wire cannot.
  const uid_t uid = getuid();
  munge_err_t set = munge_ctx_set(ctx->get(), MUNGE_OPT_UID_RESTRICTION, uid);
  if (set == EMUNGE_SUCCESS) {
    set = munge_ctx_set(ctx->get(), MUNGE_OPT_CIPHER_TYPE, MUNGE_CIPHER_AES128);
  }
  if (set != EMUNGE_SUCCESS) {
    return Status::Internal(
        "MUNGE: cannot restrict the launch message to this user or encrypt "
        "it: " +
        Detail(ctx->get(), set));
  }
  char* credential = nullptr;
  const munge_err_t err = munge_encode(&credential, ctx->get(), payload.data(),
                                       static_cast<int>(payload.size()));
  std::unique_ptr<char, decltype(&std::free)> owned(credential, &std::free);
  if (err != EMUNGE_SUCCESS || credential == nullptr) {
    std::string what = "cannot seal the launch message with MUNGE through " +
                       MungeSocketName(socket) + ": " + Detail(ctx->get(), err);
    if (err == EMUNGE_SOCKET) {
      what +=
          " (is munged running on this node? Slurm's AuthInfo=socket=... "
          "names the socket hvdrun uses; hvdrun never sends a Slurm step's "
          "launch message in clear)";
    } else if (err == EMUNGE_BAD_LENGTH) {
      what +=
          " (the worker's environment and command are larger than munged "
          "accepts: forward fewer or smaller variables)";
    }
    return err == EMUNGE_BAD_LENGTH ? Status::ResourceExhausted(what)
                                    : Status::Transport(what);
  }
  return std::string(credential);
}

Result<std::string> MungeUnseal(const std::string& credential,
                                const std::string& socket) {
  auto ctx = MakeContext(socket);
  if (!ctx.ok()) return ctx.status();
  void* payload = nullptr;
  int size = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  const munge_err_t err =
      munge_decode(credential.c_str(), ctx->get(), &payload, &size, &uid, &gid);
  // munged hands the payload back for some refusals too: never used then.
  std::unique_ptr<void, decltype(&std::free)> owned(payload, &std::free);
  const std::string refused =
      "the launch message's MUNGE credential was "
      "refused by munged (" +
      MungeSocketName(socket) + "): " + Detail(ctx->get(), err);
  switch (err) {
    case EMUNGE_SUCCESS:
      break;
    case EMUNGE_CRED_REPLAYED:
      return Status::PermissionDenied(
          refused +
          ": it was decoded once already. Each launch message starts one "
          "worker; a second use means someone replayed a captured step's "
          "input. Start the job again; if it recurs, tell the cluster's "
          "administrators");
    case EMUNGE_CRED_EXPIRED:
    case EMUNGE_CRED_REWOUND:
      return Status::PermissionDenied(
          refused +
          ": it is outside its time to live. Are the clocks of this node "
          "and hvdrun's node apart (check NTP)? Or did the step start too "
          "late?");
    case EMUNGE_SOCKET:
      return Status::Transport(
          refused +
          ": is munged running on this node, at the socket Slurm's "
          "AuthInfo names?");
    case EMUNGE_CRED_INVALID:
    case EMUNGE_BAD_CRED:
    case EMUNGE_CRED_UNAUTHORIZED:
      return Status::PermissionDenied(
          refused +
          ": it was not made for this user by a munged with this "
          "cluster's key (do all nodes share munged's key?)");
    default:
      return Status::PermissionDenied(refused);
  }
  if (uid != getuid()) {
    return Status::PermissionDenied(
        "the launch message was sealed by uid " + std::to_string(uid) +
        ", not by this step's user (uid " + std::to_string(getuid()) +
        "): refused, another user may be injecting into the step's input");
  }
  int cipher = MUNGE_CIPHER_NONE;
  if (munge_ctx_get(ctx->get(), MUNGE_OPT_CIPHER_TYPE, &cipher) !=
          EMUNGE_SUCCESS ||
      cipher == MUNGE_CIPHER_NONE) {
    return Status::PermissionDenied(
        "the launch message's MUNGE credential is not encrypted: refused "
        "(hvdrun asks for AES; is this hvdrun's message?)");
  }
  if (size < 0) return Status::Internal("MUNGE: a negative payload size");
  if (payload == nullptr || size == 0) return std::string();
  return std::string(static_cast<const char*>(payload),
                     static_cast<size_t>(size));
}

}  // namespace hvd::launcher
