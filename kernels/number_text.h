// Exact text for numbers of every dtype: the printer writes the shortest decimal that reads
// back to the same value (std::to_chars), the parser reads it back (std::from_chars).
// Floats also print as inf, -inf, nan, -nan; bools as true/false.
#pragma once
#include <charconv>
#include <cstring>
#include <string>

#include "absl/strings/string_view.h"
#include "kernels/dtype.h"

namespace pijit {

template <typename T>
void AppendNumber(std::string* out, T v) {
  if constexpr (std::is_same_v<T, bool>) {
    out->append(v ? "true" : "false");
  } else if constexpr (kIsHalf<T>) {
    AppendNumber(out, static_cast<float>(v));  // exact in float32, so it reads back exactly
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out->append(buf, r.ptr);
  }
}

// Writes the element at `p` (of dtype `dt`).
inline void AppendElement(std::string* out, DType dt, const void* p) {
  DispatchDType(dt, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p, sizeof(T));
    AppendNumber(out, v);
  });
}

// Parses all of `text` as a T. False on any leftover character or a value out of range.
template <typename T>
bool ParseNumber(absl::string_view text, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (text == "true") return *out = true, true;
    if (text == "false") return *out = false, true;
    return false;
  } else if constexpr (kIsHalf<T>) {
    float f;
    if (!ParseNumber(text, &f)) return false;
    *out = T(f);
    return true;
  } else {
    const char* b = text.data();
    const char* e = b + text.size();
    if (b != e && *b == '+') return false;
    auto r = std::from_chars(b, e, *out);
    return r.ec == std::errc() && r.ptr == e;
  }
}

// Parses `text` as an element of dtype `dt` into `p`.
inline bool ParseElement(absl::string_view text, DType dt, void* p) {
  return DispatchDType(dt, [&](auto tag) {
    using T = decltype(tag);
    T v{};
    if (!ParseNumber(text, &v)) return false;
    std::memcpy(p, &v, sizeof(T));
    return true;
  });
}

}  // namespace pijit
