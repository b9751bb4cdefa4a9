// Private helpers of the JSON code (model/graph_json.cpp, model/op_table.cpp,
// model/llm/, api/): typed readers that turn a JSON value into a C++ value or
// an Error naming the field path, the exception-free document parser and the
// pretty printer. The graph schema is model/graph_json.hpp's; what the JSON
// entry points share, api/entry.hpp's.
//
// Every reader checks the JSON type before touching the value, so nothing here
// throws (the WebAssembly build may run without exception support).
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pase/graph.hpp"
#include "pase/result.hpp"
#include "util/text.hpp"

namespace pase::json_detail {

// Ordered, so that documents keep their key order when written back (graph
// inputs, "meta" kept verbatim, result documents in schema order).
using Json = nlohmann::ordered_json;

// ---- Field paths ------------------------------------------------------------

// "layers[3]" + "units" -> "layers[3].units"; an empty parent gives "units".
inline std::string field_path(std::string_view parent, std::string_view key) {
  std::string path(parent);
  if (!path.empty()) path += '.';
  path += key;
  return path;
}

// "layers" + 3 -> "layers[3]".
inline std::string index_path(std::string_view parent, size_t index) {
  std::string path(parent);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

// Prefixes an error's field path: ("graph", "layers[2].units") ->
// "graph.layers[2].units"; an empty path becomes the prefix itself.
inline Error with_prefix(Error error, std::string_view prefix) {
  if (prefix.empty()) return error;
  error.where = error.where.empty() ? std::string(prefix) : field_path(prefix, error.where);
  return error;
}

// ---- Text of values -----------------------------------------------------------

// Compact JSON text of `value`. Invalid UTF-8 (only possible in strings set
// from code) is replaced rather than throwing.
inline std::string dump_compact(const Json& value) {
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// How an offending value is shown in a message: numbers and literals as
// written, strings quoted, containers by kind ("an array").
inline std::string describe(const Json& value) {
  switch (value.type()) {
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string: {
      std::string text = dump_compact(value);
      // A long string would drown the message; its start is enough.
      if (text.size() > 40) text = text.substr(0, 37) + "...";
      return "a string " + text;
    }
    default:
      return dump_compact(value);
  }
}

inline Error type_error(std::string_view expected, const Json& value, const std::string& where) {
  return Error{"must be " + std::string(expected) + ", not " + describe(value), where};
}

// ---- Value readers ------------------------------------------------------------
// Each converts one JSON value found at `where`. They share one signature so
// that ObjectReader::read() can take any of them.

// Any integer. Floats are rejected even when integral ("4.0"): sizes in the
// format are integers, and accepting 4.0 would hide a bug in the writer.
inline Result<int64_t> to_int(const Json& value, const std::string& where) {
  if (value.is_number_integer()) {
    if (value.is_number_unsigned()) {
      const uint64_t u = value.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Error{"is too large (" + dump_compact(value) + ")", where};
      }
      return static_cast<int64_t>(u);
    }
    return value.get<int64_t>();
  }
  return type_error("an integer", value, where);
}

// An integer >= `min`; `what` names the expectation ("a positive integer").
// Floats keep to_int's "must be an integer" message.
inline Result<int64_t> to_int_at_least(const Json& value, const std::string& where, int64_t min,
                                       std::string_view what) {
  if (!value.is_number()) return type_error(what, value, where);
  Result<int64_t> n = to_int(value, where);
  if (n && *n < min) return type_error(what, value, where);
  return n;
}

inline Result<int64_t> to_positive_int(const Json& value, const std::string& where) {
  return to_int_at_least(value, where, 1, "a positive integer");
}

inline Result<int64_t> to_non_negative_int(const Json& value, const std::string& where) {
  return to_int_at_least(value, where, 0, "a non-negative integer");
}

// A finite number (the parser already rejects overflowing literals; this also
// guards values built in code).
inline Result<double> to_number(const Json& value, const std::string& where) {
  if (!value.is_number()) return type_error("a number", value, where);
  const double d = value.get<double>();
  if (!std::isfinite(d)) return type_error("a finite number", value, where);
  return d;
}

inline Result<double> to_non_negative_number(const Json& value, const std::string& where) {
  Result<double> d = to_number(value, where);
  if (!d || *d < 0) return type_error("a non-negative number", value, where);
  return d;
}

inline Result<double> to_positive_number(const Json& value, const std::string& where) {
  Result<double> d = to_number(value, where);
  if (!d || *d <= 0) return type_error("a positive number", value, where);
  return d;
}

inline Result<bool> to_bool(const Json& value, const std::string& where) {
  if (!value.is_boolean()) return type_error("true or false", value, where);
  return value.get<bool>();
}

inline Result<std::string> to_string(const Json& value, const std::string& where) {
  if (!value.is_string()) return type_error("a string", value, where);
  return value.get<std::string>();
}

inline Result<std::string> to_non_empty_string(const Json& value, const std::string& where) {
  if (!value.is_string()) return type_error("a non-empty string", value, where);
  std::string s = value.get<std::string>();
  if (s.empty()) return Error{"must not be empty", where};
  return s;
}

// A list whose entries all pass `element`; errors name the entry
// ("filter[2]"). `what` describes the whole list for a non-list value.
template <class T, class Element>
Result<std::vector<T>> to_list(const Json& value, const std::string& where, std::string_view what,
                               Element element) {
  if (!value.is_array()) return type_error(what, value, where);
  std::vector<T> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    Result<T> item = element(value[i], index_path(where, i));
    if (!item) return item.error();
    out.push_back(std::move(*item));
  }
  return out;
}

inline Result<std::vector<int64_t>> to_int_list(const Json& value, const std::string& where) {
  return to_list<int64_t>(value, where, "a list of integers", to_int);
}

// A shape: a list of positive integers (may be empty: a scalar).
inline Result<Shape> to_shape(const Json& value, const std::string& where) {
  return to_list<int64_t>(value, where, "a list of positive integers", to_positive_int);
}

// ---- Objects --------------------------------------------------------------------

// Reads the fields of one JSON object. The first error is kept and every later
// read becomes a no-op, so a parser can read all fields in a row and check
// ok() once at the end.
class ObjectReader {
 public:
  // `object` must be a JSON object and outlive the reader; `where` is its path.
  ObjectReader(const Json& object, std::string where) : object_(object), where_(std::move(where)) {}

  bool ok() const { return !error_.has_value(); }
  const Error& error() const { return *error_; }
  const std::string& where() const { return where_; }
  std::string path(std::string_view key) const { return field_path(where_, key); }

  // Records `error` unless an earlier one is already recorded.
  void fail(Error error) {
    if (!error_) error_ = std::move(error);
  }

  const Json* find(std::string_view key) const {
    auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Fails on the first key for which `known(key)` returns an error message
  // (empty: the key is fine). Run it before the reads so that a misspelt
  // field is reported as unknown, not as a missing required one.
  template <class Known>
  void check_keys(Known known) {
    if (!ok()) return;
    for (auto it = object_.begin(); it != object_.end(); ++it) {
      std::string message = known(std::string_view(it.key()));
      if (!message.empty()) {
        fail(Error{std::move(message), path(it.key())});
        return;
      }
    }
  }

  // Rejects every key not in `keys`.
  void allow_only(std::initializer_list<std::string_view> keys) {
    check_keys([&](std::string_view key) {
      for (std::string_view k : keys) {
        if (k == key) return std::string();
      }
      return unknown_field(key);
    });
  }

  // Reads `key` with `convert` (one of the to_* readers) into `out`. An absent
  // optional key leaves `out` unchanged; returns whether `out` was set.
  template <class T, class Convert>
  bool read(std::string_view key, T& out, Convert convert, bool required = false) {
    if (!ok()) return false;
    const Json* value = find(key);
    if (value == nullptr) {
      if (required) fail(missing_field(key));
      return false;
    }
    auto converted = convert(*value, path(key));
    if (!converted) {
      fail(converted.error());
      return false;
    }
    out = std::move(*converted);
    return true;
  }

  template <class T, class Convert>
  bool require(std::string_view key, T& out, Convert convert) {
    return read(key, out, convert, true);
  }

  Error missing_field(std::string_view key) const {
    return Error{"missing required field '" + std::string(key) + "'", path(key)};
  }
  static std::string unknown_field(std::string_view key) {
    return "unknown field " + quoted_text(key);
  }

 private:
  const Json& object_;
  std::string where_;
  std::optional<Error> error_;
};

// ---- Documents (json_util.cpp) ---------------------------------------------------

// Parses JSON text without exceptions, in time linear in its size (objects
// keep their key order; json_util.cpp says how). Checks the size
// (kMaxDocumentBytes) and nesting depth (kMaxJsonDepth) first; rejects
// duplicate keys ("duplicate field 'units'" at the key's path). Syntax errors
// keep the parser's position: "parse error at line 3, column 5: ...". Every
// JSON input of the library, the CLI and the module comes through here.
Result<Json> parse_document(std::string_view text);

// 2-space indented text; an array or object that fits on its line (100
// columns) is written inline, as in the examples of core/docs/graph-format.md.
std::string dump_pretty(const Json& value);

}  // namespace pase::json_detail
