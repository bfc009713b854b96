// Agent error construction; see errors.h.
#include "guest/errors.h"

#include <cerrno>
#include <cstring>

#include "protocol/channel/messages.h"

namespace lockroom::agent {

namespace agent_error = protocol::channel::agent_error;

RpcError make_rpc_error(int code, std::string message, json data) { return RpcError{code, std::move(message), std::move(data)}; }

RpcError errno_error(int err, const std::string& what) {
  int code = agent_error::kIoError;
  switch (err) {
    case ENOENT:
    case ESRCH: code = agent_error::kNotFound; break;
    case EACCES:
    case EPERM:
    case EROFS: code = agent_error::kPermissionDenied; break;
    case EISDIR:
    case ENOTDIR: code = agent_error::kWrongType; break;
    case EFBIG: code = agent_error::kTooLarge; break;
    case EAGAIN:
    case EMFILE:
    case ENFILE: code = agent_error::kLimitReached; break;
    default: break;
  }
  const char* name = strerrorname_np(err);
  return make_rpc_error(code, what + ": " + std::strerror(err), json{{"errno", name ? name : std::to_string(err)}});
}

RpcError invalid_params(const Error& error) {
  return make_rpc_error(protocol::rpc_error::kInvalidParams, "invalid params: " + error.message);
}

}  // namespace lockroom::agent
