/* Library-wide settings that phase 1 reads: the thread count (lig_set_num_threads, else the
 * environment variable LIG_NUM_THREADS, else every online CPU). The environment is read once. */
#ifndef LIG_CORE_SETTINGS_H
#define LIG_CORE_SETTINGS_H

/* The most threads any backend uses. */
#define LIG_MAX_THREADS 1024

/* 0 = default (environment, else online CPUs); clamped to [0, LIG_MAX_THREADS]. */
void lig_settings_set_threads(int n);
/* The thread count in effect, >= 1. */
int lig_settings_threads(void);

#endif
