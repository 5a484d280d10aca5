#include "pimopt/model/loss.h"

#include "pimopt/core/error.h"

namespace pimopt {

LossKind ParseLossKind(const std::string& text, const char* parameter) {
  if (text == "lr" || text == "logistic") return LossKind::kLogistic;
  if (text == "svm" || text == "hinge") return LossKind::kHinge;
  throw ConfigError(parameter, StrCat("unknown model '", text, "' (use lr or svm)"));
}

const char* LossName(LossKind kind) { return kind == LossKind::kLogistic ? "logistic" : "hinge"; }
const char* ModelName(LossKind kind) { return kind == LossKind::kLogistic ? "lr" : "svm"; }

}  // namespace pimopt
