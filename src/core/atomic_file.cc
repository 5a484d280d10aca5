#include "pimopt/core/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "pimopt/core/error.h"

namespace pimopt {

AtomicFileWriter::AtomicFileWriter(std::string path, bool binary)
    : path_(std::move(path)), temp_path_(StrCat(path_, ".tmp.", ::getpid())) {
  out_.open(temp_path_, binary ? std::ios::out | std::ios::binary | std::ios::trunc : std::ios::out | std::ios::trunc);
  if (!out_) {
    throw InputError(StrCat(path_, ": cannot create file: ", std::strerror(errno)));
  }
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) {
    out_.close();
    std::remove(temp_path_.c_str());
  }
}

void AtomicFileWriter::Commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    throw InputError(StrCat(path_, ": write failed (disk full or I/O error)"));
  }
  if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    throw InputError(StrCat(path_, ": cannot rename temporary file into place: ", std::strerror(errno)));
  }
  committed_ = true;
}

}  // namespace pimopt
