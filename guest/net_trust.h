// Installing the host's CA certificate in the guest for net.trust: the certificate alone (the
// host keeps the key) at <dir>/lockroom-ca.pem, and a bundle <dir>/lockroom-bundle.pem holding the
// system's bundle (if the image has one) followed by the CA, which is what SSL_CERT_FILE and
// friends name. Both are written to a temporary file and renamed into place.
#pragma once

#include <string>
#include <variant>

#include "guest/errors.h"
#include "protocol/channel/messages.h"

namespace lockroom::agent {

std::variant<protocol::channel::NetTrustResult, RpcError> install_ca(const std::string& dir, const std::string& pem);

}  // namespace lockroom::agent
