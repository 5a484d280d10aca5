/* pimopt's DPU headers (see attributes.h). handshake.h: handshake_notify stops the calling tasklet until another
 * waits for it (handshake_wait_for(its id)), then both go on; handshake_wait_for returns 0, or EALREADY when
 * another tasklet already waits for that notifier. */
#ifndef PIMOPT_DPU_HANDSHAKE_H
#define PIMOPT_DPU_HANDSHAKE_H

#include <errno.h>

#include "defs.h"

#ifdef __cplusplus
extern "C" {
#endif
void handshake_notify(void);
int handshake_wait_for(sysname_t notifier);
#ifdef __cplusplus
}
#endif

#endif
