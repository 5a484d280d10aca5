#include "command_params.h"

#include "pimopt/core/thread_pool.h"

namespace pimopt::cli {

const ParamTable<PredictFlags>& PredictParams() {
  static const ParamTable<PredictFlags> table = [] {
    ParamTable<PredictFlags> t;
    const std::string group = "Predict";
    t.Add("model", &PredictFlags::model, "").Required().Effect(ParamEffect::kNone).Group(group).Help("model file");
    t.Add("data", &PredictFlags::data, "").Required().Effect(ParamEffect::kNone).Group(group).Help(
        "data file or built-in name");
    t.Add("out", &PredictFlags::out, "").Effect(ParamEffect::kNone).Group(group).Help(
        "write 'label score' per row here");
    AddThreadsParam(t, &PredictFlags::threads, "host threads; never changes the scores").Group(group);
    return t;
  }();
  return table;
}

const ParamTable<GenFlags>& GenParams() {
  static const ParamTable<GenFlags> table = [] {
    ParamTable<GenFlags> t;
    const std::string group = "Output";
    t.Add("out", &GenFlags::out, "").Required().Effect(ParamEffect::kNone).Group(group).Help(
        "output file (.svm LIBSVM or .bin binary)");
    t.Add("format", &GenFlags::format, "")
        .Effect(ParamEffect::kNone)
        .DefaultNote("from the extension")
        .Group(group)
        .Help("libsvm | binary | yfcc-text | criteo-text");
    t.Add("first-row", &GenFlags::first_row, 0)
        .Effect(ParamEffect::kNone)
        .Unit("row")
        .Group(group)
        .Help("first row number (a test set: rows after the train rows; the generator refuses rows past what it can "
              "number)");
    AddThreadsParam(t, &GenFlags::threads, "host threads; never changes the data").Group(group);
    return t;
  }();
  return table;
}

const ParamTable<ConvertFlags>& ConvertParams() {
  static const ParamTable<ConvertFlags> table = [] {
    ParamTable<ConvertFlags> t;
    t.Add("format", &ConvertFlags::format, "")
        .Effect(ParamEffect::kNone)
        .DefaultNote("from the extension")
        .Group("Output")
        .Help("libsvm | binary | yfcc-text | criteo-text");
    return t;
  }();
  return table;
}

const ParamTable<ParamsFlags>& ParamsParams() {
  static const ParamTable<ParamsFlags> table = [] {
    ParamTable<ParamsFlags> t;
    t.AddChoice("format", &ParamsFlags::format, std::string("text"),
                {{{"text", "", {}}, std::string("text")},
                 {{"markdown", "the README's tables", {}}, std::string("markdown")},
                 {{"json", "every command's parameters with their types and bounds, for tools and tests", {}},
                  std::string("json")}})
        .Effect(ParamEffect::kNone)
        .Group("Output")
        .Help("how to print them");
    t.Add("command", &ParamsFlags::command, "")
        .Effect(ParamEffect::kNone)
        .DefaultNote("train (text, markdown); every command (json)")
        .Group("Output")
        .Help("the command whose parameters to show");
    return t;
  }();
  return table;
}

const ParamTable<ProfileFlags>& ProfileParams() {
  static const ParamTable<ProfileFlags> table = [] {
    ParamTable<ProfileFlags> t;
    const std::string group = "Profile";
    t.Add("set", &ProfileFlags::set, "").Effect(ParamEffect::kNone).Group(group).Help(
        "FIELD=VALUE,... overrides, as train's --profile-set");
    t.AddChoice("format", &ProfileFlags::format, std::string("text"),
                {{{"text", "", {}}, std::string("text")}, {{"markdown", "", {}}, std::string("markdown")}})
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("how to print the profile");
    t.Add("calibrate-host", &ProfileFlags::calibrate_host, false)
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("measure this machine's host reduction constants and print them as --profile-set fields");
    t.Add("budget", &ProfileFlags::budget_s, 2.0)
        .Positive()
        .Max(600)
        .Unit("s")
        .AppliesWhen("calibrate-host", {"true"})
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("seconds --calibrate-host may take");
    return t;
  }();
  return table;
}

const ParamTable<TuneFlags>& TuneParams() {
  static const ParamTable<TuneFlags> table = [] {
    ParamTable<TuneFlags> t;
    const std::string group = "Tuning";
    t.Add("grid", &TuneFlags::grid, "")
        .Required()
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("NAME=V1,V2,...;NAME=... over train's parameters (e.g. 'reg=auto,1e-4,1e-2;model=lr,svm')");
    t.AddChoice("metric", &TuneFlags::metric, std::string("accuracy"),
                {{{"accuracy", "", {}}, std::string("accuracy")}, {{"auc", "", {}}, std::string("auc")}})
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("what 'best' means");
    t.Add("no-warm-start", &TuneFlags::no_warm_start, false)
        .Effect(ParamEffect::kNone)
        .Group(group)
        .Help("train every setting's folds from zero (by default a fold starts from the model the same fold of the "
              "previous setting ended with, when both have the same backend, algorithm and workers)");
    return t;
  }();
  return table;
}

const ParamTable<PlanPrintFlags>& PlanPrintParams() {
  static const ParamTable<PlanPrintFlags> table = [] {
    ParamTable<PlanPrintFlags> t;
    t.Add("json", &PlanPrintFlags::json, false).Effect(ParamEffect::kNone).Group("Plan").Help(
        "print the plan as JSON");
    return t;
  }();
  return table;
}

}  // namespace pimopt::cli
