// How the suite was compiled. The sanitizer build (PASE_SANITIZE=ON, or
// PASE_FUZZ=ON; CMake then defines PASE_SANITIZE_BUILD) must keep assert()
// on: CMakeLists.txt removes the -DNDEBUG of the optimized build types. If
// NDEBUG comes back, this file no longer compiles, so .ci/sanitize fails.
#include <doctest/doctest.h>

#include <cassert>
#include <filesystem>
#include <fstream>
#include <string>

#if defined(PASE_SANITIZE_BUILD) && defined(NDEBUG)
#error "the sanitizer build defines NDEBUG: assert() is compiled out (see CMakeLists.txt)"
#endif

TEST_CASE("build: the sanitizer build keeps assert() on") {
#ifdef PASE_SANITIZE_BUILD
  // An assert() that is compiled in evaluates its argument.
  int evaluated = 0;
  assert(++evaluated == 1);
  CHECK(evaluated == 1);
#else
  MESSAGE("not a sanitizer build (PASE_SANITIZE_BUILD undefined): nothing to check");
#endif
}

// ctest runs each test case by name (doctest_discover_tests), and CMake
// splits a name at ';' into two tests that each match nothing: such a case
// would pass under ctest without running.
TEST_CASE("build: no test case name holds a semicolon, which ctest would split") {
  namespace fs = std::filesystem;
  const fs::path tests = fs::path(PASE_TEST_DATA_DIR).parent_path();
  int files = 0;
  for (const auto& entry : fs::directory_iterator(tests)) {
    if (entry.path().extension() != ".cpp") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      const size_t at = line.find("TEST_CASE(\"");
      if (at != 0) continue;
      const std::string name = line.substr(11, line.find('"', 11) - 11);
      const std::string where = entry.path().filename().string() + ": " + name;
      CHECK_MESSAGE(name.find(';') == std::string::npos, where);
    }
  }
  CHECK(files >= 20);
}
