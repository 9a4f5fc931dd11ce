/* allocate_room.h — the machine-room rule of broker names and client ids (allocate_room.c). Pure;
 * any thread. */
#ifndef RMQ_ALLOCATE_ROOM_H
#define RMQ_ALLOCATE_ROOM_H

/* The room rule used when no room maps are given: the text after the last
 * '-' of a broker name or client id ("broker-a-hz" -> "hz",
 * "10.0.0.1@123-hz" -> "hz"). Returns a pointer into name (borrowed), or NULL
 * when name has no '-' or ends with one (no room: an error for NEARBY). */
const char *allocate_room_by_rule(const char *name);

#endif
