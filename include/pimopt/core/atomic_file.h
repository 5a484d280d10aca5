// Writes a file so that readers never see it half-written: data goes to a temporary file beside the target,
// which replaces the target only on Commit(). If Commit() is never reached (an error), the temporary is removed.
#pragma once

#include <fstream>
#include <string>

namespace pimopt {

class AtomicFileWriter {
 public:
  // Opens a temporary file beside `path`; throws InputError if it cannot be created.
  explicit AtomicFileWriter(std::string path, bool binary = false);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, checks for write errors and renames the temporary onto the target.
  void Commit();

 private:
  std::string path_;
  std::string temp_path_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace pimopt
