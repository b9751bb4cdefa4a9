// The strategy half of the JSON readers (json_request.cpp has the requests):
// configurations, strategies with or without a pipeline, and a request's
// "pipeline" options, each error naming the offending field
// (core/docs/formats.md).
#pragma once

#include <string>

#include "pase/pipeline.hpp"
#include "pase/plan.hpp"
#include "pase/result.hpp"
#include "util/json_util.hpp"

namespace pase::json_detail {

// A list of configurations, or a plan result whose vertices[i].config are
// taken in vertex order (so a saved result can be evaluated again).
Result<Strategy> strategy_from_json(const Json& value, const std::string& where);

// A strategy with or without a pipeline (parse_any_strategy()).
Result<PipelineStrategy> any_strategy_from_json(const Json& value, const std::string& where);

// The request's "pipeline" (core/docs/pipeline.md): {"stages", "microbatches",
// "schedule", "max_microbatches", "compose"}, each optional.
Result<PipelineOptions> pipeline_from_json(const Json& value, const std::string& where);

}  // namespace pase::json_detail
