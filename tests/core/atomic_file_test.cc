#include "pimopt/core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>

#include "pimopt/core/error.h"
#include "test_util.h"

namespace pimopt {
namespace {

using testing::TempDir;

TEST(AtomicFileWriter, CommitReplacesTargetAndLeavesNoTemporary) {
  TempDir dir;
  const std::string path = dir.Path("out.txt");
  testing::WriteText(path, "old");
  {
    AtomicFileWriter w(path);
    w.stream() << "new";
    EXPECT_EQ(testing::ReadText(path), "old");  // not visible before commit
    w.Commit();
  }
  EXPECT_EQ(testing::ReadText(path), "new");
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
}

TEST(AtomicFileWriter, RemovesTheTemporaryOfADeadWriterButNotOfALiveOne) {
  TempDir dir;
  const std::string path = dir.Path("run.ckpt");
  // A writer killed with SIGKILL leaves its temporary: a child that exits at once stands for it.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = path + ".tmp." + std::to_string(dead);
  const std::string live = path + ".tmp." + std::to_string(::getppid());  // a process that exists
  const std::string other = dir.Path("other.ckpt.tmp.") + std::to_string(dead);  // another target's
  for (const std::string& f : {stale, live, other}) testing::WriteText(f, "half");
  {
    AtomicFileWriter w(path);
    w.stream() << "new";
    w.Commit();
  }
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(testing::ReadText(path), "new");
}

TEST(AtomicFileWriter, AbandonedWriteLeavesTargetUntouched) {
  TempDir dir;
  const std::string path = dir.Path("out.txt");
  testing::WriteText(path, "old");
  {
    AtomicFileWriter w(path);
    w.stream() << "half";
  }
  EXPECT_EQ(testing::ReadText(path), "old");
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
}

TEST(AtomicFileWriter, UncreatableFileIsAnInputErrorNamingThePath) {
  try {
    AtomicFileWriter w("/nonexistent_dir_pimopt/x.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir_pimopt/x.txt"), std::string::npos);
  }
}

// An existing target that is no regular file is written through, never replaced by a regular file (as root a
// rename onto /dev/null would destroy the device node).
TEST(AtomicFileWriter, WritesThroughACharacterDevice) {
  {
    AtomicFileWriter w("/dev/null");
    w.stream() << "discarded";
    w.Commit();
  }
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  // /dev/full: the write fails at commit, as a full disk does.
  AtomicFileWriter full("/dev/full");
  full.stream() << std::string(1 << 16, 'x');
  EXPECT_THROW(full.Commit(), InputError);
}

// A symbolic link stays a link: the file it points to gets the new content.
TEST(AtomicFileWriter, ASymbolicLinkKeepsPointingAtTheReplacedFile) {
  TempDir dir;
  testing::WriteText(dir.Path("real.txt"), "old");
  std::filesystem::create_symlink(dir.Path("real.txt"), dir.Path("link.txt"));
  {
    AtomicFileWriter w(dir.Path("link.txt"));
    w.stream() << "new";
    w.Commit();
  }
  EXPECT_TRUE(std::filesystem::is_symlink(dir.Path("link.txt")));
  EXPECT_EQ(testing::ReadText(dir.Path("real.txt")), "new");
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
}

// SIGTERM while a temporary is open (here: raised by the writing process itself, so the moment is certain): the
// handler removes it and the process ends by the signal.
TEST(AtomicFileWriter, ASignalRemovesLiveTemporaries) {
  TempDir dir;
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    InstallTempFileCleanup();
    AtomicFileWriter w(dir.Path("x.txt"));
    w.stream() << "partial";
    w.stream().flush();
    ::raise(SIGTERM);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
  EXPECT_FALSE(std::filesystem::exists(dir.Path("x.txt")));
}

// One command's outputs: all of them or none.
TEST(OutputBatch, RenamesOnlyWhenEveryOutputIsWritten) {
  TempDir dir;
  testing::WriteText(dir.Path("a.txt"), "old a");
  {
    OutputBatch batch;
    AtomicFileWriter a(dir.Path("a.txt"));
    a.stream() << "new a";
    a.Commit();
    EXPECT_EQ(testing::ReadText(dir.Path("a.txt")), "old a");  // deferred to the batch
    AtomicFileWriter b(dir.Path("b.txt"));
    b.stream() << "new b";
    b.Commit();
    batch.Commit();
  }
  EXPECT_EQ(testing::ReadText(dir.Path("a.txt")), "new a");
  EXPECT_EQ(testing::ReadText(dir.Path("b.txt")), "new b");
  try {
    OutputBatch batch;
    AtomicFileWriter a(dir.Path("a.txt"));
    a.stream() << "newer a";
    a.Commit();
    AtomicFileWriter c(dir.Path("no_dir/c.txt"));  // fails: the batch is abandoned
    FAIL();
  } catch (const InputError&) {
  }
  EXPECT_EQ(testing::ReadText(dir.Path("a.txt")), "new a");
  EXPECT_TRUE(testing::TempLeftovers(dir.Path("")).empty());
}

}  // namespace
}  // namespace pimopt
