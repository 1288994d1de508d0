//===- LongLineDiagnostics.cpp - diagnostics on megabyte-long lines -------===//
#include "TrainVerify/Dialect/LongLineDiagnostics.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <mutex>
#include <vector>

using namespace mlir;

namespace {
/// Line lengths of the files diagnostics point into, read once.
struct LineLengths {
  std::mutex mutex;
  llvm::StringMap<std::vector<size_t>> lengths; // empty: unreadable

  /// The length of `line` (1-based) of `file`, or 0 if unknown.
  size_t of(StringRef file, unsigned line) {
    std::lock_guard<std::mutex> lock(mutex);
    auto [it, fresh] = lengths.try_emplace(file);
    if (fresh)
      if (auto buf = llvm::MemoryBuffer::getFile(file, /*IsText=*/true))
        measure(it->second, (*buf)->getBuffer());
    return line >= 1 && line <= it->second.size() ? it->second[line - 1] : 0;
  }
  static void measure(std::vector<size_t> &into, StringRef text) {
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i)
      if (i == text.size() || text[i] == '\n') {
        into.push_back(i - start);
        start = i + 1;
      }
  }
};

void print(Location loc, DiagnosticSeverity sev, StringRef msg) {
  llvm::raw_ostream &os = llvm::errs();
  if (auto fl = loc->findInstanceOf<FileLineColLoc>())
    os << fl.getFilename().getValue() << ":" << fl.getLine() << ":"
       << fl.getColumn() << ": ";
  os << (sev == DiagnosticSeverity::Error     ? "error: "
         : sev == DiagnosticSeverity::Warning ? "warning: "
         : sev == DiagnosticSeverity::Note    ? "note: "
                                              : "remark: ");
  if (auto n = loc->findInstanceOf<NameLoc>())
    os << "[" << n.getName().getValue() << "] ";
  os << msg << "\n";
}
} // namespace

DiagnosticEngine::HandlerID
mlir::tv::addLongLineDiagnostics(MLIRContext *ctx, StringRef name,
                                 StringRef text) {
  auto lines = std::make_shared<LineLengths>();
  if (!name.empty())
    LineLengths::measure(lines->lengths[name], text);
  return ctx->getDiagEngine().registerHandler(
      [lines](Diagnostic &d) -> LogicalResult {
        auto at = d.getLocation()->findInstanceOf<FileLineColLoc>();
        if (!at ||
            lines->of(at.getFilename().getValue(), at.getLine()) <=
                kQuotedLineLimit)
          return failure();
        print(d.getLocation(), d.getSeverity(), d.str());
        for (Diagnostic &note : d.getNotes())
          print(note.getLocation(), note.getSeverity(), note.str());
        return success();
      });
}
