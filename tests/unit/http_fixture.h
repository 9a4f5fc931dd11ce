/* http_fixture.h — the shared fixture of the HTTP admin tests
 * (http_fixture.c); include after <cmocka.h>. */
#ifndef RMQ_HTTP_FIXTURE_H
#define RMQ_HTTP_FIXTURE_H

#include "http_admin.h"
#include "mailbox.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <threads.h>

struct fixture {
    struct mailbox *mb;
    struct http_admin *h;
    uint16_t port;
    thrd_t loop;
    atomic_int stop;    /* ask the loop thread to exit */
    atomic_int paused;  /* loop leaves the mailbox alone while set */
    atomic_int handled; /* messages the fake loop has answered */
    char dir[4096];
    char db[4200];
};

struct resp {
    int status; /* 0 = no response (connection closed first) */
    char head[8192];
    char *body; /* malloc'd, NUL-terminated */
    size_t body_len;
};

/* cmocka setup/teardown: a mailbox, the fake loop thread and http_admin on
 * a free port, with f->db (not created) as its store path; and stopping
 * them, removing the database files. */
int http_fx_setup(void **state);
int http_fx_teardown(void **state);

/* A connected socket to 127.0.0.1:port (10 s receive timeout). */
int client_connect(uint16_t port);
/* Writes all of buf; returns 0, or -1 when the peer closed (that is fine
 * for the over-limit tests, where the server answers before the body). */
int send_all(int fd, const void *buf, size_t n);
/* Sends a request with Connection: close; extra is more header lines
 * (each ending \r\n) or NULL; a non-NULL body gets a Content-Length. */
void send_request(int fd, const char *method, const char *path, const char *extra, const char *body,
                  size_t body_len);
/* Reads a whole response (until EOF) and parses status, head and body. */
void read_response(int fd, struct resp *r);
/* One request on a new connection; r->body is the caller's to free. */
void http(struct fixture *f, const char *method, const char *path, const char *body, struct resp *r);
/* Value of header name in r (static copy), or NULL. */
const char *header(const struct resp *r, const char *name);
/* Parses the JSON body (new reference) and checks it is application/json. */
json_t *json_body(const struct resp *r);
/* One request; asserts the status and returns the parsed body (new). */
json_t *call(struct fixture *f, const char *method, const char *path, const char *body, int status);
/* Asserts status and the error code, with a non-empty detail. */
void expect_error(struct fixture *f, const char *method, const char *path, const char *body, int status,
                  const char *code);
/* expect_error for each of the n paths (method and body the same). */
void expect_errors(struct fixture *f, const char *method, const char *const *paths, size_t n,
                   const char *body, int status, const char *code);
/* Asserts that the echo reply names op and arg (arg NULL = JSON null);
 * returns the reply (new). */
json_t *expect_op(struct fixture *f, const char *method, const char *path, const char *body, enum admin_op op,
                  const char *arg);

#endif
