/* acl.h — optional RocketMQ ACL-style authentication of remoting requests
 * (--acl FILE). Every request must carry an AccessKey of a known account and
 * a Signature computed as the RocketMQ client's ACL hook computes it
 * (common/proto/acl_sig.h). Permissions per topic/group are not enforced: this
 * checks who is talking, not what they may touch.
 *
 * FILE is the accounts part of RocketMQ's plain_acl.yml:
 *     accounts:
 *       - accessKey: RocketMQ
 *         secretKey: 12345678
 * (other keys are ignored; values may be quoted). Loop thread only.
 */
#ifndef RMQ_ACL_H
#define RMQ_ACL_H

#include "remoting_cmd.h"

#include <stddef.h>

struct acl;

/* Loads path; new *out (acl_free). 0, or an error with a reason in err. */
int acl_load(const char *path, struct acl **out, char *err, size_t errlen);
void acl_free(struct acl *a);
size_t acl_accounts(const struct acl *a);
/* 0 when cmd is signed by a known account; otherwise RMQ_EINVAL with the
 * reason (static text) in *why. */
int acl_check(const struct acl *a, const struct rmq_cmd *cmd, const char **why);

#endif
