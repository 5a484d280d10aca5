// Model files.
//
// Native text format, version 1 (round-trips exactly: floats are written in shortest round-trip form):
//   pimopt_model 1
//   loss logistic|hinge
//   num_features N
//   fit_bias 0|1
//   positive_label 1
//   negative_label -1|0
//   bias <float>
//   weights
//   <w_1>
//   ...
//   <w_N>
//   end
// Lines starting with '#' are comments (the writer records how the model was trained there).
//
// LIBLINEAR export: the format liblinear-predict reads (solver L2R_LR for logistic, L2R_L1LOSS_SVC_DUAL for
// hinge; bias as an extra feature of value 1), so `liblinear-predict data model out` reproduces pimopt's
// predictions.
#pragma once

#include <string>
#include <string_view>

#include "pimopt/model/linear_model.h"

namespace pimopt {

inline constexpr int kModelFormatVersion = 1;

// `comment` lines (may be multi-line) are written after the header line as '# ...'.
void WriteModel(const LinearModel& model, const std::string& path, std::string_view comment = {});
LinearModel ReadModel(const std::string& path);
LinearModel ParseModel(std::string_view text, std::string_view path);
void WriteLiblinearModel(const LinearModel& model, const std::string& path);

}  // namespace pimopt
