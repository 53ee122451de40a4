/* The front end's per-thread error message, read back through aclGetRecentErrMsg. */
#ifndef LIG_ACLNN_ERRMSG_H
#define LIG_ACLNN_ERRMSG_H

#if defined(__GNUC__) || defined(__clang__)
#define FE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FE_PRINTF(f, a)
#endif

/* Records "api: message" for this thread and returns `code` (an aclError or aclnnStatus). */
int fe_fail(int code, const char *api, const char *fmt, ...) FE_PRINTF(3, 4);

/* Records "api: <lig's last error>" and returns the aclnn status matching lig's `status`. */
int fe_fail_lig(int lig_status_value, const char *api);

/* Records "api: param: <lig's last error>" (lig names its own parameters differently). */
int fe_fail_lig_param(int lig_status_value, const char *api, const char *param);

#endif /* LIG_ACLNN_ERRMSG_H */
