#include "pimopt/core/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "pimopt/core/error.h"

namespace pimopt {
namespace {

// Live temporaries, readable from a signal handler: fixed slots, each published by its `live` flag after its path
// is in place.
struct TempSlot {
  std::atomic<bool> taken{false};
  std::atomic<bool> live{false};
  char path[4096];
};
constexpr int kTempSlots = 64;
TempSlot g_temps[kTempSlots];

int RegisterTemp(const std::string& path) {
  if (path.size() >= sizeof(TempSlot::path)) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    bool expected = false;
    if (g_temps[i].taken.compare_exchange_strong(expected, true)) {
      std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
      g_temps[i].live.store(true);
      return i;
    }
  }
  return -1;  // more than kTempSlots at once: still removed on errors, only not on signals
}

void UnregisterTemp(int slot) {
  if (slot < 0) return;
  g_temps[slot].live.store(false);
  g_temps[slot].taken.store(false);
}

// Who owns the live temporaries right now: nobody (kIdle), a batch renaming its files into place (kRenaming), or the
// signal handler removing them (kCleaning). A signal that arrives while a batch renames is deferred until the
// renames are done, so that one command's outputs are all replaced or none is, whatever the moment of the signal.
enum SignalState : int { kIdle = 0, kRenaming = 1, kCleaning = 2 };
std::atomic<int> g_signal_state{kIdle};
std::atomic<int> g_deferred_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

void RemoveTempsAndReraise(int sig) {
  int expected = kIdle;
  if (!g_signal_state.compare_exchange_strong(expected, kCleaning)) {
    if (expected == kRenaming) g_deferred_signal.store(sig);  // raised again when the batch's renames are done
    return;  // kCleaning: another thread is already ending the process
  }
  for (TempSlot& t : g_temps) {
    if (t.live.load()) ::unlink(t.path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Holds kRenaming for a batch's renames; raises a signal that arrived meanwhile when they are done.
class RenameWindow {
 public:
  RenameWindow() {
    int expected = kIdle;
    while (!g_signal_state.compare_exchange_weak(expected, kRenaming)) {
      expected = kIdle;  // the handler runs on another thread and ends the process
      std::this_thread::yield();
    }
  }
  ~RenameWindow() {
    g_signal_state.store(kIdle);
    if (const int sig = g_deferred_signal.exchange(0); sig != 0) ::raise(sig);
  }
  RenameWindow(const RenameWindow&) = delete;
  RenameWindow& operator=(const RenameWindow&) = delete;
};

thread_local OutputBatch* g_batch = nullptr;

// Forces a written temporary to the disk before it replaces its target, so that even a power cut leaves the old
// file or the complete new one (a rename can reach the disk before the data it names).
bool SyncToDisk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0 || errno == EINVAL;  // EINVAL: a file system without fsync
  ::close(fd);
  return ok;
}

// Removed before it is unregistered: a signal in between finds the path registered and unlinks nothing (or it).
void RemoveTemp(const std::string& temp, int slot) {
  std::remove(temp.c_str());
  UnregisterTemp(slot);
}

// Removes "<path>.tmp.<pid>" files that a process which no longer exists left beside `path` (a SIGKILL, a power
// cut: nothing could clean up). A live writer's temporary, this process's included, is left alone.
void RemoveStaleTemps(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string prefix = target.filename().string() + ".tmp.";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, bool binary) : path_(std::move(path)) {
  std::error_code ec;
  const std::filesystem::path target(path_);
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(target, ec))) {
    const auto resolved = std::filesystem::weakly_canonical(target, ec);
    if (!ec) path_ = resolved.string();
  }
  struct stat st;
  const bool write_through = ::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode);
  if (!write_through) {
    RemoveStaleTemps(path_);
    temp_path_ = StrCat(path_, ".tmp.", ::getpid());
  }
  const std::string& open_path = write_through ? path_ : temp_path_;
  // Registered before it exists: a signal between creating the temporary and registering it would leave it behind.
  if (!temp_path_.empty()) temp_slot_ = RegisterTemp(temp_path_);
  out_.open(open_path, binary ? std::ios::out | std::ios::binary | std::ios::trunc : std::ios::out | std::ios::trunc);
  if (!out_) {
    const int err = errno;
    if (!temp_path_.empty()) RemoveTemp(temp_path_, temp_slot_);
    throw InputError(StrCat(path_, ": cannot create file: ", std::strerror(err)));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) {
    out_.close();
    if (!temp_path_.empty()) RemoveTemp(temp_path_, temp_slot_);
  }
}

void AtomicFileWriter::Commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail() || (!temp_path_.empty() && !SyncToDisk(temp_path_))) {
    throw InputError(StrCat(path_, ": write failed (disk full or I/O error)"));
  }
  if (temp_path_.empty()) {  // written through
    committed_ = true;
    return;
  }
  if (g_batch != nullptr) {  // the batch renames (or removes) it
    g_batch->pending_.push_back({temp_path_, path_, temp_slot_});
    committed_ = true;
    return;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw InputError(StrCat(path_, ": cannot rename temporary file into place: ", std::strerror(errno)));
  }
  UnregisterTemp(temp_slot_);
  committed_ = true;
}

OutputBatch::OutputBatch() {
  PIMOPT_CHECK(g_batch == nullptr, "output batches do not nest");
  g_batch = this;
}

OutputBatch::~OutputBatch() {
  if (g_batch == this) g_batch = nullptr;
  if (!committed_) {
    for (const PendingRename& p : pending_) RemoveTemp(p.temp, p.slot);
  }
}

void OutputBatch::Commit() {
  g_batch = nullptr;
  committed_ = true;
  RenameWindow window;  // a signal now waits for the last rename
  for (size_t i = 0; i < pending_.size(); ++i) {
    const PendingRename& p = pending_[i];
    if (std::rename(p.temp.c_str(), p.target.c_str()) != 0) {
      const int err = errno;
      for (size_t j = i; j < pending_.size(); ++j) RemoveTemp(pending_[j].temp, pending_[j].slot);
      throw InputError(StrCat(p.target, ": cannot rename temporary file into place: ", std::strerror(err)));
    }
    UnregisterTemp(p.slot);
  }
}

void InstallTempFileCleanup() {
  struct sigaction action {};
  action.sa_handler = RemoveTempsAndReraise;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    // A signal the parent ignores stays ignored (nohup, SIGINT in a shell's background job): the run must survive it.
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &action, nullptr);
  }
}

}  // namespace pimopt
