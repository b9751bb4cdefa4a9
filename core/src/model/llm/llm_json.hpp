// The config reader of llm.hpp on a JSON value already parsed, for callers
// that parse the document themselves (import_json.cpp reads it once to tell
// a config from a graph document).
#pragma once

#include "pase/llm.hpp"
#include "util/json_util.hpp"

namespace pase {

// parse_llm_config() of a parsed document (errors as there).
Result<LlmConfig> llm_config_from_json(const json_detail::Json& document);

}  // namespace pase
