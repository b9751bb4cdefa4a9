// The CLI (build/pase) on the invalid-input corpus: every case exits with its
// status (1 bad input, 2 usage), prints nothing on standard output and names
// what and where on standard error:
//   pase: error: <file>: <where>: <message>       (exit 1)
//   pase: <message>\nTry 'pase plan --help' ...   (exit 2)
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "invalid_corpus.hpp"
#include "pase/version.hpp"
#include "test_util.hpp"

using pase_test::InvalidCase;
namespace fs = std::filesystem;
using pase::testing::contains;

namespace {

struct Run {
  int exit = -1;
  std::string out, err;
};

std::string shell_quote(const std::string& arg) {
  std::string quoted = "'";
  for (char ch : arg) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

// A scratch folder of this test process, removed at exit.
const fs::path& scratch() {
  static const struct Dir {
    fs::path path;
    Dir() {
      path = fs::temp_directory_path() / ("pase-cli-test-" + std::to_string(getpid()));
      fs::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } dir;
  return dir.path;
}

Run run_cli(const std::vector<std::string>& args) {
  const fs::path out = scratch() / "stdout", err = scratch() / "stderr";
  std::string command = shell_quote(PASE_CLI_PATH);
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on
  // `command += " " + shell_quote(arg)`.
  for (const std::string& arg : args) {
    command += ' ';
    command += shell_quote(arg);
  }
  command += " </dev/null >";
  command += shell_quote(out.string());
  command += " 2>";
  command += shell_quote(err.string());
  const int status = std::system(command.c_str());
  Run run;
  run.exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  run.out = pase_test::read_binary(out.string());
  run.err = pase_test::read_binary(err.string());
  return run;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

TEST_CASE("cli: every invalid input exits 1 or 2 with its message on stderr") {
  int ran = 0;
  for (const InvalidCase& c : pase_test::load_invalid_cases()) {
    if (c.cli_exit == 0) continue;
    std::vector<std::string> args;
    std::string where = c.where;
    if (c.is_graph()) {
      std::string path = pase_test::corpus_dir() + "/" + c.file;
      if (c.file.empty()) {
        // Generated: written to a file first, as a user would have it.
        path = (scratch() / (c.name + ".json")).string();
        std::ofstream(path, std::ios::binary) << pase_test::generated_text(c.generate);
      }
      args = {"plan", "--graph", path};
      args.insert(args.end(), c.cli_args.begin(), c.cli_args.end());
      // Errors found while loading lead with the file; plan() errors do not.
      if (!c.plan) where = where.empty() ? path : path + ": " + where;
    } else {
      args = c.cli_args;
    }
    where = c.cli_where.value_or(where);
    const std::string message = c.cli_message.value_or(c.message);

    const Run run = run_cli(args);
    ++ran;
    INFO(c.name, ": exit ", run.exit, ", stderr: ", run.err.substr(0, 400));
    CHECK(run.exit == c.cli_exit);
    CHECK(run.out.empty());
    CHECK(contains(run.err, message));
    if (c.cli_exit == 1) {
      CHECK(starts_with(run.err, "pase: error: " + (where.empty() ? "" : where + ": ")));
    } else {
      CHECK(starts_with(run.err, "pase: "));
      CHECK(contains(run.err, "--help' for more information"));
    }
    // One line of message (two with the usage hint), not a dump of the input.
    CHECK(run.err.size() < 1000);
  }
  CHECK(ran >= 150);
}

TEST_CASE("cli: bench runs each case and reports the planner's own optimum") {
  // The bench forks a process per case; its costs must be plan()'s, here the
  // golden optima of AlexNet and RNNLM at 8 devices.
  Run run = run_cli({"bench", "--models", "alexnet,rnnlm", "--procs", "8", "--format", "json"});
  REQUIRE(run.exit == 0);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  REQUIRE(doc["cases"].size() == 2);
  CHECK(doc["cases"][0]["network"] == "alexnet");
  CHECK(doc["cases"][0]["ran"] == true);
  CHECK(doc["cases"][0]["cost"].get<double>() == 97098296512.0);
  CHECK(doc["cases"][1]["cost"].get<double>() == 4024963186688.0);
  CHECK(doc["cases"][1]["pairs"].get<double>() > 0);
  CHECK(doc["calibration_ns_per_pair"].get<double>() > 0);
}

TEST_CASE("cli: bench reports an order that does not fit instead of running it") {
  Run run = run_cli(
      {"bench", "--models", "inception3", "--procs", "64", "--order", "bfs", "--format", "json"});
  REQUIRE(run.exit == 0);
  nlohmann::json doc = nlohmann::json::parse(run.out, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["cases"][0]["ran"] == false);
  CHECK(doc["cases"][0]["note"].get<std::string>().find("needs") != std::string::npos);
  CHECK(doc["cases"][0]["predicted_peak_bytes"].get<double>() > 1e18);
}

TEST_CASE("cli: --version prints the library's version, the project version") {
  Run run = run_cli({"--version"});
  CHECK(run.exit == 0);
  CHECK(run.out == std::string("pase ") + pase::version() + "\n");
  // project(... VERSION x.y.z) of CMakeLists.txt, never a placeholder such as "unknown".
  const std::string version = pase::version();
  CHECK(std::count(version.begin(), version.end(), '.') == 2);
  CHECK(version.find_first_not_of("0123456789.") == std::string::npos);
  CHECK(run.err.empty());
}
