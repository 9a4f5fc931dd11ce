/* cli_opts.h — one list per command declares its long options; the enum of
 * option ids and the getopt_long table are both made from it, so a flag
 * cannot be in one and missing from the other.
 *
 *   #define MY_OPTS(X) X(OPT_ONE, "one", required_argument) X(OPT_TWO, "two", no_argument)
 *   CLI_OPTS(MY_OPTS, long_options);
 *
 * The ids start at 256, above every short option character. */
#ifndef RMQ_CLI_OPTS_H
#define RMQ_CLI_OPTS_H

#include <getopt.h>
#include <stddef.h>

#define CLI_OPT_ID_(id, name, has_arg) id,
#define CLI_OPT_ROW_(id, name, has_arg) {name, has_arg, NULL, id},

#define CLI_OPTS(list, table)                                                                                \
    enum { table##_before_first_ = 255, list(CLI_OPT_ID_) };                                                 \
    static const struct option table[] = {list(CLI_OPT_ROW_){NULL, 0, NULL, 0}}

/* The same for a list of two kinds of rows, OPT(id, name, has_arg) and
 * NUM(id, name, min, max, field): a whole-number flag that the command
 * stores into field through a table it makes from the NUM rows. */
#define CLI_NUM_ID_(id, name, min, max, field) CLI_OPT_ID_(id, name, required_argument)
#define CLI_NUM_ROW_(id, name, min, max, field) CLI_OPT_ROW_(id, name, required_argument)
#define CLI_NOT_NUM_(id, name, has_arg)

#define CLI_OPTS_NUM(list, table)                                                                            \
    enum { table##_before_first_ = 255, list(CLI_OPT_ID_, CLI_NUM_ID_) };                                    \
    static const struct option table[] = {list(CLI_OPT_ROW_, CLI_NUM_ROW_){NULL, 0, NULL, 0}}

#endif
