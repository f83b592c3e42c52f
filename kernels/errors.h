// How kernel errors map to Python exceptions (the bindings translate status codes):
//   InvalidArgument -> ValueError   (shapes, axes, sizes)
//   Unimplemented   -> TypeError    (a dtype an op does not support)
//   OutOfRange      -> OverflowError (a Python integer too large for the dtype)
//   NotFound        -> IndexError
#pragma once
#include "absl/status/status.h"
#include "absl/strings/str_format.h"

#define PIJIT_RETURN_IF_ERROR(expr)          \
  do {                                       \
    absl::Status _st = (expr);               \
    if (!_st.ok()) return _st;               \
  } while (0)

#define PIJIT_CONCAT_INNER(a, b) a##b
#define PIJIT_CONCAT(a, b) PIJIT_CONCAT_INNER(a, b)
#define PIJIT_ASSIGN_OR_RETURN(lhs, expr) \
  PIJIT_ASSIGN_OR_RETURN_IMPL(PIJIT_CONCAT(_so_, __LINE__), lhs, expr)
#define PIJIT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
