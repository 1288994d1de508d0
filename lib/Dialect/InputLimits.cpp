//===- InputLimits.cpp - nesting and memory limits of every tool ----------===//
#include "TrainVerify/Dialect/InputLimits.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sys/resource.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tv;

// Registered by the library, so that tv-opt, tv-translate and the plugin
// (in the host's mlir-opt) all take it.
static llvm::cl::opt<unsigned> maxMemoryMb(
    "max-memory-mb",
    llvm::cl::desc("Memory budget in MB of every tv importer and pass "
                   "(default: half of the machine's memory, or of a lower "
                   "ulimit -v or cgroup limit); an input that needs more is "
                   "refused by name before the allocation, exit 3"),
    llvm::cl::init(0));

std::optional<NestingExcess> mlir::tv::findExcessNesting(StringRef s,
                                                         unsigned limit) {
  unsigned depth = 0, line = 1;
  size_t lineStart = 0;
  for (size_t i = 0, e = s.size(); i < e; ++i) {
    char c = s[i];
    switch (c) {
    case '\n':
      ++line;
      lineStart = i + 1;
      break;
    case '"': // a string literal, with escapes; it may not span lines
      for (++i; i < e && s[i] != '"' && s[i] != '\n'; ++i)
        if (s[i] == '\\')
          ++i;
      if (i < e && s[i] == '\n')
        --i; // let the newline count its line
      break;
    case '/':
      if (i + 1 < e && s[i + 1] == '/') { // a comment, to the line's end
        size_t nl = s.find('\n', i);
        i = (nl == StringRef::npos ? e : nl) - 1;
      }
      break;
    case '(':
    case '[':
    case '{':
    case '<':
      // `<=` is an operator, not a bracket (affine sets and maps).
      if (c == '<' && i + 1 < e && s[i + 1] == '=')
        break;
      if (++depth > limit)
        return NestingExcess{i, line, unsigned(i - lineStart + 1)};
      break;
    case ')':
    case ']':
    case '}':
    case '>':
      // `->` and `>=` are operators; an unmatched closer only lowers the
      // count, which never refuses good input.
      if (c == '>' && ((i > 0 && s[i - 1] == '-') ||
                       (i + 1 < e && s[i + 1] == '=')))
        break;
      if (depth)
        --depth;
      break;
    default:
      break;
    }
  }
  return std::nullopt;
}

/// The position of the first `dimensions = [...]` / `permutation = [...]`
/// list that is not integers: MLIR 22.1.8's parser of linalg.reduce,
/// linalg.broadcast and linalg.transpose dereferences a null attribute on
/// such a list and crashes (an upstream defect, found by tv's fuzzer), so
/// tv refuses it before parsing.
static std::optional<size_t> findUnparsableIndexList(StringRef s) {
  for (StringRef key : {"dimensions", "permutation"}) {
    for (size_t at = s.find(key); at != StringRef::npos;
         at = s.find(key, at + 1)) {
      // Not in a line comment.
      size_t lineStart = s.rfind('\n', at);
      if (s.slice(lineStart == StringRef::npos ? 0 : lineStart, at)
              .contains("//"))
        continue;
      size_t i = at + key.size();
      auto skip = [&] {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n'))
          ++i;
      };
      skip();
      if (i >= s.size() || s[i] != '=')
        continue;
      ++i;
      skip();
      if (i >= s.size() || s[i] != '[')
        continue;
      for (++i; i < s.size() && s[i] != ']'; ++i)
        if (!llvm::isDigit(s[i]) && !StringRef(" \t\n,-").contains(s[i]))
          return i;
    }
  }
  return std::nullopt;
}

static std::pair<unsigned, unsigned> lineAndColumn(StringRef text,
                                                   size_t at) {
  StringRef before = text.take_front(at);
  size_t lineStart = before.rfind('\n');
  return {unsigned(before.count('\n') + 1),
          unsigned(at - (lineStart == StringRef::npos ? 0 : lineStart + 1) +
                   1)};
}

static const char *unparsableIndexListMessage() {
  return "a 'dimensions' or 'permutation' list that is not integers (MLIR "
         "22.1.8's linalg parser crashes on it; refused before parsing)";
}

std::string mlir::tv::nestingMessage(unsigned limit) {
  return "MLIR text nested deeper than " + std::to_string(limit) +
         " brackets ( [ { < here; tv reads at most " + std::to_string(limit) +
         " levels (MLIR's parser recurses once per level)";
}

LogicalResult mlir::tv::checkMlirNesting(StringRef text, StringRef file,
                                         llvm::raw_ostream &os) {
  if (std::optional<size_t> bad = findUnparsableIndexList(text)) {
    auto [line, col] = lineAndColumn(text, *bad);
    os << file << ":" << line << ":" << col << ": error: "
       << unparsableIndexListMessage() << "\n";
    os.flush();
    return failure();
  }
  std::optional<NestingExcess> x = findExcessNesting(text);
  if (!x)
    return success();
  os << file << ":" << x->line << ":" << x->column
     << ": error: " << nestingMessage() << "\n";
  os.flush();
  return failure();
}

static LogicalResult checkNestingIn(StringRef text, StringRef file,
                                    MLIRContext *ctx) {
  if (std::optional<size_t> bad = findUnparsableIndexList(text)) {
    auto [line, col] = lineAndColumn(text, *bad);
    emitError(FileLineColLoc::get(ctx, file, line, col))
        << unparsableIndexListMessage();
    return failure();
  }
  std::optional<NestingExcess> x = findExcessNesting(text);
  if (!x)
    return success();
  emitError(FileLineColLoc::get(ctx, file, x->line, x->column))
      << nestingMessage();
  return failure();
}

LogicalResult mlir::tv::checkMlirNesting(const llvm::SourceMgr &sourceMgr,
                                         MLIRContext *ctx) {
  const llvm::MemoryBuffer *buf =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  return checkNestingIn(buf->getBuffer(), buf->getBufferIdentifier(), ctx);
}

LogicalResult mlir::tv::checkMlirNestingOfFile(StringRef path,
                                               MLIRContext *ctx) {
  auto buf = llvm::MemoryBuffer::getFileOrSTDIN(path);
  if (!buf)
    return success();
  return checkNestingIn((*buf)->getBuffer(), path, ctx);
}

/// The cgroup (v2, else v1) memory limit of this process, if any.
static std::optional<uint64_t> cgroupLimit() {
  for (const char *path : {"/sys/fs/cgroup/memory.max",
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(path);
    std::string s;
    if (!(in >> s) || s == "max")
      continue;
    uint64_t v;
    if (!StringRef(s).getAsInteger(10, v) && v > 0)
      return v;
  }
  return std::nullopt;
}

namespace {
struct DefaultBudget {
  uint64_t bytes;
  const char *source; // what it is half of
};
} // namespace

static const DefaultBudget &defaultBudget() {
  static DefaultBudget cached = [] {
    uint64_t m = UINT64_MAX;
    const char *source = "this machine's memory";
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0)
      m = satMul(uint64_t(pages), uint64_t(page));
    for (int res : {RLIMIT_AS, RLIMIT_DATA}) {
      struct rlimit r;
      if (getrlimit(res, &r) == 0 && r.rlim_cur != RLIM_INFINITY &&
          r.rlim_cur < m) {
        m = r.rlim_cur;
        source = res == RLIMIT_AS ? "the address-space limit (ulimit -v)"
                                  : "the data-size limit (ulimit -d)";
      }
    }
    if (std::optional<uint64_t> c = cgroupLimit(); c && *c < m) {
      m = *c;
      source = "the cgroup's memory limit";
    }
    if (m == UINT64_MAX) {
      m = uint64_t(8) << 30; // nothing known: assume a small machine
      source = "an assumed 8 GB";
    }
    return DefaultBudget{std::max<uint64_t>(m / 2, uint64_t(64) << 20),
                         source};
  }();
  return cached;
}

uint64_t mlir::tv::defaultMemoryBudgetBytes() { return defaultBudget().bytes; }

uint64_t mlir::tv::memoryBudgetBytes() {
  if (maxMemoryMb.getNumOccurrences() && maxMemoryMb > 0)
    return uint64_t(maxMemoryMb) << 20;
  return defaultMemoryBudgetBytes();
}

std::string mlir::tv::memoryBudgetText() {
  std::string s = std::to_string(memoryBudgetBytes() >> 20) + " MB";
  if (maxMemoryMb.getNumOccurrences() && maxMemoryMb > 0)
    return s + " (--max-memory-mb)";
  return s + " (half of " + defaultBudget().source +
         "; --max-memory-mb=N sets it)";
}

uint64_t mlir::tv::satElements(ArrayRef<int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n = satMul(n, d < 0 ? 0 : uint64_t(d));
  return n;
}

std::string mlir::tv::bytesText(uint64_t bytes) {
  if (bytes == UINT64_MAX)
    return "more than 16 EB";
  const char *units[] = {"bytes", "KB", "MB", "GB", "TB", "PB", "EB"};
  double v = double(bytes);
  unsigned u = 0;
  while (v >= 1024 && u + 1 < std::size(units))
    v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    snprintf(buf, sizeof buf, "%llu bytes", (unsigned long long)bytes);
  else
    snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}
