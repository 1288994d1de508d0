//===- InputLimits.h - nesting and memory limits of every tool -*- C++ -*-===//
//
// Two limits that keep bad input from crashing a tool or taking the machine
// (docs/guide.md, "Limits"):
//  - MLIR text nested deeper than kMaxMlirNesting brackets is refused, with
//    the location where the limit is exceeded, before MLIR's parser (which
//    recurses once per level and overflows the stack near 10,000) reads it;
//  - one memory budget, --max-memory-mb (default: half of the machine's
//    memory, or of a lower address-space or cgroup limit), that importers
//    and passes check before an allocation that grows with a tensor's size.
//
//===----------------------------------------------------------------------===//
#ifndef TRAINVERIFY_DIALECT_INPUTLIMITS_H
#define TRAINVERIFY_DIALECT_INPUTLIMITS_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>
#include <string>

namespace llvm {
class SourceMgr;
class raw_ostream;
} // namespace llvm

namespace mlir::tv {

/// Brackets ( [ { < counted outside string literals and comments. Real
/// modules nest a few levels (every example and test input, and the
/// generated Llama-3.2-1B plan: at most 5), well inside the limit; 512
/// levels parse within the main thread's 8 MB stack.
constexpr unsigned kMaxMlirNesting = 512;

/// Where MLIR text first nests deeper than `limit`: byte offset, line and
/// column (from 1).
struct NestingExcess {
  size_t offset;
  unsigned line, column;
};
std::optional<NestingExcess>
findExcessNesting(StringRef text, unsigned limit = kMaxMlirNesting);

/// "nested deeper than 512 brackets ..." for a refusal at an excess.
std::string nestingMessage(unsigned limit = kMaxMlirNesting);

/// Checks MLIR text before a parser reads it: on excess prints
/// "FILE:LINE:COL: error: ..." to `os` (no context exists yet) and fails.
LogicalResult checkMlirNesting(StringRef text, StringRef file,
                               llvm::raw_ostream &os);
/// The same for the main buffer of `sourceMgr`, emitted in `ctx`.
LogicalResult checkMlirNesting(const llvm::SourceMgr &sourceMgr,
                               MLIRContext *ctx);
/// The same for a file a tool opens itself (e.g. a second input); a file
/// that cannot be read passes (the parser then says why).
LogicalResult checkMlirNestingOfFile(StringRef path, MLIRContext *ctx);

/// The memory budget in bytes (--max-memory-mb, else the default).
uint64_t memoryBudgetBytes();
/// The default: half of the smallest of physical memory, RLIMIT_AS,
/// RLIMIT_DATA and the cgroup's memory.max (--max-memory-mb=0 is the
/// default too).
uint64_t defaultMemoryBudgetBytes();
/// "N MB (--max-memory-mb)" for a refusal.
std::string memoryBudgetText();
/// Whether `bytes` exceeds the budget.
inline bool exceedsMemoryBudget(uint64_t bytes) {
  return bytes > memoryBudgetBytes();
}

/// Saturating arithmetic for sizes computed from untrusted shapes.
inline uint64_t satMul(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
inline uint64_t satAdd(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
/// The element count of `shape`, saturating (negative dimensions count 0).
uint64_t satElements(ArrayRef<int64_t> shape);
/// "12.3 GB", "512 MB", "more than 16 EB" for a byte count.
std::string bytesText(uint64_t bytes);

} // namespace mlir::tv

#endif
