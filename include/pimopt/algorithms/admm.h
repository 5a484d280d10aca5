// Consensus ADMM's own parameters (src/algorithms/admm.cc declares their table; TrainConfig::algorithm_options
// carries them under "admm").
#pragma once

namespace pimopt {

struct AdmmOptions {
  AdmmOptions();  // the declared defaults
  double rho;        // the penalty (the first round's with --rho auto); kAutoRho until resolved
  int local_epochs;  // local epochs of proximal mini-batch SGD per consensus round
  bool rho_adaptive = false;  // not a parameter: --rho auto, the penalty adapts by residual balancing

  // --rho auto: ADMM starts at kAutoRhoStart and balances its residuals after every round (Boyd et al. 2011,
  // section 3.4.1): rho * kRhoStep when the primal residual exceeds kRhoBalance times the dual, rho / kRhoStep in
  // the opposite case, within [kRhoMin, 1 / (2 lr)] (the proximal step's stability).
  static constexpr double kAutoRho = 0;
  static constexpr double kAutoRhoStart = 0.01;
  static constexpr double kRhoBalance = 10;
  static constexpr double kRhoStep = 2;
  static constexpr double kRhoMin = 1e-6;
  bool rho_is_auto() const { return rho == kAutoRho; }
};

}  // namespace pimopt
