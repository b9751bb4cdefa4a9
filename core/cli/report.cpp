// Exit statuses and error reporting of the subcommands (report.hpp).
#include "report.hpp"

#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

namespace pase_cli {

int usage_error(std::string_view command, const std::string& message) {
  std::fprintf(stderr, "pase: %s\n", message.c_str());
  if (command.empty()) {
    std::fprintf(stderr, "Try 'pase --help' for more information.\n");
  } else {
    std::fprintf(stderr, "Try 'pase %.*s --help' for more information.\n",
                 static_cast<int>(command.size()), command.data());
  }
  return kExitUsage;
}

int input_error(const pase::Error& error) {
  std::fprintf(stderr, "pase: error: %s\n", error.to_string().c_str());
  return kExitError;
}

bool write_stdout(std::string_view text) {
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() &&
         std::fflush(stdout) == 0;
}

Failure Failure::bad_usage(std::string message) { return {true, std::move(message), {}}; }

Failure Failure::bad_input(pase::Error error) { return {false, {}, std::move(error)}; }

int Failure::report(std::string_view command) const {
  return usage ? usage_error(command, message) : input_error(error);
}

}  // namespace pase_cli
