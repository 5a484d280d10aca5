/* pimopt's host headers (see dpu.h). dpu_target_macros.h: the SDK's header of target-describing macros, which host
 * programs include (upmem_communication_performance_test, PrIM's NUMA hosts) and mostly do not use. Empty here: no
 * macro of it is provided. */
#ifndef PIMOPT_DPU_TARGET_MACROS_H
#define PIMOPT_DPU_TARGET_MACROS_H
#endif
