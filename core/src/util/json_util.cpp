// The exception-free JSON parser and the pretty printer of json_util.hpp,
// shared by every JSON document the library reads or writes.
#include "util/json_util.hpp"

#include <algorithm>
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

// The DOM builder of nlohmann with three additions: it never throws, it keeps
// the parse error (the plain non-throwing parse() only says "discarded"), and
// it rejects duplicate keys, which nlohmann would silently merge (a repeated
// "units" must not be ignored any more than a misspelt one).
//
// sax_parse() dispatches on the static type, so hiding the base members is
// enough; they are not virtual.
class DomParser : public nlohmann::detail::json_sax_dom_parser<Json> {
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;

 public:
  DomParser(Json& root, std::string_view text)
      : Base(root, /*allow_exceptions=*/false), text_(text) {}

  const std::optional<Error>& error() const { return error_; }

  bool null() {
    note_value();
    return Base::null();
  }
  bool boolean(bool value) {
    note_value();
    return Base::boolean(value);
  }
  bool number_integer(number_integer_t value) {
    note_value();
    return Base::number_integer(value);
  }
  bool number_unsigned(number_unsigned_t value) {
    note_value();
    return Base::number_unsigned(value);
  }
  bool number_float(number_float_t value, const string_t& text) {
    note_value();
    return Base::number_float(value, text);
  }
  bool string(string_t& value) {
    note_value();
    return Base::string(value);
  }
  bool binary(binary_t& value) {
    note_value();
    return Base::binary(value);
  }
  bool start_object(std::size_t size) {
    frames_.push_back(Frame{false, 0, child_path(), {}, {}});
    return Base::start_object(size);
  }
  bool key(string_t& name) {
    Frame& frame = frames_.back();
    if (!frame.keys.insert(name).second) {
      error_ = Error{"duplicate field '" + name + "'", field_path(frame.path, name)};
      return false;
    }
    frame.key = name;
    return Base::key(name);
  }
  bool end_object() {
    frames_.pop_back();
    return Base::end_object();
  }
  bool start_array(std::size_t size) {
    frames_.push_back(Frame{true, 0, child_path(), {}, {}});
    return Base::start_array(size);
  }
  bool end_array() {
    frames_.pop_back();
    return Base::end_array();
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string& last_token, const Exception& ex) {
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
    return Base::parse_error(position, last_token, ex);
  }

 private:
  // One open container, to name the place of a duplicate key.
  struct Frame {
    bool is_array = false;
    size_t count = 0;  // arrays: entries so far
    std::string path;
    std::string key;  // objects: the current key
    std::unordered_set<std::string> keys;
  };

  std::string position_text(std::size_t position) const {
    const std::string_view before = text_.substr(0, std::min(position, text_.size()));
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column =
        line_start == std::string_view::npos ? before.size() : before.size() - line_start - 1;
    return "parse error at line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  void note_value() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().count;
  }
  // The path of the value that starts now (and counts it in its array).
  std::string child_path() {
    if (frames_.empty()) return "";
    Frame& frame = frames_.back();
    if (frame.is_array) return index_path(frame.path, frame.count++);
    return field_path(frame.path, frame.key);
  }

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
  DomParser parser(root, text);
  if (!Json::sax_parse(text.begin(), text.end(), &parser)) {
    if (parser.error()) return *parser.error();
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
