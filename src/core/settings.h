/* Library-wide settings that phase 1 reads: the thread count (lig_set_num_threads, else the
 * tuning's default_threads: LIG_NUM_THREADS, else every online CPU; core/tuning.h). */
#ifndef LIG_CORE_SETTINGS_H
#define LIG_CORE_SETTINGS_H

/* The most threads any backend uses. */
#define LIG_MAX_THREADS 1024

/* 0 = default (core/tuning.h's default_threads); clamped to [0, LIG_MAX_THREADS]. */
void lig_settings_set_threads(int n);
/* The thread count in effect, >= 1. */
int lig_settings_threads(void);

#endif
