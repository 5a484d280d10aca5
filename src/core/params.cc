#include "pimopt/core/params.h"

#include <charconv>
#include <cstdio>

#include "pimopt/core/file_util.h"

namespace pimopt {
namespace {

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.10g", v);
  return buf;
}

std::vector<std::string> ChoiceNames(const ParamInfo& info) {
  std::vector<std::string> names;
  for (const ParamChoice& c : info.Choices()) names.push_back(c.name);
  return names;
}

void CheckNumber(const ParamInfo& info, double v, std::string_view text) {
  const std::string shown = text.empty() ? Number(v) : std::string(text);
  if (!std::isfinite(v)) throw ConfigError(info.Flag(), StrCat("'", shown, "' is not a finite number"));
  const std::string bounds = info.BoundsText();
  auto out_of = [&](std::optional<double> bound, bool exclusive, bool is_min) {
    if (!bound) return false;
    return is_min ? (exclusive ? v <= *bound : v < *bound) : (exclusive ? v >= *bound : v > *bound);
  };
  if (out_of(info.min, info.min_exclusive, true) || out_of(info.max, info.max_exclusive, false)) {
    throw ConfigError(info.Flag(), StrCat(shown, " is out of range: must be ", bounds));
  }
  if (out_of(info.type_min, false, true) || out_of(info.type_max, false, false)) {
    throw ConfigError(info.Flag(), StrCat(shown, " is out of range: must be ", Number(*info.type_min), " .. ",
                                          Number(*info.type_max)));
  }
}

}  // namespace

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kFlag:
      return "flag";
    case ParamType::kInt:
      return "integer";
    case ParamType::kUint:
      return "count";
    case ParamType::kReal:
      return "number";
    case ParamType::kText:
      return "text";
    case ParamType::kChoice:
      return "choice";
  }
  return "?";
}

std::string ParamInfo::DefaultText() const {
  if (default_note) return default_note();
  const std::string text = Format(default_value);
  if (type == ParamType::kFlag) return std::get<bool>(default_value) ? "on" : "off";
  return text.empty() ? "-" : text;
}

std::string ParamInfo::BoundsText() const {
  const std::string bounds = NumberBoundsText();
  return auto_value && !bounds.empty() ? StrCat(bounds, " or auto") : bounds;
}

std::string ParamInfo::NumberBoundsText() const {
  auto lower = [&] { return StrCat(min_exclusive ? "> " : ">= ", Number(*min)); };
  auto upper = [&] { return StrCat(max_exclusive ? "< " : "<= ", Number(*max)); };
  if (min && max) {
    if (!min_exclusive && !max_exclusive) return StrCat(Number(*min), " .. ", Number(*max));
    return StrCat(lower(), " and ", upper());
  }
  if (min) return lower();
  if (max) return upper();
  return "";
}

std::string ParamInfo::ChoicesText() const {
  std::string text;
  for (const ParamChoice& c : Choices()) text += (text.empty() ? "" : " | ") + c.name;
  return text;
}

std::string ParamInfo::AppliesText() const {
  std::string text;
  for (const ParamCondition& c : applies_when) {
    // A flag's condition ("true") reads as the flag itself.
    const std::vector<std::string> values = c.Values();
    const bool flag = values == std::vector<std::string>{"true"};
    text += StrCat(text.empty() ? "" : " and ", "--", c.param, flag ? "" : " ", flag ? "" : JoinNames(values, " or "));
  }
  return text;
}

std::string FormatParamValue(const ParamValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          return FormatDouble(v);
        } else {
          return std::to_string(v);
        }
      },
      value);
}

std::string ParamInfo::Format(const ParamValue& value) const {
  return IsAuto(value) ? "auto" : FormatParamValue(value);
}

void CheckParamValue(const ParamInfo& info, const ParamValue& value) {
  if (info.IsAuto(value)) return;
  switch (info.type) {
    case ParamType::kInt:
      CheckNumber(info, static_cast<double>(std::get<int64_t>(value)), std::to_string(std::get<int64_t>(value)));
      break;
    case ParamType::kUint:
      CheckNumber(info, static_cast<double>(std::get<uint64_t>(value)), std::to_string(std::get<uint64_t>(value)));
      break;
    case ParamType::kReal:
      CheckNumber(info, std::get<double>(value), "");
      break;
    case ParamType::kChoice: {
      const auto names = ChoiceNames(info);
      if (std::find(names.begin(), names.end(), std::get<std::string>(value)) == names.end()) {
        throw ConfigError(info.Flag(), StrCat("unknown ", info.noun.empty() ? "value" : info.noun, " '",
                                              std::get<std::string>(value), "' (use ", JoinNames(names, " or "),
                                              ")"));
      }
      break;
    }
    case ParamType::kFlag:
    case ParamType::kText:
      break;
  }
}

ParamValue ParseParamValue(const ParamInfo& info, std::string_view text) {
  const std::string shown(text);
  auto whole = [&](auto parsed) {
    const auto res = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (text.empty() || res.ec == std::errc::invalid_argument || res.ptr != text.data() + text.size()) {
      throw ConfigError(info.Flag(), StrCat("'", shown, "' is not a whole number"));
    }
    if (res.ec == std::errc::result_out_of_range) throw ConfigError(info.Flag(), StrCat(shown, " is out of range"));
    return parsed;
  };
  if (info.auto_value && text == "auto") return *info.auto_value;
  ParamValue value;
  switch (info.type) {
    case ParamType::kFlag:
      if (text == "true" || text == "1" || text == "on") {
        value = true;
      } else if (text == "false" || text == "0" || text == "off") {
        value = false;
      } else {
        throw ConfigError(info.Flag(), StrCat("'", shown, "' is not true or false"));
      }
      break;
    case ParamType::kInt:
      value = whole(int64_t{0});
      break;
    case ParamType::kUint:
      if (!text.empty() && text.front() == '-') {
        throw ConfigError(info.Flag(), StrCat(shown, " is out of range: must be >= ",
                                              info.min ? Number(*info.min) : std::string("0")));
      }
      value = whole(uint64_t{0});
      break;
    case ParamType::kReal: {
      double v = 0;
      const std::string_view body = !text.empty() && text.front() == '+' ? text.substr(1) : text;
      const auto res = std::from_chars(body.data(), body.data() + body.size(), v);
      if (body.empty() || res.ec != std::errc() || res.ptr != body.data() + body.size()) {
        throw ConfigError(info.Flag(), StrCat("'", shown, "' is not a number"));
      }
      value = v;
      break;
    }
    case ParamType::kText:
      value = shown;
      break;
    case ParamType::kChoice: {
      for (const auto& [rejected, instead] : info.hints) {
        if (text == rejected) throw ConfigError(info.Flag(), instead);
      }
      value = shown;
      for (const ParamChoice& c : info.Choices()) {
        if (std::find(c.aliases.begin(), c.aliases.end(), text) != c.aliases.end()) value = c.name;
      }
      break;
    }
  }
  if (info.IsAuto(value)) {  // the sentinel as a number is no "auto"
    throw ConfigError(info.Flag(), StrCat(shown, " is out of range: must be ", info.BoundsText()));
  }
  CheckParamValue(info, value);
  return value;
}

}  // namespace pimopt
