// The repository stands alone: every Markdown document that a source file, a
// test, a script, a data file or a document of the repository names
// ("core/docs/cluster.md", "see pipeline.md") is in the repository.
// A path with a directory must exist relative to the repository root, to the
// citing file's folder or to a folder above it; a bare name must be the name
// of some document here.
#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRepository = PASE_SOURCE_DIR;

// The repository's own files: everything under the root but build output,
// installed packages and Git's metadata.
std::vector<fs::path> repository_files() {
  std::vector<fs::path> out;
  for (auto it = fs::recursive_directory_iterator(kRepository);
       it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name.rfind("build", 0) == 0 || name == "node_modules" ||
                               name == ".git" || name == "artifacts" || name == "corpus")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out.push_back(it->path());
  }
  return out;
}

bool cites_text(const fs::path& p) {
  static const std::set<std::string> kinds = {".md",   ".cpp",  ".hpp", ".h",  ".js",  ".mjs",
                                              ".json", ".html", ".py",  ".sh", ".txt", ".css"};
  return kinds.count(p.extension().string()) > 0 || p.parent_path().filename() == ".ci" ||
         p.filename() == "CMakeLists.txt";
}

}  // namespace

TEST_CASE("cited documents: every .md a file of the repository names is in the repository") {
  const std::vector<fs::path> files = repository_files();
  std::set<std::string> names;
  for (const fs::path& p : files)
    if (p.extension() == ".md") names.insert(p.filename().string());
  REQUIRE(names.count("README.md") == 1);
  REQUIRE(names.count("cluster.md") == 1);
  // A document's name ends in ".md" (not followed by a letter or digit) and
  // is made of letters, digits, '-', '_' and '.', after an optional relative
  // path; URLs (with "://") are not the repository's.
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  };
  auto path_char = [&](char c) { return name_char(c) || c == '.' || c == '/'; };
  int checked = 0;
  for (const fs::path& p : files) {
    if (!cites_text(p) || fs::file_size(p) > (1 << 20)) continue;
    std::ifstream in(p, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    for (size_t at = text.find(".md"); at != std::string::npos; at = text.find(".md", at + 3)) {
      if (at + 3 < text.size() && std::isalnum(static_cast<unsigned char>(text[at + 3]))) continue;
      size_t name_start = at;
      while (name_start > 0 && name_char(text[name_start - 1])) --name_start;
      if (name_start == at) continue;  // ".md" alone
      size_t start = name_start;
      while (start > 0 && path_char(text[start - 1])) --start;
      const std::string dir = text.substr(start, name_start - start);
      const std::string name = text.substr(name_start, at + 3 - name_start);
      size_t word_start = start;
      while (word_start > 0 && !std::isspace(static_cast<unsigned char>(text[word_start - 1])) &&
             text[word_start - 1] != '(' && text[word_start - 1] != '"')
        --word_start;
      const std::string word = text.substr(word_start, at + 3 - word_start);
      if (word.find("://") != std::string::npos) continue;
      ++checked;
      CAPTURE(p.string());
      CAPTURE(dir + name);
      if (dir.empty() || dir == "/" || dir == "./") {
        CHECK_MESSAGE(names.count(name) == 1, "no document named " << name << " in the repository");
      } else {
        // From the root, or from the citing file's folder or one above it.
        const fs::path rel = fs::path(dir) / name;
        bool found = fs::exists(kRepository / rel);
        for (fs::path folder = p.parent_path();
             !found && folder.string().size() >= kRepository.string().size();
             folder = folder.parent_path())
          found = fs::exists(folder / rel);
        CHECK_MESSAGE(found, rel.string() << " is not in the repository");
      }
    }
  }
  CHECK(checked > 100);
}
