/* notify.h — NOTIFY_CONSUMER_IDS_CHANGED fan-out. Loop thread only. */
#ifndef RMQ_NOTIFY_H
#define RMQ_NOTIFY_H

#include "broker.h"

/* Sends one NOTIFY per flagged group whose NOTIFY is due
 * (registry_take_due), to every live channel of the group. */
void notify_flush(struct broker *s);

#endif
