/* fuzz_http_router.c — the admin API router's pure functions
 * (api_routes_match over the route table, api_routes_pct_decode,
 * api_routes_parse_uint and the method helpers).
 *
 * Input: one control byte, then the text (up to the first NUL, as MHD hands
 * over C strings). Control bits 0-1 pick the parse_uint limit (INT64_MAX,
 * 1000, bits 3-7 as a small limit, 2^20), bit 2 the query-string '+' rule.
 * Each function is checked against a plain reference written from its
 * contract in api_routes.h, and the decoder against re-encoding.
 */
#include "api_params.h"
#include "api_routes.h"
#include "err.h"
#include "fuzz_common.h"

#define REF_MAX_SEGS 16

/* Splits p ("/a/b", '/' first) into segments; -1 when over max. */
static int ref_split(const char *p, const char **seg, size_t *len, int max)
{
    if (*p != '/')
        return -1;
    int n = 0;
    for (p++;; n++) {
        if (n == max)
            return -1;
        const char *e = strchr(p, '/');
        seg[n] = p;
        len[n] = e ? (size_t)(e - p) : strlen(p);
        if (!e)
            return n + 1;
        p = e + 1;
    }
}

/* Whether url fits template tpl ("{name}" segments take any one segment,
 * literal ones must be equal); fills the parameters. */
static bool ref_fits(const char *tpl, const char *url, const char **param, size_t *plen, int *np)
{
    const char *ts[REF_MAX_SEGS], *us[REF_MAX_SEGS];
    size_t tl[REF_MAX_SEGS], ul[REF_MAX_SEGS];
    int nt = ref_split(tpl, ts, tl, REF_MAX_SEGS), nu = ref_split(url, us, ul, REF_MAX_SEGS);
    *np = 0;
    if (nt < 0 || nu != nt)
        return false;
    for (int i = 0; i < nt; i++) {
        if (tl[i] > 2 && ts[i][0] == '{' && ts[i][tl[i] - 1] == '}') {
            FUZZ_CHECK(*np < API_MAX_PARAMS);
            param[*np] = us[i];
            plen[*np] = ul[i];
            (*np)++;
        } else if (tl[i] != ul[i] || memcmp(ts[i], us[i], tl[i])) {
            return false;
        }
    }
    return true;
}

/* The route table read in order: the first template the url fits. */
static enum api_route ref_match(const char *url, const struct api_route_def **def, const char **param,
                                size_t *plen, int *np)
{
    size_t n = 0;
    const struct api_route_def *t = api_routes_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (ref_fits(t[i].path, url, param, plen, np)) {
            *def = &t[i];
            return t[i].id;
        }
    }
    *def = NULL;
    *np = 0;
    return API_ROUTE_NONE;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Reference percent-decoder: 0 and *out (malloc'd), or RMQ_EINVAL. */
static int ref_decode(const char *s, size_t n, bool plus, char **out)
{
    char *d = malloc(n + 1);
    FUZZ_CHECK(d != NULL);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            if (n - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0) {
                free(d);
                return RMQ_EINVAL;
            }
            int v = hexval(s[i + 1]) << 4 | hexval(s[i + 2]);
            if (v == 0) {
                free(d);
                return RMQ_EINVAL;
            }
            d[j++] = (char)v;
            i += 2;
        } else {
            d[j++] = plus && s[i] == '+' ? ' ' : s[i];
        }
    }
    d[j] = 0;
    *out = d;
    return 0;
}

static void check_decode(const char *s, size_t n, bool plus)
{
    char *got = NULL, *want = NULL;
    int rc = api_routes_pct_decode(s, n, plus, &got);
    int ref = ref_decode(s, n, plus, &want);
    FUZZ_CHECK(rc == ref);
    if (rc == 0) {
        FUZZ_CHECK(got != NULL && strcmp(got, want) == 0);
        /* Every byte escaped decodes back to the same name. */
        size_t m = strlen(got);
        char *enc = malloc(3 * m + 1), *back = NULL;
        FUZZ_CHECK(enc != NULL);
        for (size_t i = 0; i < m; i++)
            snprintf(enc + 3 * i, 4, "%%%02X", (unsigned char)got[i]);
        FUZZ_CHECK(api_routes_pct_decode(enc, 3 * m, false, &back) == 0 && strcmp(back, got) == 0);
        rmq_free(back);
        free(enc);
    }
    rmq_free(got);
    free(want);
}

/* Reference: digits only, 1..19 of them, value <= max. */
static int ref_parse_uint(const char *s, int64_t max, int64_t *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 19)
        return RMQ_EINVAL;
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return RMQ_EINVAL;
        v = v * 10 + (unsigned)(s[i] - '0'); /* 19 digits fit in 64 bits unsigned */
    }
    if (max < 0 || v > (unsigned long long)max)
        return RMQ_EINVAL;
    *out = (int64_t)v;
    return 0;
}

static void check_methods(enum api_route r)
{
    static const char *const methods[] = {"GET", "HEAD", "PUT", "DELETE", "POST", "PATCH", "get"};
    static const unsigned bits[] = {API_GET, API_GET, API_PUT, API_DELETE, API_POST, 0, 0};
    const struct api_route_def *d = api_routes_def(r);
    FUZZ_CHECK(r == API_ROUTE_NONE || (d && d->id == r));
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        FUZZ_CHECK(api_routes_method_bit(methods[i]) == bits[i]);
        bool ok = api_routes_method_allowed(r, methods[i]);
        FUZZ_CHECK(ok == (d && bits[i] && (d->methods & bits[i])));
        FUZZ_CHECK(api_routes_mutating(methods[i]) ==
                   (bits[i] == API_PUT || bits[i] == API_DELETE || bits[i] == API_POST));
        if (d && d->allow) {
            /* Allowed exactly when listed in Allow (as a whole name). */
            const char *hit = strstr(d->allow, methods[i]);
            bool listed = hit && (hit[strlen(methods[i])] == ',' || hit[strlen(methods[i])] == 0);
            FUZZ_CHECK(ok == listed);
        }
        (void)api_routes_op(r, methods[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    uint8_t mode = data[0];
    size_t n = 0;
    while (1 + n < size && data[1 + n])
        n++;
    char *text = malloc(n + 1);
    FUZZ_CHECK(text != NULL);
    memcpy(text, data + 1, n);
    text[n] = 0;

    struct api_match m;
    const struct api_route_def *rdef = NULL;
    const char *rparam[API_MAX_PARAMS];
    size_t rplen[API_MAX_PARAMS];
    int rnp = 0;
    enum api_route r = api_routes_match(text, &m);
    enum api_route want = ref_match(text, &rdef, rparam, rplen, &rnp);
    if (r != want)
        fprintf(stderr, "route %d, want %d for \"%s\"\n", (int)r, (int)want, text);
    FUZZ_CHECK(r == want);
    FUZZ_CHECK(m.def == rdef && m.nparams == rnp);
    for (int i = 0; i < m.nparams; i++) {
        FUZZ_CHECK(m.param[i] == rparam[i] && m.param_len[i] == rplen[i]);
        FUZZ_CHECK(m.param[i] >= text && m.param[i] + m.param_len[i] <= text + n);
        FUZZ_CHECK(memchr(m.param[i], '/', m.param_len[i]) == NULL);
        FUZZ_CHECK(m.param_name[i][0] != 0);
        check_decode(m.param[i], m.param_len[i], false);
    }
    check_methods(r);

    check_decode(text, n, (mode & 4) != 0);

    static const int64_t limits[] = {INT64_MAX, 1000, 0, (int64_t)1 << 20};
    int64_t max = (mode & 3) == 2 ? (int64_t)(mode >> 3) : limits[mode & 3];
    int64_t got = -1, ref = -1;
    int rc = api_routes_parse_uint(text, max, &got);
    int rrc = ref_parse_uint(text, max, &ref);
    if (rc != rrc || (rc == 0 && got != ref))
        fprintf(stderr, "parse_uint(\"%s\", %lld): rc %d value %lld, want rc %d value %lld\n", text,
                (long long)max, rc, (long long)got, rrc, (long long)ref);
    FUZZ_CHECK(rc == rrc);
    FUZZ_CHECK(rc != 0 || got == ref);
    free(text);
    return 0;
}
