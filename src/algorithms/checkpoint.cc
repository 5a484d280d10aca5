#include "pimopt/algorithms/checkpoint.h"

#include <cmath>
#include <cstring>
#include <string_view>

#include "pimopt/core/atomic_file.h"
#include "pimopt/core/error.h"
#include "pimopt/core/rng.h"
#include "pimopt/data/binary_format.h"
#include "pimopt/core/file_util.h"

namespace pimopt {
namespace {

constexpr char kMagic[8] = {'P', 'I', 'M', 'O', 'P', 'T', 'C', 'K'};
constexpr uint32_t kVersion = 9;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

class Reader {
 public:
  Reader(std::string_view bytes, const std::string& path) : bytes_(bytes), path_(path) {}
  template <typename T>
  T Get() {
    T v;
    Need(sizeof(v));
    std::memcpy(&v, bytes_.data() + pos_, sizeof(v));
    pos_ += sizeof(v);
    return v;
  }
  void Need(uint64_t n) const {
    if (n > bytes_.size() - pos_) throw ParseError(path_, "truncated checkpoint");
  }
  // `count` items of `bytes_each` bytes, checked without the product (which an absurd count would wrap around).
  void NeedItems(uint64_t count, uint64_t bytes_each) const {
    if (bytes_each > 0 && count > (bytes_.size() - pos_) / bytes_each) throw ParseError(path_, "truncated checkpoint");
  }
  const char* Take(uint64_t n) {
    Need(n);
    const char* p = bytes_.data() + pos_;
    pos_ += n;
    return p;
  }
  size_t pos() const { return pos_; }

 private:
  std::string_view bytes_;
  const std::string& path_;
  size_t pos_ = 0;
};

void PutString(std::string& out, std::string_view text) {
  Put<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out.append(text);
}

std::string GetString(Reader& in) {
  const auto length = in.Get<uint32_t>();
  return std::string(in.Take(length), length);
}

void PutVector(std::string& out, const std::vector<uint32_t>& v) {
  Put<uint64_t>(out, v.size());
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::vector<uint32_t> GetVector(Reader& in) {
  const auto words = in.Get<uint64_t>();
  in.NeedItems(words, 4);
  std::vector<uint32_t> v(words);
  std::memcpy(v.data(), in.Take(words * 4), words * 4);
  return v;
}

WorkerStates GetWorkerStates(Reader& in, size_t workers, size_t per_worker) {
  in.NeedItems(uint64_t{workers}, uint64_t{per_worker} * 8);  // each vector at least has its length
  WorkerStates states(workers);
  for (auto& vectors : states) {
    for (size_t i = 0; i < per_worker; ++i) vectors.push_back(GetVector(in));
  }
  return states;
}

}  // namespace

std::string EncodeWorkerStates(const WorkerStates& states) {
  std::string out;
  for (const auto& vectors : states) {
    for (const auto& v : vectors) PutVector(out, v);
  }
  return out;
}

WorkerStates DecodeWorkerStates(std::string_view bytes, size_t workers, size_t per_worker, const std::string& name) {
  Reader in(bytes, name);
  WorkerStates states = GetWorkerStates(in, workers, per_worker);
  if (in.pos() != bytes.size()) throw ParseError(name, "trailing bytes after the workers' state");
  return states;
}

DataFingerprint FingerprintTrainingData(const Dataset& local_train, const Partition& part, Communicator& comm) {
  // Per row: a hash chained over (global row, label, weight) and the row's non-zeros in column order (dense and
  // sparse storage give the same value); rows are summed as two 32-bit halves in 64-bit integers, so the result
  // does not depend on how rows are split over processes (exact below 2^31 rows).
  int64_t halves[2] = {0, 0};
  const auto labels = local_train.labels();
  const size_t n = local_train.num_features();
  auto value_bits = [](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return uint64_t{bits};
  };
  for (size_t i = 0; i < labels.size(); ++i) {
    uint64_t m = Mix64(((part.first_row + i) << 1) | (labels[i] > 0 ? 1 : 0));
    if (local_train.has_weights()) m = Mix64(m ^ value_bits(local_train.weight(i)));
    auto entry = [&](uint64_t col, float v) {
      if (v != 0.0f) m = Mix64(m ^ ((col << 32) | value_bits(v)));
    };
    if (local_train.is_sparse()) {
      const CsrMatrix& csr = local_train.csr();
      for (uint64_t k = csr.row_ptr[i]; k < csr.row_ptr[i + 1]; ++k) entry(csr.col[k], csr.val[k]);
    } else {
      const float* row = local_train.dense_values().data() + i * n;
      for (size_t j = 0; j < n; ++j) entry(j, row[j]);
    }
    halves[0] += static_cast<int64_t>(m >> 32);
    halves[1] += static_cast<int64_t>(m & 0xffffffffULL);
  }
  comm.AllreduceSum(halves);
  DataFingerprint f;
  f.rows = part.total_rows;
  f.features = n;
  f.content_hash = Mix64((static_cast<uint64_t>(halves[0]) << 32) + static_cast<uint64_t>(halves[1]));
  return f;
}

OptionList TrainResumeOptions(const TrainConfig& config) {
  OptionList options;
  for (const auto& [name, value] : TrainParams().Describe(config, {ParamEffect::kResult, ParamEffect::kModeledTime})) {
    if (!TrainParams().Get(name).info.may_change_on_resume) options.emplace_back(name, value);
  }
  return options;
}

std::string ResumeMismatch(const Checkpoint& saved, const RunIdentity& run, const std::string& backend) {
  if (saved.backend != backend) {
    return StrCat("it was written by the ", saved.backend, " backend; this run uses --backend ", backend);
  }
  auto find = [](const OptionList& list, const std::string& name) -> const std::string* {
    for (const auto& [n, v] : list) {
      if (n == name) return &v;
    }
    return nullptr;
  };
  for (const auto& [name, value] : run.options) {
    const std::string* old = find(saved.identity.options, name);
    if (old == nullptr) {
      return StrCat("this run sets --", name, " ", value, ", which its run did not use");
    }
    if (*old != value) {
      return StrCat("it was written with --", name, " ", *old, "; this run has --", name, " ", value);
    }
  }
  for (const auto& [name, value] : saved.identity.options) {
    if (find(run.options, name) == nullptr) {
      return StrCat("it was written with --", name, " ", value, ", which this run does not use");
    }
  }
  const DataFingerprint& a = saved.identity.data;
  const DataFingerprint& b = run.data;
  if (a.rows != b.rows || a.features != b.features) {
    return StrCat("it was written for other training data (", a.rows, " rows x ", a.features,
                  " features; this run: ", b.rows, " x ", b.features, ")");
  }
  if (a.content_hash != b.content_hash) {
    return "it was written for other training data (the same shape, other labels or values)";
  }
  return "";
}

std::string SerializeCheckpoint(const Checkpoint& c) {
  std::string body;
  Put<uint32_t>(body, kVersion);
  Put<uint32_t>(body, 0);
  Put<uint64_t>(body, c.identity.data.rows);
  Put<uint64_t>(body, c.identity.data.features);
  Put<uint64_t>(body, c.identity.data.content_hash);
  Put<uint32_t>(body, static_cast<uint32_t>(c.identity.options.size()));
  for (const auto& [name, value] : c.identity.options) {
    PutString(body, name);
    PutString(body, value);
  }
  Put<int32_t>(body, c.epochs_done);
  Put<double>(body, c.progress.lr_factor);
  Put<int32_t>(body, c.progress.plateaus);
  Put<double>(body, c.progress.last_objective);
  Put<double>(body, c.progress.best_objective);
  Put<int32_t>(body, c.progress.stale_epochs);
  Put<double>(body, c.progress.certified_gap);
  Put<double>(body, c.progress.stall_reference_gap);
  Put<int32_t>(body, c.progress.stall_epochs);
  Put<int32_t>(body, c.progress.stall_checks);
  Put<double>(body, c.progress.spaced_gap);
  Put<int32_t>(body, c.progress.spaced_gap_epoch);
  Put<int32_t>(body, c.progress.evaluate_from);
  Put<uint32_t>(body, static_cast<uint32_t>(c.progress.algorithm.size()));
  for (double v : c.progress.algorithm) Put<double>(body, v);
  PutString(body, c.backend);
  Put<uint32_t>(body, static_cast<uint32_t>(c.state.shared.size()));
  for (const auto& v : c.state.shared) PutVector(body, v);
  const size_t per_worker = c.state.per_worker.empty() ? 0 : c.state.per_worker[0].size();
  Put<uint32_t>(body, static_cast<uint32_t>(c.state.per_worker.size()));
  Put<uint32_t>(body, static_cast<uint32_t>(per_worker));
  for (const auto& vectors : c.state.per_worker) {
    PIMOPT_CHECK(vectors.size() == per_worker, "workers with different state shapes");
  }
  body += EncodeWorkerStates(c.state.per_worker);
  const uint64_t checksum = Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()});
  std::string out(kMagic, 8);
  out += body;
  Put<uint64_t>(out, checksum);
  return out;
}

Checkpoint ParseCheckpoint(const std::string& bytes, const std::string& name) {
  if (bytes.size() < 8 + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    throw ParseError(name, "not a pimopt checkpoint (wrong magic or truncated)");
  }
  const std::string body = bytes.substr(8, bytes.size() - 16);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (Checksum64({reinterpret_cast<const uint8_t*>(body.data()), body.size()}) != stored) {
    throw ParseError(name, "checksum mismatch: the checkpoint is truncated or corrupt");
  }
  Reader in(body, name);
  const auto version = in.Get<uint32_t>();
  if (version != kVersion) {
    throw ParseError(name, StrCat("checkpoint format ", version, " (this pimopt reads format ", kVersion,
                                  "): start afresh without --resume"));
  }
  in.Get<uint32_t>();
  Checkpoint c;
  c.identity.data.rows = in.Get<uint64_t>();
  c.identity.data.features = in.Get<uint64_t>();
  c.identity.data.content_hash = in.Get<uint64_t>();
  const auto options = in.Get<uint32_t>();
  in.Need(uint64_t{options} * 8);  // each option at least has its two lengths
  for (uint32_t i = 0; i < options; ++i) {
    std::string option = GetString(in);
    c.identity.options.emplace_back(std::move(option), GetString(in));
  }
  c.epochs_done = in.Get<int32_t>();
  c.progress.lr_factor = in.Get<double>();
  c.progress.plateaus = in.Get<int32_t>();
  c.progress.last_objective = in.Get<double>();
  c.progress.best_objective = in.Get<double>();
  c.progress.stale_epochs = in.Get<int32_t>();
  c.progress.certified_gap = in.Get<double>();
  c.progress.stall_reference_gap = in.Get<double>();
  c.progress.stall_epochs = in.Get<int32_t>();
  c.progress.stall_checks = in.Get<int32_t>();
  c.progress.spaced_gap = in.Get<double>();
  c.progress.spaced_gap_epoch = in.Get<int32_t>();
  c.progress.evaluate_from = in.Get<int32_t>();
  if (std::isinf(c.progress.certified_gap) || std::isinf(c.progress.stall_reference_gap) ||
      std::isinf(c.progress.spaced_gap) || c.progress.stall_epochs < 0 || c.progress.stall_checks < 0) {
    throw ParseError(name, "corrupt training progress (an infinite gap or a negative stall count)");
  }
  if (c.progress.spaced_gap_epoch < 0 || c.progress.spaced_gap_epoch > c.epochs_done ||
      c.progress.evaluate_from < 0) {
    throw ParseError(name, "corrupt training progress (an evaluation epoch out of range)");
  }
  const auto algorithm_values = in.Get<uint32_t>();
  in.Need(uint64_t{algorithm_values} * 8);
  for (uint32_t i = 0; i < algorithm_values; ++i) c.progress.algorithm.push_back(in.Get<double>());
  if (!(c.progress.lr_factor > 0 && c.progress.lr_factor <= 1) || c.progress.plateaus < 0 || c.progress.stale_epochs < 0) {
    throw ParseError(name, "corrupt training progress (learning-rate factor or plateau count out of range)");
  }
  for (double v : c.progress.algorithm) {
    if (!std::isfinite(v)) throw ParseError(name, "corrupt training progress (an algorithm's value is not finite)");
  }
  c.backend = GetString(in);
  const auto shared = in.Get<uint32_t>();
  for (uint32_t i = 0; i < shared; ++i) c.state.shared.push_back(GetVector(in));
  const auto workers = in.Get<uint32_t>();
  const auto per_worker = in.Get<uint32_t>();
  c.state.per_worker = GetWorkerStates(in, workers, per_worker);
  if (in.pos() != body.size()) throw ParseError(name, "trailing bytes in checkpoint");
  return c;
}

void WriteCheckpoint(const Checkpoint& c, const std::string& path) {
  const std::string bytes = SerializeCheckpoint(c);
  AtomicFileWriter writer(path, /*binary=*/true);
  writer.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  writer.Commit();
}

Checkpoint ReadCheckpoint(const std::string& path) { return ParseCheckpoint(ReadFileToString(path), path); }

}  // namespace pimopt
