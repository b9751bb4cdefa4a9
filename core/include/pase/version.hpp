// The version of the planner, one string for the library, the CLI
// (`pase --version`) and the WebAssembly module (`version()`).
#pragma once

namespace pase {

// The project version from CMakeLists.txt (`project(... VERSION 0.1.0)`), as
// plain text: "0.1.0". A static string: valid for the life of the program,
// never null; thread-safe.
const char* version();

}  // namespace pase
