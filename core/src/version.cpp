// The version string, compiled in from the project version (core/CMakeLists.txt
// defines PASE_VERSION for this file).
#include "pase/version.hpp"

#ifndef PASE_VERSION
#error "PASE_VERSION must be defined by the build (the project version)"
#endif

namespace pase {

const char* version() { return PASE_VERSION; }

}  // namespace pase
