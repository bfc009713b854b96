// Checks what a real server sends against protocol/schema/: each notification's params, each
// request's params (a call to the client) and each reply's result against the shapes
// methods.json names for that method. Harnesses that talk to the real server (the integration
// editor) run every message through it, so a field the server adds, renames or drops without
// the schema fails a test. Test-only, header-only; needs LOCKROOM_SCHEMA_DIR.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/json_schema.h"

namespace lockroom::testing {

class WireSchemaCheck {
 public:
  using json = nlohmann::json;

  static const WireSchemaCheck& instance() {
    static const WireSchemaCheck check;
    return check;
  }

  // Problems with one message from the server. `request_method` is the method of the request a
  // reply answers (empty for other messages). Methods the schema does not list (test-only
  // methods) are not checked.
  std::vector<std::string> check(const json& message, const std::string& request_method = "") const {
    std::vector<std::string> problems;
    if (!message.is_object()) return {"a message that is not an object: " + message.dump()};
    if (message.contains("method")) {
      std::string method = message["method"];
      if (!methods_.contains(method)) return problems;
      return schema_.validate(methods_[method]["params"], message.value("params", json()), method + " params");
    }
    if (request_method.empty() || !methods_.contains(request_method)) return problems;
    if (message.contains("result"))
      return schema_.validate(methods_[request_method]["result"], message["result"], request_method + " result");
    if (message.contains("error") && schema_.has_def("ResponseError"))
      return schema_.validate("ResponseError", message["error"], request_method + " error");
    return problems;
  }

 private:
  WireSchemaCheck() : schema_(load("lockroom.schema.json")), methods_(load("methods.json")["methods"]) {}

  static json load(const std::string& name) {
    std::ifstream in(std::string(LOCKROOM_SCHEMA_DIR) + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    return json::parse(text.str());
  }

  JsonSchema schema_;
  json methods_;
};

}  // namespace lockroom::testing
