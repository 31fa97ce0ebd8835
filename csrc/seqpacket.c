/*
 * seqpacket: a writer sends `msgs` messages of `msg_size` bytes over an
 * AF_UNIX socketpair to a forked reader that reads until EOF.  The value is
 * the reader's rate, timed in the reader around its read loop, as in the
 * program of the AF_UNIX seqpacket stream test (lkml, "more statistics", Nov 2015).
 */
#include "hotloop.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

struct state {
    int type;
    size_t msg_size;
    uint64_t msgs;
    struct hl_env env;
    char *buf;
};

/* What the reader sends back to the writer through a pipe. */
struct reader_report {
    uint64_t ns, cycles, bytes, reads;
    int err;                        /* errno of a failed read, 0 if none */
};

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    const char *type = hl_param_str(p, n, "type", "seqpacket");
    int t = !strcmp(type, "seqpacket") ? SOCK_SEQPACKET :
            !strcmp(type, "stream")    ? SOCK_STREAM :
            !strcmp(type, "dgram")     ? SOCK_DGRAM : -1;
    if (t < 0) {
        hl_bad_param(err, errlen, "type", "unknown socket type '%s'", type);
        return NULL;
    }
    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->type = t;
    s->msg_size = (size_t)hl_param_int(p, n, "msg_size", 16);
    s->msgs = (uint64_t)hl_param_int(p, n, "msgs", 1000000);
    s->env = *env;
    s->buf = calloc(1, s->msg_size);
    if (!s->buf) {
        hl_fail_errno(err, errlen, "calloc");
        free(s);
        return NULL;
    }
    return s;
}

static void reader(struct state *s, int sk, int report_fd)
{
    struct reader_report r = {0};
    struct hl_clock c;
    /* A datagram pair sees no EOF when the writer closes: count bytes. */
    uint64_t want = s->type == SOCK_DGRAM ? s->msgs * s->msg_size : UINT64_MAX;
    ssize_t got = 0;

    hl_clock_start(&c);
    while (r.bytes < want && (got = read(sk, s->buf, s->msg_size)) > 0) {
        r.bytes += (uint64_t)got;
        r.reads++;
    }
    struct hl_result res = {0};
    hl_clock_stop(&c, &res);
    if (r.bytes < want && got < 0)
        r.err = errno;
    r.ns = res.ns;
    r.cycles = res.cycles;
    if (write(report_fd, &r, sizeof(r)) != sizeof(r))
        _exit(3);
    _exit(0);
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    int sks[2], rep[2];

    if (socketpair(AF_UNIX, s->type, 0, sks) < 0)
        return hl_fail_errno(err, errlen, "socketpair");
    if (pipe(rep) < 0) {
        close(sks[0]);
        close(sks[1]);
        return hl_fail_errno(err, errlen, "pipe");
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(sks[0]); close(sks[1]); close(rep[0]); close(rep[1]);
        return hl_fail_errno(err, errlen, "fork");
    }
    if (pid == 0) {
        hl_child_init(&s->env, 1);
        close(sks[0]);
        close(rep[0]);
        reader(s, sks[1], rep[1]);
    }
    close(sks[1]);
    close(rep[1]);

    int werr = 0;
    for (uint64_t i = 0; i < s->msgs; i++)
        if (write(sks[0], s->buf, s->msg_size) < 0) {
            werr = errno;
            break;
        }
    close(sks[0]);

    struct reader_report r;
    ssize_t got;
    if (werr) {
        /* A write fails (EPIPE, ECONNRESET) because the reader is gone: how it ended is
         * the run's error.  One still there (a datagram reader waits for the rest) is
         * killed. */
        pid_t reader_pid = pid;
        char how[128];
        hl_reap_child(&pid, how, sizeof(how));
        got = read(rep[0], &r, sizeof(r));
        close(rep[0]);
        if (got == sizeof(r) && r.err)
            return hl_fail(err, errlen, "reader (pid %d): read: %s; then the writer's "
                           "write: %s", reader_pid, strerror(r.err), strerror(werr));
        return hl_fail(err, errlen, "reader (pid %d) %s%s; then the writer's write: %s",
                       reader_pid, how, got == sizeof(r) ? " after it reported" : "",
                       strerror(werr));
    }
    got = read(rep[0], &r, sizeof(r));
    close(rep[0]);
    int status;
    waitpid(pid, &status, 0);

    if (WIFSIGNALED(status))
        return hl_fail(err, errlen, "reader (pid %d) was killed by signal %d (%s)", pid,
                       WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (got != sizeof(r))
        return hl_fail(err, errlen, "reader (pid %d) exited with status %d before reporting",
                       pid, WEXITSTATUS(status));
    if (r.err)
        return hl_fail(err, errlen, "reader: read: %s", strerror(r.err));
    res->ops = r.reads;
    res->bytes = r.bytes;
    res->ns = r.ns;
    res->cycles = r.cycles;
    return 0;
}

/* The reader is forked per run, after perf attaches, so perf follows it. */
int hl_pids(void *state, int *pids, int max)
{
    (void)state; (void)pids; (void)max;
    return 0;
}

void hl_teardown(void *state)
{
    struct state *s = state;
    if (!s)
        return;
    free(s->buf);
    free(s);
}
