/* The CPU backend: host tensors, the thread pool, kernel sets per ISA. */
#ifndef LIG_CPU_CPU_BACKEND_H
#define LIG_CPU_CPU_BACKEND_H

#include "backends/backend.h"

extern const lig_backend lig_cpu_backend;

#endif
