#include "pimopt/core/params_json.h"

namespace pimopt {

nlohmann::json ParamInfoJson(const ParamInfo& info) {
  nlohmann::json j = {{"name", info.name},
                      {"flag", info.Flag()},
                      {"type", ParamTypeName(info.type)},
                      {"required", info.required},
                      {"default", info.DefaultText()}};
  auto bound = [&](const char* key, const std::optional<double>& declared, const std::optional<double>& type_bound,
                   bool exclusive, bool lower) {
    std::optional<double> b = declared;
    if (type_bound && (!b || (lower ? *type_bound > *b : *type_bound < *b))) {
      b = type_bound;
      exclusive = false;
    }
    if (!b) return;
    j[key] = *b;
    j[StrCat(key, "_exclusive")] = exclusive;
  };
  bound("min", info.min, info.type_min, info.min_exclusive, true);
  bound("max", info.max, info.type_max, info.max_exclusive, false);
  if (info.auto_value) j["auto"] = true;
  if (info.type == ParamType::kChoice) {
    nlohmann::json choices = nlohmann::json::array();
    for (const ParamChoice& c : info.Choices()) {
      choices.push_back(c.name);
      for (const std::string& a : c.aliases) choices.push_back(a);
    }
    j["choices"] = choices;
  }
  nlohmann::json applies = nlohmann::json::object();
  for (const ParamCondition& c : info.applies_when) applies[c.param] = c.Values();
  j["applies_when"] = applies;
  // What it affects (the README and --help name these too): the model, only the modeled PIM times, or neither.
  j["affects"] = info.effect == ParamEffect::kResult        ? "result"
                 : info.effect == ParamEffect::kModeledTime ? "modeled_time"
                                                            : "none";
  if (!info.unit.empty()) j["unit"] = info.unit;
  j["help"] = info.help;
  return j;
}

}  // namespace pimopt
