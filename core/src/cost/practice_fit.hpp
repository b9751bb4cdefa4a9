// The practice model's parameters per GPU kind (core/docs/practice-model.md,
// "Fitted parameters"): what a matrix product, fused attention and a
// memory-bound op reach of the device's peaks, and the latency of one step
// of a collective. The presets (presets.cpp) carry them into a cluster.
#pragma once

#include <string_view>

#include "pase/cluster.hpp"

namespace pase {

// The profile of the GPU kind `id` (a preset id); an unknown id gets the
// defaults of DeviceProfile. memory_gbps is left to the preset.
DeviceProfile practice_profile(std::string_view id);

// The GPU kind of preset `id`: the first preset of its row ("a100-40gb" for
// "a100-80gb"); `id` itself when no row names it.
std::string_view practice_kind(std::string_view id);

}  // namespace pase
