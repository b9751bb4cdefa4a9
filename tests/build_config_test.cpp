// How the suite was compiled. The sanitizer build (PASE_SANITIZE=ON, or
// PASE_FUZZ=ON; CMake then defines PASE_SANITIZE_BUILD) must keep assert()
// on: CMakeLists.txt removes the -DNDEBUG of the optimized build types. If
// NDEBUG comes back, this file no longer compiles, so .ci/sanitize fails.
#include <doctest/doctest.h>

#include <cassert>

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
