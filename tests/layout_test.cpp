// The layout of core/src (core/docs/architecture.md, "The source tree"): one
// folder per stage that the data passes through, each including only from the
// stages below it, and no include cycle between folders. The public headers
// (core/include/pase/) are the contract under all of them: they include only
// one another.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = PASE_SOURCE_DIR;
const fs::path kSrc = kRoot / "core" / "src";
const fs::path kInclude = kRoot / "core" / "include";

// The stages, bottom first: a folder may include from its own stage and from
// the stages of a lower level. util/ and kernels/ share the bottom and do not
// include each other.
const std::map<std::string, int> kLevel = {
    {"util", 0}, {"kernels", 0},   {"model", 1},  {"cost", 2},    {"search", 3}, {"pipeline", 4},
    {"plan", 5}, {"baselines", 6}, {"export", 7}, {"layouts", 8}, {"api", 9},
};

// Files loose at the top of core/src, outside every stage: at most a handful,
// and they include no private header.
constexpr size_t kMaxLoose = 5;

struct Include {
  std::string from;  // the including file, relative to core/src
  std::string name;  // as written between the quotes
};

// Concatenation without `"literal" + std::string`, of which GCC 12 warns
// wrongly (-Wrestrict) at -O3.
std::string join(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view part : parts) out.append(part);
  return out;
}

bool is_source(const fs::path& p) { return p.extension() == ".cpp" || p.extension() == ".hpp"; }

std::vector<std::string> quoted_includes(const fs::path& file) {
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line[at] != '#') continue;
    at = line.find_first_not_of(" \t", at + 1);
    if (at == std::string::npos || line.compare(at, 7, "include") != 0) continue;
    const size_t open = line.find('"', at);
    if (open == std::string::npos) continue;  // <system header>
    const size_t close = line.find('"', open + 1);
    if (close != std::string::npos) out.push_back(line.substr(open + 1, close - open - 1));
  }
  return out;
}

// "model/ops/conv.cpp" -> "model/ops"; a loose file -> "".
std::string folder_of(const std::string& rel) {
  const fs::path parent = fs::path(rel).parent_path();
  return parent.generic_string();
}

// "model/ops" -> "model"; "" stays "".
std::string stage_of(const std::string& folder) { return folder.substr(0, folder.find('/')); }

std::vector<Include> private_includes() {
  std::vector<Include> out;
  for (const auto& entry : fs::recursive_directory_iterator(kSrc)) {
    if (!entry.is_regular_file() || !is_source(entry.path())) continue;
    const std::string rel = fs::relative(entry.path(), kSrc).generic_string();
    for (const std::string& name : quoted_includes(entry.path())) out.push_back({rel, name});
  }
  return out;
}

}  // namespace

TEST_CASE("layout: every folder of core/src is a stage drawn in architecture.md") {
  std::ifstream in(fs::path(PASE_DOCS_DIR) / "architecture.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!doc.empty());
  std::vector<std::string> loose;
  int folders = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kSrc)) {
    const std::string rel = fs::relative(entry.path(), kSrc).generic_string();
    if (entry.is_directory()) {
      ++folders;
      CHECK_MESSAGE(kLevel.count(stage_of(rel)) == 1,
                    "core/src/" << rel << " is in no stage: add it to kLevel and to "
                                << "core/docs/architecture.md");
      // One line of the tree in "The source tree": "  model/   ...", "    ops/   ...".
      const std::string line = join({" ", entry.path().filename().string(), "/ "});
      CHECK_MESSAGE(doc.find(line) != std::string::npos,
                    "core/docs/architecture.md does not draw core/src/" << rel);
    } else if (folder_of(rel).empty()) {
      loose.push_back(rel);
    }
  }
  CHECK(folders >= static_cast<int>(kLevel.size()));
  CHECK_MESSAGE(loose.size() <= kMaxLoose, "loose files at the top of core/src: " << loose.size());
}

TEST_CASE("layout: a stage of core/src includes only from itself and the stages below") {
  const std::vector<Include> includes = private_includes();
  REQUIRE(includes.size() > 100);
  int checked = 0;
  for (const Include& inc : includes) {
    const std::string where = join({"core/src/", inc.from, " includes \"", inc.name, "\""});
    if (inc.name.rfind("pase/", 0) == 0) {
      CHECK_MESSAGE(fs::exists(kInclude / inc.name), where << ": no such public header");
      continue;
    }
    // Generated by core/CMakeLists.txt.
    if (inc.name == "pase_op_files.inc" || inc.name == "jax_runtime.inc") continue;
    // Private headers are named from core/src, whatever the includer's folder.
    CHECK_MESSAGE(fs::exists(kSrc / inc.name), where << ": not a path from core/src");
    const std::string from = stage_of(folder_of(inc.from));
    const std::string to = stage_of(folder_of(inc.name));
    ++checked;
    if (from.empty()) {
      FAIL_CHECK(where << ": a loose file includes no private header");
      continue;
    }
    if (to.empty() || from == to) continue;
    REQUIRE(kLevel.count(from) == 1);
    REQUIRE(kLevel.count(to) == 1);
    CHECK_MESSAGE(kLevel.at(to) < kLevel.at(from),
                  where << ": " << to << "/ is not a stage below " << from << "/");
  }
  CHECK(checked > 100);
}

TEST_CASE("layout: no include cycle between the folders of core/src") {
  std::map<std::string, std::set<std::string>> uses;
  for (const Include& inc : private_includes()) {
    if (inc.name.rfind("pase/", 0) == 0 || !fs::exists(kSrc / inc.name)) continue;
    const std::string from = folder_of(inc.from), to = folder_of(inc.name);
    if (from != to) uses[from].insert(to);
  }
  // Depth-first search; a folder met again while still on the path closes a cycle.
  std::map<std::string, int> state;  // 0 unseen, 1 on the path, 2 done
  std::vector<std::string> path;
  std::function<void(const std::string&)> visit = [&](const std::string& f) {
    state[f] = 1;
    path.push_back(f);
    for (const std::string& g : uses[f]) {
      if (state[g] == 1) {
        std::string cycle;
        for (auto it = std::find(path.begin(), path.end(), g); it != path.end(); ++it)
          cycle += *it + "/ -> ";
        FAIL_CHECK("include cycle: " << cycle << g << "/");
      } else if (state[g] == 0) {
        visit(g);
      }
    }
    path.pop_back();
    state[f] = 2;
  };
  for (const auto& [folder, targets] : uses)
    if (state[folder] == 0) visit(folder);
  CHECK(uses.size() >= kLevel.size());
}

TEST_CASE("layout: the public headers include only one another") {
  int headers = 0;
  for (const auto& entry : fs::directory_iterator(kInclude / "pase")) {
    if (!is_source(entry.path())) continue;
    ++headers;
    for (const std::string& name : quoted_includes(entry.path())) {
      const std::string where = join(
          {"core/include/pase/", entry.path().filename().string(), " includes \"", name, "\""});
      CHECK_MESSAGE(name.rfind("pase/", 0) == 0, where);
      CHECK_MESSAGE(fs::exists(kInclude / name), where);
    }
  }
  CHECK(headers >= 10);
}

namespace {

// The lines of core/CMakeLists.txt from the one that starts with `opening`
// to the first after it, comments aside, that ends with ")".
std::string cmake_block(const std::string& opening) {
  std::ifstream in(kRoot / "core" / "CMakeLists.txt");
  std::string line, out;
  bool inside = false;
  while (std::getline(in, line)) {
    const size_t at = line.find_first_not_of(" \t");
    if (!inside) inside = at != std::string::npos && line.compare(at, opening.size(), opening) == 0;
    if (!inside) continue;
    out.append(line).push_back('\n');
    if (at != std::string::npos && line[at] != '#' && line.back() == ')') break;
  }
  return out;
}

}  // namespace

TEST_CASE("layout: the test-only engines build into pase_testing, never into pase_core") {
  // architecture.md, "The test-only engines": the CLI and the module link
  // pase_core alone, so a call from the core to either would not link.
  const std::string core = cmake_block("set(PASE_CORE_SOURCES");
  const std::string testing = cmake_block("add_library(pase_testing STATIC");
  REQUIRE(core.find("src/plan/plan.cpp") != std::string::npos);
  for (const char* file :
       {"src/plan/exhaustive_search.cpp", "src/search/dynamic_program_reference.cpp"}) {
    CHECK_MESSAGE(core.find(file) == std::string::npos, file);
    CHECK_MESSAGE(testing.find(file) != std::string::npos, file);
  }
}
