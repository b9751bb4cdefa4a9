// The exception-free JSON parser and the pretty printer of json_util.hpp,
// shared by every JSON document the library reads or writes.
#include "util/json_util.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace pase::json_detail {
namespace {

constexpr size_t kLineWidth = 100;

// ---- Parsing without exceptions -------------------------------------------------

// nlohmann's parser keeps its own stack, but destroying and printing a value
// recurse, so the depth is bounded before anything is parsed. Brackets inside
// strings do not count.
std::optional<Error> check_depth(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return Error{
            "the document is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels", ""};
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;  // an unbalanced bracket is left to the parser to report
    }
  }
  return std::nullopt;
}

// nlohmann quotes the token it stopped in ("last read: '...'", "number
// overflow parsing '...'"); an unterminated string or a huge number would put
// megabytes of the document into the message. Each quoted part longer than
// kMaxToken characters keeps only its end, where the parser stopped.
std::string shorten_tokens(const std::string& message) {
  constexpr size_t kMaxToken = 40;
  std::string out;
  size_t pos = 0;
  while (pos < message.size()) {
    const size_t open = message.find('\'', pos);
    const size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
    if (close == std::string::npos) break;
    out.append(message, pos, open + 1 - pos);
    const size_t length = close - open - 1;
    if (length > kMaxToken) {
      out += "...";
      out.append(message, close - (kMaxToken - 3), kMaxToken - 3);
    } else {
      out.append(message, open + 1, length);
    }
    out += '\'';
    pos = close + 1;
  }
  if (pos < message.size()) out.append(message, pos, std::string::npos);
  return out;
}

// The document builder: nlohmann's DOM parser, rewritten for three reasons.
// It never throws and keeps the parse error (the plain non-throwing parse()
// only says "discarded"). It rejects duplicate keys, which nlohmann would
// silently merge (a repeated "units" must not be ignored any more than a
// misspelt one). And it builds in time linear in the text: nlohmann's own
// builder inserts each key of an ordered_json object with the ordered map's
// operator[], which searches the keys before it, so an object of n keys took
// n^2 / 2 comparisons (a config.json with 100,000 extra fields, 47 s). Here a
// key is appended to the object's vector; whether it was seen is asked of
// the few keys before it, or of a hash set once the object has more.
//
// sax_parse() calls the members by name (a template, not virtual).
class DomBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  DomBuilder(Json& root, std::string_view text) : root_(root), text_(text) {}

  const std::optional<Error>& error() const { return error_; }

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool value) { return put(Json(value)); }
  bool number_integer(number_integer_t value) { return put(Json(value)); }
  bool number_unsigned(number_unsigned_t value) { return put(Json(value)); }
  bool number_float(number_float_t value, const string_t& /*text*/) { return put(Json(value)); }
  bool string(string_t& value) { return put(Json(std::move(value))); }
  bool binary(binary_t& value) { return put(Json(Json::binary_t(std::move(value)))); }

  bool start_object(std::size_t /*size*/) {
    Json* object = slot();
    *object = Json::object();
    frames_.push_back(Frame{object, false, std::nullopt});
    return true;
  }
  bool key(string_t& name) {
    Frame& frame = frames_.back();
    Keys& keys = *frame.value->get_ptr<Json::object_t*>();
    // Appended as the last key: the ordered map's own insertion would search
    // every key before it again. The lexer clears its buffer before the next
    // token, so `name` may be moved from (as the string values are).
    keys.emplace_back(std::move(name), nullptr);
    if (repeated(frame, keys)) {
      const std::string repeated_name = keys.back().first;
      error_ =
          Error{"duplicate field '" + repeated_name + "'", field_path(open_path(), repeated_name)};
      return false;
    }
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t /*size*/) {
    Json* array = slot();
    *array = Json::array();
    frames_.push_back(Frame{array, true, std::nullopt});
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& /*last_token*/, const Exception& ex) {
    // what() is "[json.exception.parse_error.101] parse error at line 3, column
    // 5: ..."; the bracketed id means nothing to a user.
    std::string message = ex.what();
    if (!message.empty() && message.front() == '[') {
      const size_t end = message.find("] ");
      if (end != std::string::npos) message.erase(0, end + 2);
    }
    // Syntax errors carry "parse error at line L, column C"; others (a number
    // overflowing a double) only a byte offset, turned into the same form.
    if (message.rfind("parse error", 0) != 0) message = position_text(position) + ": " + message;
    error_ = Error{shorten_tokens(message), ""};
    return false;
  }

 private:
  // An object's entries by position (the ordered map is a vector of them).
  using Keys = Json::object_t::Container;

  // Objects with more keys than this keep a hash set of them; below it a
  // scan of the keys is cheaper (most objects of a graph document have a
  // handful).
  static constexpr size_t kScannedKeys = 16;

  // The set's entries are positions in the object, hashed and compared by
  // the key there: no copy of a key, and none that appending would move.
  struct KeyHash {
    const Keys* keys;
    size_t operator()(size_t at) const { return std::hash<std::string>{}((*keys)[at].first); }
  };
  struct KeyEqual {
    const Keys* keys;
    bool operator()(size_t a, size_t b) const { return (*keys)[a].first == (*keys)[b].first; }
  };
  using KeySet = std::unordered_set<size_t, KeyHash, KeyEqual>;

  // One open container. `value` stays valid while the container is open:
  // only the innermost container grows.
  struct Frame {
    Json* value = nullptr;
    bool is_array = false;
    std::optional<KeySet> seen;  // objects past kScannedKeys keys
  };

  // Whether the last key of `keys` (the innermost open object's) is one of
  // those before it.
  static bool repeated(Frame& frame, const Keys& keys) {
    const size_t last = keys.size() - 1;
    if (keys.size() <= kScannedKeys) {
      for (size_t i = 0; i < last; ++i)
        if (keys[i].first == keys[last].first) return true;
      return false;
    }
    if (!frame.seen) {
      frame.seen.emplace(4 * kScannedKeys, KeyHash{&keys}, KeyEqual{&keys});
      for (size_t i = 0; i < last; ++i) frame.seen->insert(i);
    }
    return !frame.seen->insert(last).second;
  }

  // Where the next value goes: the root, a new entry of the innermost array,
  // or the value of the innermost object's last key.
  Json* slot() {
    if (frames_.empty()) return &root_;
    Json& container = *frames_.back().value;
    if (frames_.back().is_array) {
      container.get_ptr<Json::array_t*>()->emplace_back();
      return &container.get_ptr<Json::array_t*>()->back();
    }
    return &container.get_ptr<Json::object_t*>()->back().second;
  }
  bool put(Json value) {
    *slot() = std::move(value);
    return true;
  }

  // The path of the innermost open container ("layers[3].attrs"), built only
  // for an error: each open object's last key, each open array's last index.
  std::string open_path() const {
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Json& container = *frames_[i].value;
      if (frames_[i].is_array) {
        path = index_path(path, container.size() - 1);
      } else {
        path = field_path(path, container.get_ptr<const Json::object_t*>()->back().first);
      }
    }
    return path;
  }

  std::string position_text(std::size_t position) const {
    const std::string_view before = text_.substr(0, std::min(position, text_.size()));
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column =
        line_start == std::string_view::npos ? before.size() : before.size() - line_start - 1;
    return "parse error at line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  Json& root_;
  std::string_view text_;
  std::vector<Frame> frames_;
  std::optional<Error> error_;
};

// ---- Pretty printing --------------------------------------------------------------

// Appends the one-line form of `value` ({"a": 1, "b": [2, 3]}); stops early and
// returns false once `out` grows past `limit`, so trying a huge subtree is cheap.
bool append_inline(const Json& value, std::string& out, size_t limit) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += dump_compact(Json(it.key()));
      out += ": ";
      if (out.size() > limit || !append_inline(it.value(), out, limit)) return false;
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    bool first = true;
    for (const Json& item : value) {
      if (!first) out += ", ";
      first = false;
      if (out.size() > limit || !append_inline(item, out, limit)) return false;
    }
    out += ']';
  } else {
    out += dump_compact(value);
  }
  return out.size() <= limit;
}

void append_pretty(const Json& value, std::string& out, size_t indent, bool expand) {
  if (!value.is_structured() || value.empty()) {
    out += dump_compact(value);
    return;
  }
  if (!expand) {
    const size_t line_start = out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n') + 1;
    const size_t column = out.size() - line_start;
    // One column is kept for the comma that may follow.
    if (column + 1 < kLineWidth) {
      std::string line;
      if (append_inline(value, line, kLineWidth - column - 1)) {
        out += line;
        return;
      }
    }
  }
  const bool object = value.is_object();
  out += object ? '{' : '[';
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (!first) out += ',';
    first = false;
    out += '\n';
    out.append(indent + 2, ' ');
    if (object) {
      out += dump_compact(Json(it.key()));
      out += ": ";
    }
    append_pretty(it.value(), out, indent + 2, false);
  }
  out += '\n';
  out.append(indent, ' ');
  out += object ? '}' : ']';
}

}  // namespace

Result<Json> parse_document(std::string_view text) {
  if (text.size() > kMaxDocumentBytes) {
    return Error{"the document is larger than the limit of " +
                     std::to_string(kMaxDocumentBytes >> 20) + " MiB",
                 ""};
  }
  if (std::optional<Error> error = check_depth(text)) return *error;
  Json root;
  DomBuilder builder(root, text);
  if (!Json::sax_parse(text.begin(), text.end(), &builder)) {
    if (builder.error()) return *builder.error();
    return Error{"invalid JSON", ""};  // not expected: every failure records an error
  }
  return root;
}

std::string dump_pretty(const Json& value) {
  std::string out;
  append_pretty(value, out, 0, /*expand=*/value.is_structured());
  return out;
}

}  // namespace pase::json_detail
