#include "pimopt/model/model_io.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "pimopt/core/error.h"
#include "pimopt/data/libsvm.h"
#include "pimopt/model/metrics.h"
#include "test_util.h"

namespace pimopt {
namespace {

LinearModel SomeModel() {
  LinearModel m;
  m.loss = LossKind::kHinge;
  m.weights = {0.1f, -1e-30f, 3.4028235e38f, 0.0f, 1.0f / 3.0f, -0.0f};
  m.bias = -2.5e-7f;
  m.negative_label_value = 0;
  return m;
}

TEST(ModelIo, RoundTripsExactly) {
  testing::TempDir dir;
  const LinearModel m = SomeModel();
  WriteModel(m, dir.Path("m.txt"), "trained by a test\nsecond line");
  const LinearModel back = ReadModel(dir.Path("m.txt"));
  EXPECT_EQ(back.loss, m.loss);
  ASSERT_EQ(back.weights.size(), m.weights.size());
  for (size_t j = 0; j < m.weights.size(); ++j) {
    EXPECT_EQ(std::memcmp(&back.weights[j], &m.weights[j], sizeof(float)), 0) << j;
  }
  EXPECT_EQ(back.bias, m.bias);
  EXPECT_EQ(back.negative_label_value, 0.0);
  EXPECT_TRUE(back.fit_bias);
}

// A model trained on data labelled by class keeps the classes it calls positive (predict applies them to such data);
// a model without them reads as before.
TEST(ModelIo, ThePositiveClassesRoundTripAndAreChecked) {
  testing::TempDir dir;
  LinearModel m = SomeModel();
  m.positive_classes = {1, 7};
  WriteModel(m, dir.Path("m.txt"));
  const std::string text = testing::ReadText(dir.Path("m.txt"));
  EXPECT_NE(text.find("\npositive_classes 1,7\n"), std::string::npos) << text;
  EXPECT_EQ(ReadModel(dir.Path("m.txt")).positive_classes, (std::vector<int>{1, 7}));
  EXPECT_TRUE(ParseModel(testing::ReadText([&] {
                           WriteModel(SomeModel(), dir.Path("plain.txt"));
                           return dir.Path("plain.txt");
                         }()),
                         "plain.txt")
                  .positive_classes.empty());
  std::string bad = text;
  bad.replace(bad.find("1,7"), 3, "1,x");
  EXPECT_THROW(ParseModel(bad, "m.txt"), ParseError);
  bad = text;
  bad.replace(bad.find("1,7"), 3, "1,300");
  EXPECT_THROW(ParseModel(bad, "m.txt"), ParseError);
}

TEST(ModelIo, MalformedFilesNameTheLine) {
  testing::TempDir dir;
  WriteModel(SomeModel(), dir.Path("m.txt"));
  const std::string good = testing::ReadText(dir.Path("m.txt"));
  auto expect_error = [&](const std::string& text, const std::string& fragment) {
    try {
      ParseModel(text, "m.txt");
      FAIL() << "accepted: " << fragment;
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("m.txt", 0), 0u);
    }
  };
  expect_error("", "empty file");
  expect_error("hello\n", "not a pimopt model");
  expect_error("pimopt_model 2\n", "unsupported model format version 2");
  std::string bad_weight = good;
  bad_weight.replace(bad_weight.find("\n0.1\n"), 5, "\nx.1\n");
  expect_error(bad_weight, ":9: weight 'x.1'");
  expect_error(good.substr(0, good.size() - 4), "expected 'end'");
  std::string extra = good;
  extra.insert(extra.find("end\n"), "0.5\n");
  expect_error(extra, "too many weights");
  std::string unknown_loss = good;
  unknown_loss.replace(unknown_loss.find("hinge"), 5, "huber");
  expect_error(unknown_loss, "unknown loss 'huber'");
}

TEST(ModelIo, LiblinearPredictReproducesOurAccuracy) {
  testing::TempDir dir;
  const Dataset data = ParseLibsvm(
      "1 1:0.9 2:0.1\n-1 1:0.1 2:0.8\n1 1:0.7 3:0.5\n-1 2:0.9 3:0.2\n1 1:0.4 2:0.45\n-1 1:0.45 2:0.4\n", "x");
  WriteLibsvm(data, dir.Path("d.svm"));
  LinearModel m;
  m.loss = LossKind::kLogistic;
  m.weights = {2.0f, -2.0f, 0.25f};
  m.bias = 0.05f;
  const Metrics ours = Evaluate(m, data, {});
  WriteLiblinearModel(m, dir.Path("ll.model"));
  const std::string cmd = "liblinear-predict " + dir.Path("d.svm") + " " + dir.Path("ll.model") + " " +
                          dir.Path("pred.txt") + " > " + dir.Path("stdout.txt") + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "liblinear-predict failed (install liblinear-tools): "
                                         << testing::ReadText(dir.Path("stdout.txt"));
  const std::string predictions = testing::ReadText(dir.Path("pred.txt"));
  std::vector<float> scores = ComputeScores(m, data);
  std::string expected;
  for (float s : scores) expected += s > 0 ? "1\n" : "-1\n";
  EXPECT_EQ(predictions, expected);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "Accuracy = %g%%", 100 * ours.accuracy);
  EXPECT_NE(testing::ReadText(dir.Path("stdout.txt")).find(buf), std::string::npos)
      << testing::ReadText(dir.Path("stdout.txt")) << " vs " << buf;
}

}  // namespace
}  // namespace pimopt
