//===- RunStatus.cpp - progress, verdict line, stats of a run -------------===//
//
// The stats file of an interrupted run is written from a signal handler.
// What the handler does is limited to async-signal-safe calls (lseek, write,
// ftruncate, clock_gettime, sigaction, raise) on a record rendered
// beforehand: every change of progress renders the record into the next of
// a few buffers and publishes its index atomically; the handler copies the
// published buffer to the file, with the signal's name and the elapsed time
// filled in, then hands the signal on to the handler it replaced (LLVM's,
// which removes the partial output file and re-raises) or re-raises it with
// the default action, so that the process ends with the signal's
// conventional status (decision 86).
//
//===----------------------------------------------------------------------===//
#include "TrainVerify/Transforms/RunStatus.h"
#include "TrainVerify/Transforms/Utils.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <array>
#include <atomic>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <mutex>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tv;

namespace {
using Clock = std::chrono::steady_clock;

/// A record of an interrupted run, in parts around what only the handler
/// knows: the signal's name and the elapsed time.
struct Rendered {
  std::string head, middle, tail, message;
};

struct PhaseCount {
  std::string phase;
  size_t total = 0, done = 0;
};

struct RunState {
  std::mutex mutex;
  std::vector<PhaseCount> phases; // in the order they began
  bool display = false;           // stderr is a terminal
  std::atomic<bool> lineShown{false};
  Clock::time_point lastUpdate;
  std::string statsPath;
  std::atomic<int> statsFd{-1};
  std::atomic<bool> statsFinal{false};
  bool errorSeen = false;
  int64_t startMs = 0; // toolStartTime() on CLOCK_MONOTONIC, in ms
  pid_t owner = 0;      // the process that opened the stats file
  std::array<Rendered, 4> rendered;
  std::atomic<int> published{-1};
  struct sigaction previous[2];
  bool handlersInstalled = false;
  bool ignoredAtStart[2] = {false, false};
};

/// Leaked on purpose: read by the signal handler and by an exit handler,
/// which may run after static destructors.
RunState &state() {
  static RunState *s = [] {
    auto *s = new RunState;
    s->display = llvm::sys::Process::StandardErrIsDisplayed();
    return s;
  }();
  return *s;
}

constexpr int kSignals[2] = {SIGINT, SIGTERM};

void writeAll(int fd, const char *data, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n <= 0)
      return;
    data += n;
    size -= (size_t)n;
  }
}
void writeAll(int fd, const std::string &s) { writeAll(fd, s.data(), s.size()); }
void writeAll(int fd, const char *s) { writeAll(fd, s, strlen(s)); }

/// Renders the interrupted record from the current progress (mutex held).
void renderLocked(RunState &s) {
  if (s.statsFd.load() < 0)
    return;
  std::string out;
  llvm::raw_string_ostream os(out);
  llvm::json::OStream j(os, 2);
  j.objectBegin();
  j.attribute("result", "interrupted");
  j.attribute("verdict", "interrupted");
  j.attribute("signal", "@SIGNAL@");
  j.attributeBegin("t_total_s");
  j.rawValue("@SECONDS@");
  j.attributeEnd();
  PhaseCount last = s.phases.empty() ? PhaseCount{"parse", 0, 0}
                                     : s.phases.back();
  j.attribute("phase", last.phase);
  j.attribute("phase_stages", (int64_t)last.total);
  j.attribute("phase_stages_done", (int64_t)last.done);
  j.attributeArray("phases", [&] {
    for (const PhaseCount &p : s.phases)
      j.object([&] {
        j.attribute("phase", p.phase);
        j.attribute("stages", (int64_t)p.total);
        j.attribute("stages_done", (int64_t)p.done);
      });
  });
  j.objectEnd();
  os << "\n";
  int next = (s.published.load() + 1) % (int)s.rendered.size();
  Rendered &r = s.rendered[next];
  size_t sig = out.find("@SIGNAL@"), secs = out.find("@SECONDS@");
  r.head = out.substr(0, sig);
  r.middle = out.substr(sig + 8, secs - sig - 8);
  r.tail = out.substr(secs + 9);
  r.message = llvm::formatv("tv: interrupted in {0} ({1}/{2} stages); the "
                            "stats are in {3}\n",
                            last.phase, last.done, last.total, s.statsPath)
                  .str();
  s.published.store(next);
}

/// The progress line, at most ten times a second (mutex held).
void showLocked(RunState &s, bool force) {
  Clock::time_point now = Clock::now();
  if (!force && now - s.lastUpdate < std::chrono::milliseconds(100))
    return;
  s.lastUpdate = now;
  renderLocked(s);
  if (!s.display || s.phases.empty())
    return;
  const PhaseCount &p = s.phases.back();
  llvm::errs() << "\r\033[Ktv: " << p.phase;
  if (p.total)
    llvm::errs() << " " << p.done << "/" << p.total << " stages";
  llvm::errs().flush();
  s.lineShown = true;
}

void onSignal(int sig, siginfo_t *info, void *context) {
  RunState &s = state();
  int fd = s.statsFd.load();
  int i = s.published.load();
  bool written = false;
  // A child forked to run the solver inherits the handler: the parent, which
  // receives the signal too, writes the record.
  bool owner = ::getpid() == s.owner;
  if (owner && fd >= 0 && i >= 0 && !s.statsFinal.load()) {
    const Rendered &r = s.rendered[i];
    ::lseek(fd, 0, SEEK_SET);
    writeAll(fd, r.head);
    writeAll(fd, sig == SIGINT ? "SIGINT" : "SIGTERM");
    writeAll(fd, r.middle);
    // Whole milliseconds since the tool started, as seconds.
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - s.startMs;
    char digits[32];
    int n = 0;
    if (ms < 0)
      ms = 0;
    int64_t whole = ms / 1000, frac = ms % 1000;
    do {
      digits[n++] = char('0' + whole % 10);
      whole /= 10;
    } while (whole);
    char number[40];
    int k = 0;
    while (n)
      number[k++] = digits[--n];
    number[k++] = '.';
    number[k++] = char('0' + frac / 100);
    number[k++] = char('0' + frac / 10 % 10);
    number[k++] = char('0' + frac % 10);
    writeAll(fd, number, (size_t)k);
    writeAll(fd, r.tail);
    off_t end = ::lseek(fd, 0, SEEK_CUR);
    if (end > 0)
      (void)!::ftruncate(fd, end);
    written = true;
  }
  if (owner && s.lineShown.load())
    writeAll(2, "\n");
  if (written)
    writeAll(2, s.rendered[i].message);
  // Hand the signal on to the handler this one replaced.
  struct sigaction &old = s.previous[sig == SIGINT ? 0 : 1];
  ::sigaction(sig, &old, nullptr);
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction)
      old.sa_sigaction(sig, info, context);
    return;
  }
  if (old.sa_handler == SIG_DFL)
    ::raise(sig); // delivered, with the default action, when this returns
  else if (old.sa_handler != SIG_IGN)
    old.sa_handler(sig);
}

void installHandlersLocked(RunState &s) {
  if (s.handlersInstalled)
    return;
  s.handlersInstalled = true;
  for (auto [i, sig] : llvm::enumerate(kSignals)) {
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) != 0)
      continue;
    // A signal the parent chose to ignore (nohup) stays ignored. LLVM's
    // handler, installed over it, would remove the output file and carry
    // on; so would the run.
    if (s.ignoredAtStart[i] ||
        (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN))
      continue;
    s.previous[i] = old;
    struct sigaction act = {};
    act.sa_sigaction = onSignal;
    act.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&act.sa_mask);
    ::sigaction(sig, &act, nullptr);
  }
}

std::string runningRecord() {
  return "{\n  \"result\": \"running\",\n  \"verdict\": \"running\"\n}\n";
}

/// Replaces the stats file's content (mutex held).
std::optional<std::string> replaceLocked(RunState &s, llvm::StringRef text) {
  int fd = s.statsFd.load();
  if (fd < 0)
    return std::string("the stats file is not open");
  if (::lseek(fd, 0, SEEK_SET) < 0 ||
      ::write(fd, text.data(), text.size()) != (ssize_t)text.size() ||
      ::ftruncate(fd, (off_t)text.size()) != 0)
    return std::string(strerror(errno));
  return std::nullopt;
}
} // namespace

void mlir::tv::beginPhase(StringRef phase, size_t total) {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  // A phase that began before its count was known (partition) is updated.
  if (!s.phases.empty() && s.phases.back().phase == phase &&
      !s.phases.back().done)
    s.phases.back().total = total;
  else
    s.phases.push_back({phase.str(), total, 0});
  showLocked(s, /*force=*/true);
}

void mlir::tv::advancePhase(size_t steps) {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.phases.empty())
    return;
  s.phases.back().done += steps;
  showLocked(s, /*force=*/s.phases.back().done == s.phases.back().total);
}

void mlir::tv::stepPhase(StringRef phase, llvm::function_ref<size_t()> total) {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.phases.empty() || s.phases.back().phase != phase)
    s.phases.push_back({phase.str(), total(), 0});
  ++s.phases.back().done;
  showLocked(s, /*force=*/s.phases.back().done == 1);
}

void mlir::tv::endPhase() {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.lineShown.exchange(false))
    llvm::errs() << "\r\033[K";
}

void mlir::tv::noteInitialSignals() {
  // No lock: called once, from toolStartTime()'s static initialization,
  // which may run inside a section that holds the state's mutex (the
  // plugin's first openRunStats), and that mutex is not recursive.
  RunState &s = state();
  for (auto [i, sig] : llvm::enumerate(kSignals)) {
    struct sigaction old;
    if (::sigaction(sig, nullptr, &old) == 0)
      s.ignoredAtStart[i] =
          !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN;
  }
}

std::optional<std::string> mlir::tv::openRunStats(StringRef path) {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (int old = s.statsFd.exchange(-1); old >= 0)
    ::close(old);
  s.statsPath = path.str();
  s.statsFinal = false;
  s.owner = ::getpid();
  // steady_clock is CLOCK_MONOTONIC (libstdc++ and libc++ on Linux).
  s.startMs = std::chrono::duration_cast<std::chrono::milliseconds>(
                  toolStartTime().time_since_epoch())
                  .count();
  s.published = -1;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::openFileForWrite(
          path, fd, llvm::sys::fs::CD_CreateAlways))
    return ec.message();
  s.statsFd = fd;
  if (std::optional<std::string> why = replaceLocked(s, runningRecord()))
    return why;
  renderLocked(s);
  installHandlersLocked(s);
  return std::nullopt;
}

std::optional<std::string> mlir::tv::writeRunStats(StringRef json) {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.statsFinal = true;
  return replaceLocked(s, json);
}

StringRef mlir::tv::verdictWord(int status) {
  switch (status) {
  case 0:
    return "proven";
  case 1:
    return "wrong";
  case 2:
    return "unknown";
  default:
    return "input-error";
  }
}

int mlir::tv::finishRun(LogicalResult result) {
  int status = 0;
  if (failed(result))
    status = toolVerdict() == Verdict::Wrong     ? 1
             : toolVerdict() == Verdict::Unknown ? 2
                                                 : 3;
  RunState &s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.lineShown.exchange(false))
      llvm::errs() << "\r\033[K";
    // A run that stopped before --tv-verify wrote its record.
    if (s.statsFd.load() >= 0 && !s.statsFinal.exchange(true)) {
      double total = std::chrono::duration<double>(Clock::now() -
                                                   toolStartTime())
                         .count();
      llvm::json::Object o{{"result", status == 1 ? "wrong" : "error"},
                           {"verdict", verdictWord(status)},
                           {"t_total_s", total}};
      if (!s.phases.empty()) {
        o["phase"] = s.phases.back().phase;
        o["phase_stages"] = (int64_t)s.phases.back().total;
        o["phase_stages_done"] = (int64_t)s.phases.back().done;
      }
      (void)replaceLocked(
          s, llvm::formatv("{0:2}\n", llvm::json::Value(std::move(o))).str());
    }
  }
  if (status != 0 || toolVerdict() == Verdict::Proven)
    llvm::errs() << "tv-verdict: " << verdictWord(status) << "\n";
  llvm::errs().flush();
  return status;
}

void mlir::tv::noteRunError() {
  RunState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.errorSeen = true;
}

void mlir::tv::finishRunAtExit() {
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  std::atexit([] {
    bool failed;
    {
      RunState &s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      failed = s.errorSeen;
    }
    finishRun(failure(failed));
  });
}
