// Small file, text and number-formatting helpers shared by the readers and writers of every module.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pimopt {

// Reads a whole file into a string (FileBytes' bytes, copied); throws InputError naming the path if it cannot be
// opened or read.
std::string ReadFileToString(const std::string& path);

// A whole file's bytes, read-only, for a reader that parses them once (the data files). A regular file is mapped
// into memory, not copied: a 335 MB LIBSVM file is in view in 0.16 s where reading it into a string took 1.27 s
// (docs/formats.md "Reading a file"). Anything else (a pipe, /dev/stdin) is read into memory. Throws InputError
// naming the path when it cannot be opened or read, or is a directory. The file must not shrink while it is in view (a file truncated by
// another process under a mapping is the one case not caught: the kernel ends the process, SIGBUS).
class FileBytes {
 public:
  explicit FileBytes(const std::string& path);
  ~FileBytes();
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  std::string_view view() const { return {data_, size_}; }

 private:
  const char* data_ = "";
  size_t size_ = 0;
  void* mapping_ = nullptr;  // munmap'd on destruction; null when the bytes are in copy_
  std::string copy_;
};
bool FileExists(const std::string& path);
// Fails early (before any work) when an output file could not be written at the end: throws ConfigError naming
// `flag` when the directory does not exist or is not writable, or the path is a directory. Empty: no output.
void CheckOutputPath(const std::string& path, const std::string& flag);
// Throws ConfigError naming `flag` when the output `path` is the existing file of the input `input_flag`: writing
// it would destroy the input (the same file by any path; a device such as /dev/null may be both).
void CheckOutputIsNotInput(const std::string& path, const std::string& flag, const std::string& input,
                           const std::string& input_flag);
// Formats a float so that parsing it back gives the same float (shortest form).
std::string FormatFloat(float value);
std::string FormatDouble(double value);
// Whether two paths name the same file: one existing file (through links, ./, ..), or the same path once
// normalized when either does not exist yet.
bool SameFile(const std::string& a, const std::string& b);
// The memory the machine can still give this process (MemAvailable of /proc/meminfo), in bytes; 0 when unknown.
uint64_t AvailableMemoryBytes();
// Throws ConfigError naming `flag` when `bytes` (what `what` needs) exceed AvailableMemoryBytes(): refused before
// the allocation instead of ending in the kernel's out-of-memory killer.
void CheckMemoryNeed(uint64_t bytes, const std::string& what, const std::string& flag);
// ConfigError naming `flag` when a name appears twice in `items` (a list a user gave: each entry would run twice).
void RefuseDuplicates(const std::vector<std::string>& items, const std::string& flag);
// A comma list a user gave ("a, b,c"): the entries trimmed; ConfigError naming `flag` for an empty entry or one
// listed twice. "" is the empty list.
std::vector<std::string> ParseNameList(std::string_view text, const std::string& flag);
// A size for people: "512 bytes", "39.6 KiB", "64 MiB", "1.5 GiB" (3 significant digits).
std::string ByteSizeText(uint64_t bytes);
// The list as ParseNameList reads it: "a,b,c".
std::string NameListText(const std::vector<std::string>& names);
// The parts of `text` between separators, empty ones included ("a,,b" -> a, "", b; "" -> one empty part).
std::vector<std::string> SplitText(std::string_view text, char separator);
// `text` without leading and trailing spaces and tabs.
std::string TrimSpaces(std::string_view text);

}  // namespace pimopt
