// Small file and number-formatting helpers shared by the readers and writers of every module.
#pragma once

#include <string>

namespace pimopt {

// Reads a whole file; throws InputError naming the path if it cannot be opened or read.
std::string ReadFileToString(const std::string& path);
bool FileExists(const std::string& path);
// Formats a float so that parsing it back gives the same float (shortest form).
std::string FormatFloat(float value);
std::string FormatDouble(double value);

}  // namespace pimopt
