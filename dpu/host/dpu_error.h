/* pimopt's host headers: the UPMEM SDK's documented host API (dpu.h), for host programs run on pimopt's emulator
 * (docs/pim-emulator.md "Host programs"). The names, values and meanings are the SDK's; the text is pimopt's.
 * dpu_error.h: the status every call returns. */
#ifndef PIMOPT_DPU_ERROR_H
#define PIMOPT_DPU_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The SDK's enums are C enums, whose values are any of their type's: in C++ they take the same underlying type
 * (unsigned int, GCC's for a C enum without negative values), so that a value outside the enumerators, which a C
 * program may pass and the library refuses, is a value of the enum in C++ too, not undefined behaviour. */
#ifdef __cplusplus
#define PIMOPT_DPU_ENUM_BASE : unsigned int
#else
#define PIMOPT_DPU_ENUM_BASE
#endif

typedef enum dpu_error_t PIMOPT_DPU_ENUM_BASE {
  DPU_OK,
  DPU_ERR_INTERNAL,
  DPU_ERR_SYSTEM,
  DPU_ERR_DRIVER,
  DPU_ERR_ALLOCATION,
  DPU_ERR_INVALID_DPU_SET,
  DPU_ERR_INVALID_THREAD_ID,
  DPU_ERR_INVALID_NOTIFY_ID,
  DPU_ERR_INVALID_WRAM_ACCESS,
  DPU_ERR_INVALID_IRAM_ACCESS,
  DPU_ERR_INVALID_MRAM_ACCESS,
  DPU_ERR_INVALID_SYMBOL_ACCESS,
  DPU_ERR_MRAM_BUSY,
  DPU_ERR_TRANSFER_ALREADY_SET,
  DPU_ERR_DIFFERENT_DPU_PROGRAMS,
  DPU_ERR_CORRUPTED_MEMORY,
  DPU_ERR_DPU_DISABLED,
  DPU_ERR_DPU_ALREADY_RUNNING,
  DPU_ERR_INVALID_MEMORY_TRANSFER,
  DPU_ERR_INVALID_LAUNCH_POLICY,
  DPU_ERR_DPU_FAULT,
  DPU_ERR_ELF_INVALID_FILE,
  DPU_ERR_ELF_NO_SUCH_FILE,
  DPU_ERR_ELF_NO_SUCH_SECTION,
  DPU_ERR_TIMEOUT,
  DPU_ERR_INVALID_PROFILE,
  DPU_ERR_UNKNOWN_SYMBOL,
  DPU_ERR_LOG_FORMAT,
  DPU_ERR_LOG_CONTEXT_MISSING,
  DPU_ERR_LOG_BUFFER_TOO_SMALL,
} dpu_error_t;

/* The status's description (a static string). */
const char* dpu_error_to_string(dpu_error_t status);

#ifdef __cplusplus
}
#endif

#endif
