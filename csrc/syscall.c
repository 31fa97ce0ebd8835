/*
 * syscall: `calls` invocations of a cheap system call in a tight loop, as
 * `perf bench syscall basic` does (perf 6.1 calls the libc getppid() wrapper
 * `loops` times between two gettimeofday()s; default 10,000,000 loops).
 *
 * call = getppid (default, perf's call) | getpid | getuid
 * path = libc    (default): the libc wrapper, exactly what perf bench calls;
 *                glibc >= 2.25 and musl never cache getpid(), so every
 *                call enters the kernel
 *      | syscall: syscall(SYS_xxx), the generic entry no libc can cache or
 *                short-circuit (a few cycles more: it shuffles six args)
 * One path applies to every call, so calls compare with each other.
 *
 * The measured section is the loop and nothing else: one loop per (call,
 * path) pair, chosen before the clock starts, so no dispatch sits inside.
 */
#include "hotloop.h"

#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

enum call { CALL_GETPPID, CALL_GETPID, CALL_GETUID };

struct state {
    enum call call;
    int raw;                        /* 1: syscall(SYS_xxx), 0: libc wrapper */
    uint64_t calls;
};

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    (void)env;                      /* one process: the worker pins itself */
    const char *call = hl_param_str(p, n, "call", "getppid");
    const char *path = hl_param_str(p, n, "path", "libc");
    int64_t calls = hl_param_int(p, n, "calls", 10000000);
    enum call c;

    if (!strcmp(call, "getppid"))
        c = CALL_GETPPID;
    else if (!strcmp(call, "getpid"))
        c = CALL_GETPID;
    else if (!strcmp(call, "getuid"))
        c = CALL_GETUID;
    else {
        hl_bad_param(err, errlen, "call", "unknown system call '%s' (getppid, getpid, getuid)", call);
        return NULL;
    }
    if (strcmp(path, "libc") && strcmp(path, "syscall")) {
        hl_bad_param(err, errlen, "path", "unknown path '%s' (libc, syscall)", path);
        return NULL;
    }
    if (calls < 1) {
        hl_bad_param(err, errlen, "calls", "must be at least 1, got %lld", (long long)calls);
        return NULL;
    }
    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->call = c;
    s->raw = !strcmp(path, "syscall");
    s->calls = (uint64_t)calls;
    return s;
}

/* The six loops.  The calls are opaque library calls, so the compiler
 * cannot drop them; the counter is the only bookkeeping. */
#define HL_LOOP(expr)                                   \
    do {                                                \
        hl_clock_start(&c);                             \
        for (uint64_t i = 0; i < n; i++)                \
            (void)(expr);                               \
        hl_clock_stop(&c, res);                         \
    } while (0)

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    struct hl_clock c;
    const uint64_t n = s->calls;

    if (!s->raw) {
        switch (s->call) {
        case CALL_GETPPID: HL_LOOP(getppid()); break;
        case CALL_GETPID:  HL_LOOP(getpid()); break;
        case CALL_GETUID:  HL_LOOP(getuid()); break;
        default: return hl_fail(err, errlen, "call: bad state");
        }
    } else {
        switch (s->call) {
        case CALL_GETPPID: HL_LOOP(syscall(SYS_getppid)); break;
        case CALL_GETPID:  HL_LOOP(syscall(SYS_getpid)); break;
        case CALL_GETUID:  HL_LOOP(syscall(SYS_getuid)); break;
        default: return hl_fail(err, errlen, "call: bad state");
        }
    }
    res->ops = n;
    res->bytes = 0;
    return 0;
}

int hl_pids(void *state, int *pids, int max)
{
    (void)state; (void)pids; (void)max;
    return 0;
}

void hl_teardown(void *state)
{
    free(state);
}
