//===- StageSolve.cpp - the solver loop in a child process ----------------===//
//
// The solver loop of a stage runs in a forked child that sends its outcome
// (verdict, reason, model) back through a pipe as text: a query that runs
// past Z3's own timeout is killed, and a crash of Z3 ends only the child;
// either leaves the stage unknown, and so does running out of the memory
// the child is given (the stage's budget).
//
//===----------------------------------------------------------------------===//
#include "StageRun.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tv;
using namespace mlir::tv::stagecheck;

namespace {

std::string serialize(const SolverOutcome &o) {
  auto line = [](std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s + "\n";
  };
  std::string out = std::to_string((int)o.verdict) + "\n" + line(o.reason) +
                    line(o.error) + std::to_string(o.model.size()) + "\n";
  char buf[40];
  for (double v : o.model) {
    snprintf(buf, sizeof(buf), "%.17g\n", v);
    out += buf;
  }
  return out + "end\n";
}

std::optional<SolverOutcome> deserialize(const std::string &text) {
  SmallVector<StringRef> lines;
  StringRef(text).split(lines, '\n');
  if (lines.size() < 5)
    return std::nullopt;
  SolverOutcome o;
  int v;
  size_t n;
  if (lines[0].getAsInteger(10, v) || lines[3].getAsInteger(10, n) ||
      lines.size() < 5 + n || lines[4 + n] != "end")
    return std::nullopt;
  o.verdict = (z3::check_result)v;
  o.reason = lines[1].str();
  o.error = lines[2].str();
  for (size_t i = 0; i < n; ++i)
    o.model.push_back(std::strtod(lines[4 + i].str().c_str(), nullptr));
  return o;
}

} // namespace

/// The child's address space: what it shares with the parent at the fork
/// plus `bytes` of its own (Z3's allocations fail beyond it, and the child
/// ends: unknown, not the machine out of memory).
static void limitChildMemory(uint64_t bytes) {
  if (!bytes)
    return;
  uint64_t pages = 0;
  if (FILE *f = fopen("/proc/self/statm", "r")) {
    unsigned long long size = 0;
    if (fscanf(f, "%llu", &size) == 1)
      pages = size;
    fclose(f);
  }
  uint64_t limit = pages * (uint64_t)sysconf(_SC_PAGESIZE) + bytes;
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 &&
      (rl.rlim_max == RLIM_INFINITY || limit < rl.rlim_max)) {
    rl.rlim_cur = limit;
    setrlimit(RLIMIT_AS, &rl);
  }
  // Z3's own bound answers unknown ("max. memory exceeded") before the
  // limit makes an allocation fail.
  z3::set_param("memory_max_size",
                std::to_string(std::max<uint64_t>(64, (bytes >> 20) * 9 / 10))
                    .c_str());
}

SolverOutcome mlir::tv::stagecheck::solveIsolated(
    unsigned ms, uint64_t memoryBytes,
    llvm::function_ref<SolverOutcome()> solve) {
#if defined(__SANITIZE_ADDRESS__)
  // GCC 12's AddressSanitizer runtime is not fork-safe while another
  // verification thread allocates: the child could wait forever on the
  // allocator's lock and the query came out "timeout" after the stage's
  // budget (NnScaler/demo.test under scripts/sanitize.sh, one run in
  // three). The sanitizer build solves in-process; Z3's own timeout still
  // bounds the query.
  return solve();
#endif
  int fds[2];
  if (pipe(fds) != 0)
    return solve();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return solve();
  }
  if (pid == 0) {
    close(fds[0]);
    limitChildMemory(memoryBytes);
    std::string msg = serialize(solve());
    for (size_t off = 0; off < msg.size();) {
      ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0)
        break;
      off += w;
    }
    _exit(0);
  }
  close(fds[1]);
  // The child's own timeout ends most queries; the grace covers reading the
  // model before it is killed.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds((int64_t)ms + 2000);
  std::string text;
  bool killed = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    struct pollfd pfd = {fds[0], POLLIN, 0};
    int r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    text.append(buf, n);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  SolverOutcome o;
  if (killed) {
    o.reason = "timeout";
    return o;
  }
  if (std::optional<SolverOutcome> got = deserialize(text))
    return *got;
  o.reason = WIFSIGNALED(status)
                 ? "the solver process died (signal " +
                       std::to_string(WTERMSIG(status)) + ")"
                 : "the solver process ended without an answer";
  return o;
}
