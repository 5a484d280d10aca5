#include "param_flags.h"

#include <algorithm>

namespace pimopt::cli {
namespace {

const char* EffectText(ParamEffect effect) {
  switch (effect) {
    case ParamEffect::kResult:
      return "result";
    case ParamEffect::kModeledTime:
      return "modeled time";
    case ParamEffect::kNone:
      return "-";
  }
  return "?";
}

// "lr|svm", "NUMBER", "COUNT", ... for CLI11's usage column.
std::string TypeName(const ParamInfo& info) {
  switch (info.type) {
    case ParamType::kChoice: {
      std::string names;
      for (const ParamChoice& c : info.Choices()) names += (names.empty() ? "" : "|") + c.name;
      return names;
    }
    case ParamType::kInt:
    case ParamType::kUint:
      return "INT";
    case ParamType::kReal:
      return "NUMBER";
    case ParamType::kText:
      return "TEXT";
    case ParamType::kFlag:
      return "";
  }
  return "";
}

std::string Values(const ParamInfo& info) {
  if (info.type == ParamType::kChoice) return info.ChoicesText();
  std::string text = info.NumberBoundsText();
  if (!info.unit.empty()) text += (text.empty() ? "" : " ") + info.unit;
  if (info.auto_value) text += text.empty() ? "auto" : " or auto";
  return text;
}

std::string Escape(std::string text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\";
    out += c;
  }
  return out;
}

}  // namespace

std::string ParamHelp(const ParamInfo& info) {
  std::string text = info.help;
  if (info.type == ParamType::kChoice) {
    std::string choices;
    for (const ParamChoice& c : info.Choices()) {
      if (!c.help.empty()) choices += StrCat(choices.empty() ? "" : "; ", c.name, ": ", c.help);
    }
    if (!choices.empty()) text += StrCat(" (", choices, ")");
  } else if (!Values(info).empty()) {
    text += StrCat(" [", Values(info), "]");
  }
  if (info.type != ParamType::kFlag && info.DefaultText() != "-") text += StrCat("; default ", info.DefaultText());
  if (!info.applies_when.empty()) text += StrCat("; only with ", info.AppliesText());
  return text;
}

void ParamFlags::Bind(CLI::App* command, const ParamInfo& info) {
  if (const auto it = bound_.find(info.name); it != bound_.end()) {
    CLI::Option* o = it->second.option;
    if (info.DefaultText() != it->second.default_text) {
      o->description(StrCat(o->get_description(), "; ", info.group, ": default ", info.DefaultText()));
    }
    return;
  }
  Bound& b = bound_[info.name];
  b.default_text = info.DefaultText();
  order_.push_back(info.name);
  const std::string names = info.short_flag.empty() ? info.Flag() : info.short_flag + "," + info.Flag();
  b.is_flag = info.type == ParamType::kFlag;
  if (b.is_flag) {
    b.option = command->add_flag(names, b.flag, ParamHelp(info));
  } else {
    b.option = command->add_option(names, b.text, ParamHelp(info))->type_name(TypeName(info));
  }
  if (info.required) b.option->required();
  b.option->group(info.group.empty() ? "Options" : info.group);
}

void ParamFlags::ForEachGiven(const std::function<void(const std::string&, const std::string&)>& set) const {
  for (const std::string& name : order_) {
    const Bound& b = bound_.at(name);
    if (b.option->count() == 0) continue;
    set(name, b.is_flag ? (b.flag ? "true" : "false") : b.text);
  }
}

std::string ParamsAsText(const std::vector<const ParamInfo*>& infos) {
  std::string out, group;
  for (const ParamInfo* info : infos) {
    if (info->group != group) {
      group = info->group;
      out += StrCat(out.empty() ? "" : "\n", group, ":\n");
    }
    std::string flag = info->Flag() + (info->type == ParamType::kFlag ? "" : " " + TypeName(*info));
    const std::string effect = info->effect == ParamEffect::kNone ? "- (not recorded as an option)"
                                                                   : EffectText(info->effect);
    out += StrCat("  ", flag, info->required ? " (required)" : "", "\n      ", ParamHelp(*info), "\n      type ",
                  ParamTypeName(info->type), "; affects: ", effect, "\n");
  }
  return out;
}

std::string ParamsAsMarkdown(const std::vector<const ParamInfo*>& infos) {
  std::string out, group;
  for (const ParamInfo* info : infos) {
    if (info->group != group) {
      group = info->group;
      out += StrCat(out.empty() ? "" : "\n", "#### ", group, "\n", "| flag | default | values | only with | affects | "
                    "meaning |\n|---|---|---|---|---|---|\n");
    }
    std::string help = info->help;
    if (info->type == ParamType::kChoice) {
      std::string choices;
      for (const ParamChoice& c : info->Choices()) {
        if (!c.help.empty()) choices += StrCat(choices.empty() ? "" : "; ", "`", c.name, "`: ", c.help);
      }
      if (!choices.empty()) help += StrCat(" (", choices, ")");
    }
    const std::string flag = info->short_flag.empty() ? info->Flag() : info->Flag() + ", " + info->short_flag;
    const std::string default_text =
        info->required ? "required" : info->type == ParamType::kFlag ? "off" : info->DefaultText();
    out += StrCat("| `", flag, "` | ", Escape(default_text), " | ",
                  Escape(Values(*info)), " | ", Escape(info->AppliesText()), " | ", EffectText(info->effect), " | ",
                  Escape(help), " |\n");
  }
  return out;
}

}  // namespace pimopt::cli
