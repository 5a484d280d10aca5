/* pimopt's DPU headers (see attributes.h). assert.h: a failed assertion halts the DPU with a fault that names the
 * expression and its line (the host's dpu_launch returns DPU_ERR_DPU_FAULT), as the SDK's assert does; with NDEBUG it
 * is nothing. Like the C library's, this header has no include guard: NDEBUG is read at each inclusion. */
#undef assert
#ifdef NDEBUG
#define assert(expression) ((void)0)
#else
#ifdef __cplusplus
extern "C"
#endif
    void __pimopt_dpu_assert_fail(const char* expression, const char* file, unsigned int line);
#define assert(expression) ((expression) ? (void)0 : __pimopt_dpu_assert_fail(#expression, __FILE__, __LINE__))
#endif
