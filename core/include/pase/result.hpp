// Result<T>: a value or an Error that says what is wrong and where.
//
// Bad input is a value, never an exception or an abort: every public function
// of pase_core that can fail on user input returns Result<T>. `Error::where`
// is a JSON-pointer-like path into the input (`layers[3].filter`, `cluster.devices`)
// or empty when the error is not tied to one field.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace pase {

struct Error {
  std::string message;  // human readable, one sentence, no trailing period needed
  std::string where;    // field path, e.g. "layers[3].filter"; may be empty

  // "where: message", or just the message when `where` is empty.
  std::string to_string() const { return where.empty() ? message : where + ": " + message; }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit on purpose

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Error> v_;
};

}  // namespace pase
