// Fuzz targets for every reader of outside input: LIBSVM text, IDX (gzip or raw), the binary dataset cache, the model
// file, the checkpoint, the hardware-profile override string, the hardware-measurement CSV (`validate --hw-data`) and
// PIM-Opt's two text formats. Each reader must
// either return or throw pimopt::Error (a ParseError, InputError or ConfigError naming what is wrong); any other
// exception, a crash, a hang or a sanitizer report is a bug. Built once per target with libFuzzer (scripts/fuzz.sh,
// clang; PIMOPT_FUZZ_TARGET selects it), or once for all with standalone_main.cc (g++, the test suite's short runs;
// its --target selects it through PimoptFuzzSelectTarget).
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "pimopt/algorithms/checkpoint.h"
#include "pimopt/core/error.h"
#include "pimopt/data/artifact_text.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/data/idx.h"
#include "pimopt/data/libsvm.h"
#include "pimopt/model/model_io.h"
#include "pimopt/pim/hw_validation.h"
#include "pimopt/pim/profile.h"

namespace {

#ifdef PIMOPT_FUZZ_TARGET
std::string target_name = PIMOPT_FUZZ_TARGET;
#else
std::string target_name;  // PimoptFuzzSelectTarget
#endif

// Readers that take a path get the input through a file of this process's own.
std::string WriteInputFile(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/pimopt_fuzz_input." + std::to_string(::getpid());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

void RunTarget(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string& target = target_name;
  if (target == "libsvm") {
    pimopt::ParseLibsvm(text, "fuzz.svm");
  } else if (target == "idx") {
    pimopt::ReadIdx(WriteInputFile(data, size));
  } else if (target == "binary") {
    const std::string path = WriteInputFile(data, size);
    try {
      // What the reader accepts must be usable downstream: the label values go into model files, which refuse
      // non-finite numbers.
      const pimopt::Dataset d = pimopt::ReadBinaryDataset(path);
      if (!std::isfinite(d.positive_label_value) || !std::isfinite(d.negative_label_value) ||
          d.positive_label_value == d.negative_label_value) {
        std::abort();
      }
    } catch (const pimopt::Error&) {
    }
    try {
      pimopt::VerifyBinaryDataset(path);
    } catch (const pimopt::Error&) {
    }
    const pimopt::BinaryDatasetInfo info = pimopt::ReadBinaryDatasetInfo(path);
    pimopt::ReadBinaryDatasetRows(path, info.rows / 2, info.rows);
  } else if (target == "model") {
    pimopt::ParseModel(text, "fuzz.model");
  } else if (target == "checkpoint") {
    pimopt::ParseCheckpoint(std::string(text), "fuzz.ckpt");
  } else if (target == "profile_set") {
    pimopt::pim::HardwareProfile profile = pimopt::pim::MakeProfile("pim-opt");
    pimopt::pim::ApplyOverrides(profile, std::string(text));
  } else if (target == "hw_csv") {
    pimopt::pim::validation::ReadHwData(WriteInputFile(data, size));
  } else if (target == "yfcc_text") {
    pimopt::ParseYfccText(text, "fuzz.yfcc");
  } else if (target == "criteo_text") {
    pimopt::ParseCriteoText(text, "fuzz.criteo");
  } else {
    std::fprintf(stderr, "unknown fuzz target '%s'\n", target.c_str());
    __builtin_trap();
  }
}

}  // namespace

extern "C" bool PimoptFuzzSelectTarget(const char* name) {
  static const char* const kTargets[] = {"libsvm",      "idx",    "binary",    "model",      "checkpoint",
                                         "profile_set", "hw_csv", "yfcc_text", "criteo_text"};
  for (const char* t : kTargets) {
    if (std::string_view(t) == name) {
      target_name = name;
      return true;
    }
  }
  return false;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    RunTarget(data, size);
  } catch (const pimopt::InternalError&) {
    throw;  // a broken invariant inside pimopt is a bug, whatever the input
  } catch (const pimopt::Error&) {
    // the input was refused with a clear error: what a reader must do with bad input
  }
  return 0;
}
