// An allocator that leaves new elements of a trivial type uninitialised
// (resize() without zeroing), for the large buffers that their users write
// in full before reading: the search's tables and pair matrices. Besides the
// zeroing, it moves the first touch of their pages, and so the page faults,
// to the threads that fill them.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace pase {

template <class T>
struct Uninitialised : std::allocator<T> {
  static_assert(std::is_trivially_default_constructible_v<T>);
  using std::allocator<T>::allocator;
  template <class U>
  struct rebind {
    using other = Uninitialised<U>;
  };
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    if constexpr (sizeof...(A) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

// A buffer whose resize() leaves the new elements unwritten.
template <class T>
using RawVector = std::vector<T, Uninitialised<T>>;

}  // namespace pase
