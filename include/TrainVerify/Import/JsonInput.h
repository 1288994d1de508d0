//===- JsonInput.h - the JSON input of an importer --------------*- C++ -*-===//
#ifndef TRAINVERIFY_IMPORT_JSONINPUT_H
#define TRAINVERIFY_IMPORT_JSONINPUT_H

#include "TrainVerify/Import/JsonScan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include <optional>

namespace mlir::tv {

/// An importer's input: the main buffer parsed as a JSON object.
struct JsonInput {
  llvm::json::Value value;
  std::string file;
  Location loc;
  const llvm::json::Object &root() const { return *value.getAsObject(); }
};

/// llvm::json's parse error, "[LINE:COL, byte=OFFSET]: MESSAGE", split into
/// the byte offset and the message (the offset is that of the parsed text).
inline std::pair<std::optional<size_t>, std::string>
splitJsonError(llvm::StringRef err) {
  if (!err.consume_front("["))
    return {std::nullopt, err.str()};
  auto [where, msg] = err.split("]: ");
  size_t at = where.find("byte=");
  size_t offset;
  if (at == llvm::StringRef::npos ||
      where.drop_front(at + 5).getAsInteger(10, offset))
    return {std::nullopt, err.str()};
  return {offset, msg.str()};
}

/// The location of byte `offset` of `buffer` (line and column from 1).
inline Location jsonLocationAt(MLIRContext *ctx, llvm::StringRef file,
                               llvm::StringRef buffer, size_t offset) {
  offset = std::min(offset, buffer.size());
  llvm::StringRef before = buffer.take_front(offset);
  unsigned line = 1 + before.count('\n');
  size_t nl = before.rfind('\n');
  unsigned col = 1 + (nl == llvm::StringRef::npos ? offset : offset - nl - 1);
  return FileLineColLoc::get(ctx, file, line, col);
}

/// The byte offset of the value at JSON path `path` ("$", ".key", "[i]"
/// steps) in `s`, or of the deepest prefix of the path that exists.
inline size_t jsonPathOffset(llvm::StringRef s, llvm::StringRef path) {
  jsonscan::Span cur;
  unsigned depth = 0;
  std::string err;
  if (!jsonscan::value(s, 0, cur, depth, err))
    return 0;
  path.consume_front("$");
  while (!path.empty()) {
    bool found = false;
    jsonscan::Span next;
    if (path.consume_front(".")) {
      size_t end = path.find_first_of(".[");
      llvm::StringRef key = path.take_front(end);
      path = path.drop_front(key.size());
      jsonscan::members(
          s, cur,
          [&](llvm::StringRef k, jsonscan::Span v) {
            if (k != key)
              return true;
            next = v, found = true;
            return false;
          },
          err);
    } else if (path.consume_front("[")) {
      size_t close = path.find(']');
      size_t index;
      if (close == llvm::StringRef::npos ||
          path.take_front(close).getAsInteger(10, index))
        break;
      path = path.drop_front(close + 1);
      jsonscan::elements(
          s, cur,
          [&](size_t i, jsonscan::Span v) {
            if (i != index)
              return true;
            next = v, found = true;
            return false;
          },
          err);
    } else {
      break;
    }
    if (!found)
      break;
    cur = next;
  }
  return jsonscan::skipSpace(s, cur.begin);
}

/// The first key that an object of the value at `v` holds twice (llvm::json
/// keeps one of them silently): its byte offset and name.
inline std::optional<std::pair<size_t, std::string>>
duplicateKey(llvm::StringRef s, jsonscan::Span v) {
  size_t p = jsonscan::skipSpace(s, v.begin);
  if (p >= v.end || (s[p] != '{' && s[p] != '['))
    return std::nullopt;
  std::optional<std::pair<size_t, std::string>> found;
  std::string err;
  if (s[p] == '{') {
    llvm::StringSet<> seen;
    jsonscan::members(
        s, v,
        [&](llvm::StringRef key, jsonscan::Span member) {
          if (!seen.insert(key).second) {
            found = {size_t(key.data() - s.data()) - 1, key.str()};
            return false;
          }
          found = duplicateKey(s, member);
          return !found;
        },
        err);
  } else {
    jsonscan::elements(
        s, v,
        [&](size_t, jsonscan::Span element) {
          found = duplicateKey(s, element);
          return !found;
        },
        err);
  }
  return found;
}

/// Parses the main buffer of `sourceMgr`; on failure emits
/// "<what>: malformed JSON: ..." or "<what>: at $: expected a JSON object".
inline std::optional<JsonInput> readJsonObject(llvm::SourceMgr &sourceMgr,
                                               MLIRContext *ctx,
                                               llvm::StringRef what) {
  const llvm::MemoryBuffer *buf =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  std::string file = buf->getBufferIdentifier().str();
  Location loc = FileLineColLoc::get(ctx, file, 0, 0);
  // llvm::json recurses once per level: bound the nesting first.
  constexpr unsigned maxDepth = 64;
  jsonscan::Span span;
  unsigned depth = 0;
  std::string err;
  if (jsonscan::value(buf->getBuffer(), 0, span, depth, err) &&
      depth > maxDepth) {
    emitError(loc) << what << ": JSON nested " << depth
                   << " levels deep (at most " << maxDepth << " are read)";
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(buf->getBuffer());
  if (!parsed) {
    // At the error's position, so that an editor jumps to it.
    auto [offset, msg] = splitJsonError(llvm::toString(parsed.takeError()));
    emitError(offset ? jsonLocationAt(ctx, file, buf->getBuffer(), *offset)
                     : loc)
        << what << ": malformed JSON: " << msg;
    return std::nullopt;
  }
  if (!parsed->getAsObject()) {
    emitError(loc) << what << ": at $: expected a JSON object";
    return std::nullopt;
  }
  // Bounded by the depth check above.
  if (auto dup = duplicateKey(buf->getBuffer(), span)) {
    emitError(jsonLocationAt(ctx, file, buf->getBuffer(), dup->first))
        << what << ": key '" << dup->second
        << "' appears twice in one object";
    return std::nullopt;
  }
  return JsonInput{std::move(*parsed), file, loc};
}

/// The smallest key of `o` (a deterministic choice) that is neither `modeled` nor `descriptive`. Importers refuse it by
/// name: a key they ignored could change what the input means.
inline std::optional<std::string>
unknownKey(const llvm::json::Object &o, llvm::ArrayRef<llvm::StringRef> modeled,
           llvm::ArrayRef<llvm::StringRef> descriptive = {}) {
  std::optional<std::string> first;
  for (const auto &kv : o) {
    llvm::StringRef k(kv.first);
    if (llvm::is_contained(modeled, k) || llvm::is_contained(descriptive, k))
      continue;
    if (!first || k < *first)
      first = k.str();
  }
  return first;
}

/// "keys: a, b; descriptive: c, d" for an unknown-key diagnostic.
inline std::string knownKeysText(llvm::ArrayRef<llvm::StringRef> modeled,
                                 llvm::ArrayRef<llvm::StringRef> descriptive) {
  std::string s = "keys: ";
  llvm::raw_string_ostream os(s);
  llvm::interleaveComma(modeled, os);
  if (!descriptive.empty()) {
    os << "; descriptive keys: ";
    llvm::interleaveComma(descriptive, os);
  }
  return s;
}

} // namespace mlir::tv

#endif
