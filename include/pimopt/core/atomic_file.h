// Writes a file so that readers never see it half-written: data goes to a temporary file beside the target,
// which replaces the target only on Commit(). If Commit() is never reached (an error), the temporary is removed.
//
// - A target that exists and is not a regular file (a character device such as /dev/null, a FIFO) is written
//   through directly: replacing it by a regular file would destroy the device node.
// - A target that is a symbolic link keeps the link: the file it points to is replaced.
// - Within an OutputBatch (one command's outputs), Commit() checks the write and defers the rename: the batch
//   renames every file after all of them were written, and removes every temporary if it is destroyed without
//   Commit() - a command that fails on its second output leaves none of them.
// - InstallTempFileCleanup() (the CLI calls it) removes live temporaries when SIGTERM, SIGINT or SIGHUP arrives,
//   then ends the process with that signal. A signal that arrives while a batch renames its files waits until the
//   last rename, so the batch's targets are all replaced or none is. Signals the process inherited as ignored
//   (nohup) stay ignored.
#pragma once

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace pimopt {

class AtomicFileWriter {
 public:
  // Opens a temporary file beside `path` (or `path` itself when it is no regular file); throws InputError if it
  // cannot be created.
  explicit AtomicFileWriter(std::string path, bool binary = false);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, checks for write errors and renames the temporary onto the target (within an OutputBatch: hands the
  // rename to the batch).
  void Commit();

 private:
  std::string path_;       // the target (a symbolic link resolved)
  std::string temp_path_;  // "" when writing through
  int temp_slot_ = -1;     // its entry in the table the signal handler cleans up (-1: none)
  std::ofstream out_;
  bool committed_ = false;
};

// The outputs of one command, committed together (see above). Batches do not nest; one per thread at a time.
class OutputBatch {
 public:
  OutputBatch();
  ~OutputBatch();  // removes the temporaries of an uncommitted batch
  OutputBatch(const OutputBatch&) = delete;
  OutputBatch& operator=(const OutputBatch&) = delete;
  // Renames every written temporary onto its target, in the order they were written.
  void Commit();

 private:
  friend class AtomicFileWriter;
  struct PendingRename {
    std::string temp, target;
    int slot;  // the temporary's entry in the signal handler's table
  };
  std::vector<PendingRename> pending_;
  bool committed_ = false;
};

void InstallTempFileCleanup();

}  // namespace pimopt
