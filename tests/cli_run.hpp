// Running the CLI (build/pase, PASE_CLI_PATH) from a test: its exit status,
// standard output and standard error, caught in files of a scratch folder
// that the test process removes at exit.
#pragma once

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "test_util.hpp"

namespace pase::testing {

struct Run {
  int exit = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (char ch : arg) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

// A scratch folder of this test process, removed at exit.
inline const std::filesystem::path& scratch() {
  static const struct Dir {
    std::filesystem::path path;
    Dir() {
      path = std::filesystem::temp_directory_path() / ("pase-cli-test-" + std::to_string(getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

// Runs build/pase with `args`, standard input read from the file `input`.
inline Run run_cli(const std::vector<std::string>& args, const std::string& input = "/dev/null") {
  const std::filesystem::path out = scratch() / "stdout", err = scratch() / "stderr";
  std::string command = shell_quote(PASE_CLI_PATH);
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on
  // `command += " " + shell_quote(arg)`.
  for (const std::string& arg : args) {
    command += ' ';
    command += shell_quote(arg);
  }
  command += " <";
  command += shell_quote(input);
  command += " >";
  command += shell_quote(out.string());
  command += " 2>";
  command += shell_quote(err.string());
  const int status = std::system(command.c_str());
  Run run;
  run.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = read_text(out.string());
  run.err = read_text(err.string());
  return run;
}

}  // namespace pase::testing
