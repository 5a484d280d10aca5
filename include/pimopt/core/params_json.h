// A parameter's declaration as JSON: what `pimopt params --format json` prints for each command and Python's
// pimopt.param_infos() returns for each entry point, so that tools and tests read the bounds from the one place they
// are declared.
#pragma once

#include <nlohmann/json.hpp>

#include "pimopt/core/params.h"

namespace pimopt {

// {name, flag, type, required, default, min / max (the declared bound or the field type's, whichever is tighter)
// with min_exclusive / max_exclusive, auto (the value "auto" is accepted), choices (names and aliases),
// applies_when {param: [values]}}.
nlohmann::json ParamInfoJson(const ParamInfo& info);

}  // namespace pimopt
