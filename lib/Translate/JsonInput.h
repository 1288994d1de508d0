//===- JsonInput.h - the JSON input of an importer --------------*- C++ -*-===//
#ifndef TRAINVERIFY_TRANSLATE_JSONINPUT_H
#define TRAINVERIFY_TRANSLATE_JSONINPUT_H

#include "JsonScan.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
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
    emitError(loc) << what << ": malformed JSON: "
                   << llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  if (!parsed->getAsObject()) {
    emitError(loc) << what << ": at $: expected a JSON object";
    return std::nullopt;
  }
  return JsonInput{std::move(*parsed), file, loc};
}

} // namespace mlir::tv

#endif
