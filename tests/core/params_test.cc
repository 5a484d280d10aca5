// The parameter tables: parsing by type with bounds and choices, defaults applied from the declaration, included
// tables, applicability conditions and the option lists derived from them.
#include "pimopt/core/params.h"

#include <gtest/gtest.h>

namespace pimopt {
namespace {

enum class Color { kRed, kBlue };

struct Inner {
  Inner() : level(0) {}
  int level;
};

struct Sample {
  double rate = -1;
  uint32_t count = 0;
  bool verbose = true;
  std::string name;
  Color color = Color::kBlue;
  Inner inner;
};

ParamTable<Inner> InnerTable() {
  ParamTable<Inner> t;
  t.Add("level", &Inner::level, 3).Min(1).Max(5).AppliesWhen("color", {"red"});
  return t;
}

const ParamTable<Sample>& Table() {
  static const ParamTable<Sample> t = [] {
    ParamTable<Sample> t;
    t.Add("rate", &Sample::rate, 0.5).Positive().Help("a rate");
    t.Add("count", &Sample::count, 7).Min(1).Effect(ParamEffect::kModeledTime);
    t.Add("verbose", &Sample::verbose, false).Effect(ParamEffect::kNone);
    t.Add("name", &Sample::name, "x");
    t.AddChoice("color", &Sample::color, Color::kRed,
                std::vector<std::pair<ParamChoice, Color>>{{{"red", "", {"r"}}, Color::kRed},
                                                           {{"blue", "", {}}, Color::kBlue}})
        .Noun("colour")
        .Hint("green", "green is not available: use red or blue");
    t.Include(InnerTable(), &Sample::inner);
    return t;
  }();
  return t;
}

std::string ErrorOf(Sample& s, const char* name, const char* text) {
  try {
    Table().SetText(s, name, text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Params, DefaultsComeFromTheDeclaration) {
  Sample s;
  Table().ApplyDefaults(s);
  EXPECT_EQ(s.rate, 0.5);
  EXPECT_EQ(s.count, 7u);
  EXPECT_FALSE(s.verbose);
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.color, Color::kRed);
  EXPECT_EQ(s.inner.level, 3);
  for (const auto& e : Table().entries()) {
    EXPECT_EQ(FormatParamValue(e.get(s)), FormatParamValue(e.info.default_value)) << e.info.name;
  }
}

TEST(Params, ParsesByTypeAndNamesTheFlagInEveryError) {
  Sample s;
  Table().ApplyDefaults(s);
  Table().SetText(s, "rate", "2.5e-3");
  EXPECT_EQ(s.rate, 2.5e-3);
  Table().SetText(s, "count", "4000000000");
  EXPECT_EQ(s.count, 4000000000u);
  Table().SetText(s, "verbose", "true");
  EXPECT_TRUE(s.verbose);
  Table().SetText(s, "color", "r");  // an alias
  EXPECT_EQ(s.color, Color::kRed);
  EXPECT_EQ(Table().GetText(s, "color"), "red");
  EXPECT_EQ(ErrorOf(s, "rate", "abc"), "--rate: 'abc' is not a number");
  EXPECT_EQ(ErrorOf(s, "rate", "0"), "--rate: 0 is out of range: must be > 0");
  EXPECT_EQ(ErrorOf(s, "rate", "nan"), "--rate: 'nan' is not a finite number");
  EXPECT_EQ(ErrorOf(s, "rate", "inf"), "--rate: 'inf' is not a finite number");
  EXPECT_EQ(ErrorOf(s, "count", "0"), "--count: 0 is out of range: must be >= 1");
  EXPECT_EQ(ErrorOf(s, "count", "-3"), "--count: -3 is out of range: must be >= 1");
  EXPECT_EQ(ErrorOf(s, "count", "5000000000"), "--count: 5000000000 is out of range: must be 0 .. 4294967295");
  EXPECT_EQ(ErrorOf(s, "count", "1.5"), "--count: '1.5' is not a whole number");
  EXPECT_EQ(ErrorOf(s, "level", "6"), "--level: 6 is out of range: must be 1 .. 5");
  EXPECT_EQ(ErrorOf(s, "verbose", "maybe"), "--verbose: 'maybe' is not true or false");
  EXPECT_EQ(ErrorOf(s, "color", "mauve"), "--color: unknown colour 'mauve' (use red or blue)");
  EXPECT_EQ(ErrorOf(s, "color", "green"), "--color: green is not available: use red or blue");
  EXPECT_EQ(ErrorOf(s, "size", "1"), "--size: unknown parameter");
}

TEST(Params, CheckValuesCatchesFieldsSetDirectly) {
  Sample s;
  Table().ApplyDefaults(s);
  s.rate = -1;
  try {
    Table().CheckValues(s);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.parameter(), "--rate");
  }
}

TEST(Params, ConditionsDecideWhatAppliesAndDescribeListsByEffect) {
  Sample s;
  Table().ApplyDefaults(s);
  const auto& level = Table().Get("level");
  EXPECT_TRUE(Table().Applies(level, s));
  EXPECT_EQ(level.info.AppliesText(), "--color red");
  s.color = Color::kBlue;
  EXPECT_FALSE(Table().Applies(level, s));
  const auto result = Table().Describe(s, {ParamEffect::kResult});
  EXPECT_EQ(result, (std::vector<std::pair<std::string, std::string>>{{"rate", "0.5"}, {"name", "x"}, {"color", "blue"}}));
  const auto all = Table().Describe(s, {ParamEffect::kResult, ParamEffect::kModeledTime});
  EXPECT_EQ(all.size(), 4u);
  EXPECT_EQ(Table().Get("rate").info.BoundsText(), "> 0");
  EXPECT_EQ(Table().Get("level").info.BoundsText(), "1 .. 5");
  EXPECT_EQ(Table().Get("color").info.ChoicesText(), "red | blue");
}

}  // namespace
}  // namespace pimopt
