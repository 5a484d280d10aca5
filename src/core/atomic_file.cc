#include "pimopt/core/atomic_file.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

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

void RemoveTempsAndReraise(int sig) {
  for (TempSlot& t : g_temps) {
    if (t.live.load()) ::unlink(t.path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

thread_local OutputBatch* g_batch = nullptr;

// The slot of each temporary this process has open, by temporary path (not signal-visible; the slots are).
int SlotOf(const std::string& temp) {
  for (int i = 0; i < kTempSlots; ++i) {
    if (g_temps[i].live.load() && temp == g_temps[i].path) return i;
  }
  return -1;
}

void RemoveTemp(const std::string& temp) {
  UnregisterTemp(SlotOf(temp));
  std::remove(temp.c_str());
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
  if (!write_through) temp_path_ = StrCat(path_, ".tmp.", ::getpid());
  const std::string& open_path = write_through ? path_ : temp_path_;
  out_.open(open_path, binary ? std::ios::out | std::ios::binary | std::ios::trunc : std::ios::out | std::ios::trunc);
  if (!out_) {
    throw InputError(StrCat(path_, ": cannot create file: ", std::strerror(errno)));
  }
  if (!temp_path_.empty()) RegisterTemp(temp_path_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) {
    out_.close();
    if (!temp_path_.empty()) RemoveTemp(temp_path_);
  }
}

void AtomicFileWriter::Commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    throw InputError(StrCat(path_, ": write failed (disk full or I/O error)"));
  }
  if (temp_path_.empty()) {  // written through
    committed_ = true;
    return;
  }
  if (g_batch != nullptr) {  // the batch renames (or removes) it
    g_batch->pending_.emplace_back(temp_path_, path_);
    committed_ = true;
    return;
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw InputError(StrCat(path_, ": cannot rename temporary file into place: ", std::strerror(errno)));
  }
  UnregisterTemp(SlotOf(temp_path_));
  committed_ = true;
}

OutputBatch::OutputBatch() {
  PIMOPT_CHECK(g_batch == nullptr, "output batches do not nest");
  g_batch = this;
}

OutputBatch::~OutputBatch() {
  if (g_batch == this) g_batch = nullptr;
  if (!committed_) {
    for (const auto& [temp, target] : pending_) RemoveTemp(temp);
  }
}

void OutputBatch::Commit() {
  g_batch = nullptr;
  committed_ = true;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto& [temp, target] = pending_[i];
    if (std::rename(temp.c_str(), target.c_str()) != 0) {
      const int err = errno;
      for (size_t j = i; j < pending_.size(); ++j) RemoveTemp(pending_[j].first);
      throw InputError(StrCat(target, ": cannot rename temporary file into place: ", std::strerror(err)));
    }
    UnregisterTemp(SlotOf(temp));
  }
}

void InstallTempFileCleanup() {
  struct sigaction action {};
  action.sa_handler = RemoveTempsAndReraise;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &action, nullptr);
}

}  // namespace pimopt
