/*
 * hotloop.h: the ABI every workload implements, and small helpers for it.
 *
 * A workload is one C file that defines the four hl_* functions declared
 * between the cdef markers below.  hotloop compiles it with cffi (API mode,
 * that block as the cdef) into its own module, so workloads never share
 * globals and may all use the same function names.
 *
 *   hl_setup     parse params, create sockets/children/buffers; NULL + err
 *                on failure.  Never exit() and never print.  Params that
 *                cannot work (0 flows, a ring of size 0) fail through
 *                hl_bad_param(), which hotloop reports as bad input (exit 2);
 *                anything else (RLIMIT, a port in use) through hl_fail().
 *   hl_run       one repetition: fill res->ops, bytes, ns (CLOCK_MONOTONIC)
 *                and cycles (TSC, 0 where there is none) of the measured
 *                section only; extra metrics go to res->extra.  0 or -1+err.
 *   hl_pids      pids of helper processes that live across runs (for perf).
 *   hl_teardown  free everything, kill and reap every child.
 *
 * Process i of a workload runs on env->cpus[i % env->ncpus]; ncpus == 0
 * means "no pinning".  hl_pin() does that for the calling process.
 */
#ifndef HOTLOOP_H
#define HOTLOOP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1      /* sched_setaffinity, CPU_SET */
#endif

#include <stdint.h>
#include <stddef.h>

/* cdef-begin: everything up to cdef-end is parsed by cffi, keep it plain C */
#define HL_MAX_EXTRA 16
#define HL_MAX_CPUS 256
#define HL_ERR_LEN 512

struct hl_param {
    const char *key;
    const char *str;        /* the value as text (always set) */
    int64_t num;            /* the value as an integer (int params) */
};

struct hl_env {
    int ncpus;
    int cpus[256];          /* HL_MAX_CPUS */
    int worker_pid;         /* the worker process: the parent of hl_child_init's callers */
};

struct hl_metric {
    char name[32];
    double value;
};

struct hl_result {
    uint64_t ops;
    uint64_t bytes;
    uint64_t ns;
    uint64_t cycles;
    int nextra;
    struct hl_metric extra[16];   /* HL_MAX_EXTRA */
};

void *hl_setup(const struct hl_param *params, int nparams,
               const struct hl_env *env, char *err, size_t errlen);
int hl_run(void *state, struct hl_result *res, char *err, size_t errlen);
int hl_pids(void *state, int *pids, int max);
void hl_teardown(void *state);
/* cdef-end */

#ifndef HL_NO_HELPERS
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

static inline uint64_t hl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The TSC where the CPU has one; 0 elsewhere, so cycles read as "absent". */
static inline uint64_t hl_cycles(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return 0;
#endif
}

/* Start/stop pair around the measured section: nothing else goes between. */
struct hl_clock { uint64_t ns, cycles; };

static inline void hl_clock_start(struct hl_clock *c)
{
    c->cycles = hl_cycles();
    c->ns = hl_now_ns();
}

static inline void hl_clock_stop(const struct hl_clock *c, struct hl_result *res)
{
    uint64_t ns = hl_now_ns(), cy = hl_cycles();
    res->ns = ns - c->ns;
    res->cycles = c->cycles ? cy - c->cycles : 0;
}

static inline int hl_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* For hl_setup: a parameter value (or combination) that cannot work.
 * hotloop reports it as bad input (exit 2), not as a failed run. */
#define HL_BAD_PARAM_PREFIX "bad param "
static inline int hl_bad_param(char *err, size_t errlen, const char *key, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, HL_BAD_PARAM_PREFIX "%s: ", key);
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* hl_fail plus ": strerror(errno)", for failed system calls. */
static inline int hl_fail_errno(char *err, size_t errlen, const char *what)
{
    return hl_fail(err, errlen, "%s: %s", what, strerror(errno));
}

static inline const struct hl_param *hl_param_find(const struct hl_param *p, int n,
                                                   const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(p[i].key, key) == 0)
            return &p[i];
    return NULL;
}

/* hotloop validates params against the TOML before setup, so defaults here
 * only matter to a workload run outside hotloop. */
static inline int64_t hl_param_int(const struct hl_param *p, int n, const char *key,
                                   int64_t dflt)
{
    const struct hl_param *f = hl_param_find(p, n, key);
    return f ? f->num : dflt;
}

static inline const char *hl_param_str(const struct hl_param *p, int n, const char *key,
                                       const char *dflt)
{
    const struct hl_param *f = hl_param_find(p, n, key);
    return f ? f->str : dflt;
}

/* Pin the calling process (or thread) as process number `index` of the
 * workload: cpus[index % ncpus].  No-op when the profile does not pin. */
static inline int hl_pin(const struct hl_env *env, int index)
{
    if (env->ncpus <= 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(env->cpus[index % env->ncpus], &set);
    return sched_setaffinity(0, sizeof(set), &set);
}

/* For a child the worker forked: die with the worker, so no process outlives
 * hotloop.  A worker that died between fork() and prctl() never sends the
 * signal, hence the check of who the parent is now. */
static inline void hl_child_init(const struct hl_env *env, int index)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (env->worker_pid > 0 && getppid() != env->worker_pid)
        _exit(1);
    /* The worker's handlers are Python's (SIGINT's): in a forked C child they only set a
     * flag nothing reads, and turn the signal into a failed call (EINTR) that looks like
     * the child's own error.  Back to the defaults; an ignored signal stays ignored. */
    struct sigaction dfl = {.sa_handler = SIG_DFL}, old;
    for (int sig = 1; sig < NSIG; sig++)
        if (sigaction(sig, NULL, &old) == 0 && ((old.sa_flags & SA_SIGINFO) ||
                (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)))
            sigaction(sig, &dfl, NULL);
    hl_pin(env, index);
}

/* In a forked child: keep only fds a and b (0-2 go to /dev/null), so the child
 * never holds the worker's event pipe, perf's pipes or any other descriptor of
 * the worker.  Async-signal-safe calls only.  Pass -1 for an fd not needed. */
static inline void hl_child_keep_fds(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    if (lo < 3)                     /* one fd unused: close all but the other */
        lo = hi;
    if (lo > 3)
        close_range(3, (unsigned)lo - 1, 0);
    if (hi > lo + 1)
        close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
    close_range((unsigned)hi + 1, ~0u, 0);
}

/* Reap the child *pid (then set to -1), giving one that is already dying
 * ~100 ms so `how` says how it died rather than "killed" by us; kills it if
 * it is still running.  `how` may be NULL. */
static inline void hl_reap_child(pid_t *pid, char *how, size_t howlen)
{
    int status = 0;
    pid_t got = 0;
    if (*pid <= 0) {
        if (how)
            snprintf(how, howlen, "was already reaped");
        return;
    }
    for (int i = 0; i < 100 && (got = waitpid(*pid, &status, WNOHANG)) == 0; i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (got == 0) {
        kill(*pid, SIGKILL);
        got = waitpid(*pid, &status, 0);
        if (how)
            snprintf(how, howlen, "was still running (killed)");
    } else if (how) {
        if (got < 0)
            snprintf(how, howlen, "could not be waited for: %s", strerror(errno));
        else if (WIFSIGNALED(status))
            snprintf(how, howlen, "was killed by signal %d (%s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(how, howlen, "exited with status %d", WEXITSTATUS(status));
    }
    *pid = -1;
}

static inline void hl_add_extra(struct hl_result *res, const char *name, double value)
{
    if (res->nextra >= HL_MAX_EXTRA)
        return;
    struct hl_metric *m = &res->extra[res->nextra++];
    snprintf(m->name, sizeof(m->name), "%s", name);
    m->value = value;
}
#endif /* HL_NO_HELPERS */

#endif /* HOTLOOP_H */
