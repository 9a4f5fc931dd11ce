/* client_defaults.h — the timer defaults of RocketMQ's Java client and
 * broker that rmqcoord's daemon, `sim` and `replay` all model
 * (docs/protocol.md §10). Defined once so the three cannot drift apart. */
#ifndef RMQ_CLIENT_DEFAULTS_H
#define RMQ_CLIENT_DEFAULTS_H

/* The client's periodic rebalance (RebalanceService). */
#define RMQ_DEFAULT_REBALANCE_MS 20000
/* The client's heartbeat to every broker. */
#define RMQ_DEFAULT_HEARTBEAT_MS 30000
/* The client's route refresh from the name server. */
#define RMQ_DEFAULT_ROUTE_POLL_MS 30000
/* The broker drops a channel with no heartbeat for this long. */
#define RMQ_DEFAULT_CHANNEL_EXPIRY_MS 120000

/* The value of a macro above as a string literal, for help texts. */
#define RMQ_DEFAULT_STR(x) RMQ_DEFAULT_STR_(x)
#define RMQ_DEFAULT_STR_(x) #x

#endif
