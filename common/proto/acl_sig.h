/* acl_sig.h — the RocketMQ ACL request signature, as its clients compute it
 * (AclClientRPCHook): the values of every extFields entry except Signature,
 * in key order, then the body, HMAC-SHA1'd with the account's secret key and
 * Base64-encoded. Pure; any thread. */
#ifndef RMQ_ACL_SIG_H
#define RMQ_ACL_SIG_H

#include "remoting_cmd.h"

#include <stddef.h>

#define ACL_SIG_LEN 29 /* Base64 of 20 bytes (28 chars) + NUL */

/* Computes the signature of cmd for secret into out. 0, or RMQ_ENOMEM. */
int acl_signature(const struct rmq_cmd *cmd, const char *secret, char out[ACL_SIG_LEN]);
/* Compares two NUL-terminated strings in time independent of where they differ. */
int acl_equal_ct(const char *a, const char *b);

#endif
