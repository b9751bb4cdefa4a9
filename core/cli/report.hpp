// How the pase subcommands end: exit statuses, usage and input errors on
// standard error, and writing the result to standard output.
//
// Exit status: 0 success, 1 bad input (kExitError), 2 usage error (kExitUsage).
#pragma once

#include <string>
#include <string_view>

#include "pase/result.hpp"

namespace pase_cli {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A usage mistake: says what is wrong and where to read how it should be
// ("Try 'pase <command> --help'"; the general help when `command` is empty).
// Returns kExitUsage.
int usage_error(std::string_view command, const std::string& message);

// Bad input: "pase: error: <where>: <message>". Returns kExitError.
int input_error(const pase::Error& error);

// Writes and flushes `text`; false when standard output fails.
bool write_stdout(std::string_view text);

// The outcome of turning flags into values: a usage error (exit 2) or an
// input error (exit 1), reported by the caller.
struct Failure {
  bool usage = true;
  std::string message;
  pase::Error error;

  static Failure bad_usage(std::string message);
  static Failure bad_input(pase::Error error);
  // Prints the failure for `command` and returns its exit status.
  int report(std::string_view command) const;
};

}  // namespace pase_cli
