/*
 * pipe: two processes ping-pong one byte over two pipes, `round_trips`
 * times per run, as `perf bench sched pipe` does (perf: 1,000,000 loops of
 * write+read against a forked echo; it reports usecs per loop).
 *
 * Process 0 is the worker (hotloop pins it); process 1 is an echo child
 * forked in setup, pinned with hl_child_init(env, 1), which lives across
 * runs and is reported by hl_pids so perf samples it.  With a one-CPU
 * profile both ends share that CPU (the `taskset -c 0 perf bench sched
 * pipe` case); with two CPUs every round trip is two cross-CPU wake-ups.
 *
 * The measured section is the worker's loop: write one byte, read it back.
 * Metric: ns per round trip (res->ops = round trips).
 */
#include "hotloop.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
    uint64_t round_trips;
    int to_child, from_child;       /* the worker's ends, -1 when closed */
    pid_t child;                    /* -1 once reaped */
    int restore_sigpipe;            /* we set SIGPIPE to SIG_IGN in setup */
    struct sigaction old_sigpipe;
};

void hl_teardown(void *state);


/* The echo child: read a byte, write it back, until EOF or error. */
static void echo(int in, int out)
{
    char b;
    for (;;) {
        ssize_t r = read(in, &b, 1);
        if (r == 0)
            _exit(0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            _exit(1);
        }
        if (write(out, &b, 1) != 1)
            _exit(2);
    }
}


static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    int64_t rt = hl_param_int(p, n, "round_trips", 100000);
    if (rt < 1) {
        hl_bad_param(err, errlen, "round_trips", "must be at least 1, got %lld", (long long)rt);
        return NULL;
    }
    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->round_trips = (uint64_t)rt;
    s->to_child = s->from_child = -1;
    s->child = -1;

    /* A dead child must show as EPIPE, not kill the worker.  (Python
     * already ignores SIGPIPE; then this changes nothing.) */
    struct sigaction ign = {0};
    ign.sa_handler = SIG_IGN;
    if (sigaction(SIGPIPE, NULL, &s->old_sigpipe) == 0 &&
        s->old_sigpipe.sa_handler == SIG_DFL && sigaction(SIGPIPE, &ign, NULL) == 0)
        s->restore_sigpipe = 1;

    int down[2], up[2];             /* worker -> child, child -> worker */
    if (pipe2(down, O_CLOEXEC) < 0) {
        hl_fail_errno(err, errlen, "pipe");
        hl_teardown(s);
        return NULL;
    }
    if (pipe2(up, O_CLOEXEC) < 0) {
        hl_fail_errno(err, errlen, "pipe");
        close(down[0]);
        close(down[1]);
        hl_teardown(s);
        return NULL;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        hl_fail_errno(err, errlen, "fork");
        close(down[0]); close(down[1]); close(up[0]); close(up[1]);
        hl_teardown(s);
        return NULL;
    }
    if (pid == 0) {
        hl_child_init(env, 1);
        if (getppid() != parent)
            _exit(1);               /* the worker died before PDEATHSIG was set */
        hl_child_keep_fds(down[0], up[1]);
        echo(down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    s->child = pid;
    s->to_child = down[1];
    s->from_child = up[0];

    /* One round trip, so a child that cannot run fails here, not in run 1. */
    char b = 0;
    if (write(s->to_child, &b, 1) != 1 || read(s->from_child, &b, 1) != 1) {
        char how[128] = "";
        int e = errno;
        hl_reap_child(&s->child, how, sizeof(how));
        hl_fail(err, errlen, "pipe echo child (pid %d) did not answer (%s): it %s",
                pid, e ? strerror(e) : "EOF", how);
        hl_teardown(s);
        return NULL;
    }
    return s;
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    struct hl_clock c;
    const uint64_t n = s->round_trips;
    const int out = s->to_child, in = s->from_child;
    ssize_t w = 1, r = 1;
    uint64_t i;
    char b = 0;

    if (s->child <= 0)
        return hl_fail(err, errlen, "the pipe echo child is gone (an earlier run failed)");

    hl_clock_start(&c);
    for (i = 0; i < n; i++) {
        if ((w = write(out, &b, 1)) != 1)
            break;
        if ((r = read(in, &b, 1)) != 1)
            break;
    }
    hl_clock_stop(&c, res);

    if (i < n) {
        int e = errno;
        pid_t pid = s->child;
        char how[128] = "";
        close_fd(&s->to_child);
        close_fd(&s->from_child);
        hl_reap_child(&s->child, how, sizeof(how));
        const char *what = w != 1 ? "write to" : "read from";
        ssize_t got = w != 1 ? w : r;
        return hl_fail(err, errlen, "%s the echo child (pid %d) failed at round trip %llu (%s); "
                       "the child %s", what, pid, (unsigned long long)i,
                       got < 0 ? strerror(e) : got == 0 ? "EOF" : "short", how);
    }
    res->ops = n;
    res->bytes = 2 * n;
    return 0;
}

int hl_pids(void *state, int *pids, int max)
{
    struct state *s = state;
    if (s->child <= 0 || max < 1)
        return 0;
    pids[0] = s->child;
    return 1;
}

void hl_teardown(void *state)
{
    struct state *s = state;
    if (!s)
        return;
    close_fd(&s->to_child);
    close_fd(&s->from_child);
    if (s->child > 0) {
        kill(s->child, SIGKILL);
        waitpid(s->child, NULL, 0);
        s->child = -1;
    }
    if (s->restore_sigpipe)
        sigaction(SIGPIPE, &s->old_sigpipe, NULL);
    free(s);
}
