/* broker_registration.h — --role broker: registers the daemon's topics with
 * every --namesrv (REGISTER_BROKER), again on a timer and after each topic
 * change, and unregisters at clean shutdown. Loop thread only, except
 * broker_reg_stop (main thread, after the loop ended). */
#ifndef RMQ_BROKER_REGISTRATION_H
#define RMQ_BROKER_REGISTRATION_H

#include "broker.h"

#include <jansson.h>
#include <stdint.h>

struct broker_reg;
/* 0 or an error (logged). */
int broker_reg_start(struct broker *s);
/* Unregisters (bounded, blocking) and frees; accepts a broker where it never started. */
void broker_reg_stop(struct broker *s);
/* Writes the queued registration traffic; re-registers after a topic change. */
void broker_reg_before_sleep(struct broker *s);
/* Registration status per name server for GET /api/cluster; new reference or NULL. */
json_t *broker_reg_admin_json(struct broker *s);
/* Appends the RegisterBrokerBody JSON of the daemon's own topics. */
int broker_reg_body(struct broker *s, int64_t dv_counter, int64_t dv_timestamp, struct buf *out);

#endif
