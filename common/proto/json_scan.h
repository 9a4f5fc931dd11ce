/* json_scan.h — the cursor of the hand-written JSON scanners (the fast
 * remoting header path, ConsumerRunningInfo's mqTable whose keys are
 * objects): text between p and end, white space as JSON defines it. Pure. */
#ifndef RMQ_JSON_SCAN_H
#define RMQ_JSON_SCAN_H

#include <assert.h>
#include <stdbool.h>

struct json_scan {
    const char *p, *end;
};

static inline void json_scan_ws(struct json_scan *s)
{
    assert(s->p <= s->end); /* no scanner steps past the text */
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

/* Skips white space; then consumes c and says true when it comes next. */
static inline bool json_scan_take(struct json_scan *s, char c)
{
    json_scan_ws(s);
    if (s->p >= s->end || *s->p != c)
        return false;
    s->p++;
    return true;
}

#endif
