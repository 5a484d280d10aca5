#include "pimopt/core/atomic_file.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pimopt
