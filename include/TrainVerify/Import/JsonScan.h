//===- JsonScan.h - spans of JSON values without a document -----*- C++ -*-===//
//
// Large plan files (180 MB for 1,024 ranks) are not parsed into one
// llvm::json document, which holds tens of bytes per input byte: a scan finds
// the byte range of each value, and only the ranges an importer needs are
// parsed, one at a time. The scan is iterative, so deeply nested input is a
// diagnostic (its depth is reported) instead of a stack overflow.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_IMPORT_JSONSCAN_H
#define TRAINVERIFY_IMPORT_JSONSCAN_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include <algorithm>
#include <cstddef>
#include <string>

namespace mlir::tv::jsonscan {

/// The byte range [begin, end) of one JSON value.
struct Span {
  size_t begin = 0, end = 0;
  llvm::StringRef in(llvm::StringRef buf) const {
    return buf.slice(begin, end);
  }
};

/// Whether the value `v` of `s` starts with `c` (an object, an array...).
inline bool opens(llvm::StringRef s, Span v, char c) {
  return v.begin < v.end && v.begin < s.size() && s[v.begin] == c;
}

inline size_t skipSpace(llvm::StringRef s, size_t p) {
  while (p < s.size() &&
         (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' || s[p] == '\t'))
    ++p;
  return p;
}

/// The end of the string starting at the quote at `p`, or npos.
inline size_t stringEnd(llvm::StringRef s, size_t p) {
  for (++p; p < s.size(); ++p) {
    if (s[p] == '\\')
      ++p;
    else if (s[p] == '"')
      return p + 1;
  }
  return llvm::StringRef::npos;
}

/// The span of the value at `p` (after whitespace); `depth` receives its
/// nesting depth. On malformed input returns false and sets `error` (the
/// value's content is checked by the parser that reads the span).
inline bool value(llvm::StringRef s, size_t p, Span &out, unsigned &depth,
                  std::string &error) {
  p = skipSpace(s, p);
  out.begin = p;
  depth = 0;
  if (p >= s.size()) {
    error = "a value is missing at byte " + std::to_string(p);
    return false;
  }
  char c = s[p];
  if (c == '"') {
    out.end = stringEnd(s, p);
    if (out.end == llvm::StringRef::npos) {
      error = "unterminated string from byte " + std::to_string(p);
      return false;
    }
    return true;
  }
  if (c != '{' && c != '[') {
    size_t q = p;
    while (q < s.size() && s[q] != ',' && s[q] != '}' && s[q] != ']' &&
           s[q] != ' ' && s[q] != '\n' && s[q] != '\r' && s[q] != '\t')
      ++q;
    out.end = q;
    return true;
  }
  unsigned level = 0;
  for (size_t q = p; q < s.size(); ++q) {
    c = s[q];
    if (c == '"') {
      q = stringEnd(s, q);
      if (q == llvm::StringRef::npos)
        break;
      --q;
    } else if (c == '{' || c == '[') {
      depth = std::max(depth, ++level);
    } else if (c == '}' || c == ']') {
      if (--level == 0) {
        out.end = q + 1;
        return true;
      }
    }
  }
  error = "unterminated value from byte " + std::to_string(p);
  return false;
}

/// Calls fn(key, value span) for each member of the object at `obj`.
inline bool members(llvm::StringRef s, Span obj,
                    llvm::function_ref<bool(llvm::StringRef, Span)> fn,
                    std::string &error) {
  size_t p = skipSpace(s, obj.begin);
  if (p >= obj.end || s[p] != '{') {
    error = "expected an object at byte " + std::to_string(p);
    return false;
  }
  p = skipSpace(s, p + 1);
  if (p < obj.end && s[p] == '}')
    return true;
  while (p < obj.end) {
    if (s[p] != '"') {
      error = "expected a key at byte " + std::to_string(p);
      return false;
    }
    size_t k = stringEnd(s, p);
    if (k == llvm::StringRef::npos) {
      error = "unterminated key at byte " + std::to_string(p);
      return false;
    }
    llvm::StringRef key = s.slice(p + 1, k - 1);
    p = skipSpace(s, k);
    if (p >= obj.end || s[p] != ':') {
      error = "expected ':' at byte " + std::to_string(p);
      return false;
    }
    Span v;
    unsigned depth;
    if (!value(s, p + 1, v, depth, error) || !fn(key, v))
      return false;
    p = skipSpace(s, v.end);
    if (p < obj.end && s[p] == ',') {
      p = skipSpace(s, p + 1);
      continue;
    }
    if (p < obj.end && s[p] == '}')
      return true;
    error = "expected ',' or '}' at byte " + std::to_string(p);
    return false;
  }
  error = "unterminated object";
  return false;
}

/// Calls fn(index, value span) for each element of the array at `arr`.
inline bool elements(llvm::StringRef s, Span arr,
                     llvm::function_ref<bool(size_t, Span)> fn,
                     std::string &error) {
  size_t p = skipSpace(s, arr.begin);
  if (p >= arr.end || s[p] != '[') {
    error = "expected an array at byte " + std::to_string(p);
    return false;
  }
  p = skipSpace(s, p + 1);
  if (p < arr.end && s[p] == ']')
    return true;
  for (size_t i = 0; p < arr.end; ++i) {
    Span v;
    unsigned depth;
    if (!value(s, p, v, depth, error) || !fn(i, v))
      return false;
    p = skipSpace(s, v.end);
    if (p < arr.end && s[p] == ',') {
      p = skipSpace(s, p + 1);
      continue;
    }
    if (p < arr.end && s[p] == ']')
      return true;
    error = "expected ',' or ']' at byte " + std::to_string(p);
    return false;
  }
  error = "unterminated array";
  return false;
}

} // namespace mlir::tv::jsonscan

#endif
