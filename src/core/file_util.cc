#include "pimopt/core/file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "pimopt/core/error.h"

namespace pimopt {

std::string ReadFileToString(const std::string& path) { return std::string(FileBytes(path).view()); }

FileBytes::FileBytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(StrCat(path, ": cannot open: ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw InputError(StrCat(path, ": cannot determine file size: ", std::strerror(error)));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(StrCat(path, ": is a directory, not a data file"));
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    // MAP_POPULATE maps the file's cached pages in one call (a page fault each costs more, in a virtual machine
    // most of all); the mapping stays valid after the descriptor is closed.
    void* mapping = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (mapping != MAP_FAILED) {
      ::close(fd);
      mapping_ = mapping;
      data_ = static_cast<const char*>(mapping);
      size_ = static_cast<size_t>(st.st_size);
      return;
    }
  }
  // Not a regular file, an empty one, or one that cannot be mapped: read it to its end.
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw InputError(StrCat(path, ": read failed: ", std::strerror(error)));
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  ::close(fd);
  copy_ = std::move(text);
  data_ = copy_.data();
  size_ = copy_.size();
}

FileBytes::~FileBytes() {
  if (mapping_ != nullptr) ::munmap(mapping_, size_);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void CheckOutputPath(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const std::filesystem::path p(path);
  const auto dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw ConfigError(flag, StrCat("directory '", dir.string(), "' of '", path, "' does not exist"));
  }
  if (std::filesystem::is_directory(p, ec)) throw ConfigError(flag, StrCat("'", path, "' is a directory"));
  if (::access(dir.c_str(), W_OK) != 0) {
    throw ConfigError(flag, StrCat("directory '", dir.string(), "' is not writable"));
  }
}

void CheckOutputIsNotInput(const std::string& path, const std::string& flag, const std::string& input,
                           const std::string& input_flag) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::is_regular_file(input, ec)) return;  // false for a missing file
  if (SameFile(path, input)) {
    throw ConfigError(flag, StrCat("'", path, "' is the file of ", input_flag, ": writing it would destroy the input"));
  }
}

bool SameFile(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) {
    const bool same = std::filesystem::equivalent(a, b, ec);
    if (!ec) return same;
  }
  const auto na = std::filesystem::weakly_canonical(a, ec);
  if (ec) return a == b;
  const auto nb = std::filesystem::weakly_canonical(b, ec);
  return ec ? a == b : na == nb;
}

uint64_t AvailableMemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return 0;
}

void RefuseDuplicates(const std::vector<std::string>& items, const std::string& flag) {
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (items[i] == items[j]) throw ConfigError(flag, StrCat("'", items[i], "' is listed twice"));
    }
  }
}

std::vector<std::string> ParseNameList(std::string_view text, const std::string& flag) {
  std::vector<std::string> names;
  if (TrimSpaces(text).empty()) return names;
  for (const std::string& part : SplitText(text, ',')) {
    names.push_back(TrimSpaces(part));
    if (names.back().empty()) throw ConfigError(flag, StrCat("'", text, "' has an empty entry"));
  }
  RefuseDuplicates(names, flag);
  return names;
}

std::string ByteSizeText(uint64_t bytes) {
  if (bytes < 1024) return StrCat(bytes, bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g %s", value, units[unit]);
  return buf;
}

std::string NameListText(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ",") + name;
  return text;
}

void CheckMemoryNeed(uint64_t bytes, const std::string& what, const std::string& flag) {
  const uint64_t available = AvailableMemoryBytes();
  if (available == 0 || bytes <= available) return;
  auto gib = [](uint64_t b) { return FormatDouble(std::round(static_cast<double>(b) / (1 << 30) * 10) / 10); };
  throw ConfigError(flag, StrCat(what, " needs ", gib(bytes), " GiB of memory; this machine has ", gib(available),
                                 " GiB available"));
}

std::string FormatFloat(float value) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

std::string FormatDouble(double value) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

std::vector<std::string> SplitText(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string TrimSpaces(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t"), e = text.find_last_not_of(" \t");
  return b == std::string_view::npos ? "" : std::string(text.substr(b, e - b + 1));
}

}  // namespace pimopt
