/* PIMOPT_MODELED_CLOCK=1: the host program's own clock reads modeled time (docs/pim-emulator.md "Host programs").
 * libpimopt_dpu defines gettimeofday and clock_gettime, so a program linked with it calls these; they call the C
 * library's (dlsym RTLD_NEXT) and, on the program's main thread outside the API's calls, add the modeled clock's
 * shift (host_api.cc __pimopt_clock_shift: modeled seconds of the calls minus the real seconds they took). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

double __pimopt_clock_shift(int* active);

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);

static clock_gettime_fn RealClockGettime(void) {
  static clock_gettime_fn real = NULL;
  if (real == NULL) {
    void* symbol = dlsym(RTLD_NEXT, "clock_gettime");
    memcpy(&real, &symbol, sizeof(real)); /* POSIX: a function's address, as dlsym returns it */
  }
  return real;
}

double __pimopt_real_seconds(void) {
  struct timespec ts;
  RealClockGettime()(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int Shifted(clockid_t id, struct timespec* ts) {
  const int rc = RealClockGettime()(id, ts);
  if (rc != 0 || ts == NULL) return rc;
  if (id != CLOCK_REALTIME && id != CLOCK_MONOTONIC && id != CLOCK_MONOTONIC_RAW && id != CLOCK_REALTIME_COARSE &&
      id != CLOCK_MONOTONIC_COARSE && id != CLOCK_BOOTTIME) {
    return rc;
  }
  int active = 0;
  const double shift_s = __pimopt_clock_shift(&active);
  if (!active) return rc;
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + (long long)(shift_s * 1e9);
  if (ns < 0) ns = 0;
  ts->tv_sec = (time_t)(ns / 1000000000LL);
  ts->tv_nsec = (long)(ns % 1000000000LL);
  return rc;
}

int clock_gettime(clockid_t id, struct timespec* ts) { return Shifted(id, ts); }

int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  if (tz != NULL) {
    struct timezone* zone = (struct timezone*)tz;
    zone->tz_minuteswest = 0;
    zone->tz_dsttime = 0;
  }
  struct timespec ts;
  const int rc = Shifted(CLOCK_REALTIME, &ts);
  if (rc != 0) return rc;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}
