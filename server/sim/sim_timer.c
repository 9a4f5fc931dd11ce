/* sim_timer.c — a simulated client's one loop timer: armed at the earliest
 * of its deadlines (heartbeat, route refresh, persist, rebalance, a process
 * queue's retry), and the wakeup a NOTIFY or a changed round asks for.
 * Loop thread only. */
#include "sim_timer.h"

#include "loop.h"

#include <assert.h>
#include <stdint.h>

#define NEVER (INT64_MAX / 4)

void sim_client_wake(struct sim_client *c, enum sim_reason why)
{
    if (c->sim->stopping)
        return;
    if (!c->running) {
        /* Java's RebalanceService remembers a wakeup that comes before the
         * first round (the daemon may NOTIFY before the heartbeat reply):
         * one more round follows the start round. */
        c->rb_again = true;
        c->rb_again_reason = why;
        return;
    }
    c->due_rebalance = loop_now_ms(c->sim->loop);
    c->due_reason = why;
    assert(c->running && !c->sim->stopping);
    sim_client_arm(c);
}

void sim_client_arm(struct sim_client *c)
{
    int64_t next = NEVER;
    if (c->running && !c->sim->stopping) {
        int64_t due[] = {c->due_heartbeat, c->due_route, c->due_persist, c->due_rebalance};
        for (size_t i = 0; i < sizeof due / sizeof due[0]; i++)
            next = due[i] < next ? due[i] : next;
        for (size_t i = 0; i < c->ntopics; i++)
            for (size_t j = 0; j < c->topics[i].nheld; j++) {
                int64_t at = c->topics[i].held[j]->retry_at;
                next = at && at < next ? at : next;
            }
    }
    assert(next <= NEVER && (next == NEVER || c->running)); /* a client that is not running sleeps */
    loop_timer_set(c->sim->loop, c->timer_id, next);
}
