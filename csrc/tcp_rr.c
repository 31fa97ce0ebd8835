/*
 * tcp_rr: loopback TCP request/response in the manner of neper's tcp_rr
 * (the epoll report: 1000 flows per thread, epoll).  Each flow is one connection
 * with exactly one transaction in flight: the client sends request_size
 * bytes, the server answers with response_size bytes, the client sends the
 * next request on that flow once the whole response is in.
 *
 * Params: flows (per client thread), threads (client threads),
 *         request_size, response_size, transactions (total per run),
 *         port (0 = ephemeral: bind port 0, read it back with getsockname).
 *
 * Processes and pinning (process index i runs on cpus[i % ncpus]):
 *   index 0      client thread 0 = the worker's own thread (hotloop pins it)
 *   index 1      the server: a process forked in setup, one thread, one
 *                epoll set serving every connection; reported by hl_pids
 *   index 1 + t  client thread t (t >= 1): pthreads created in setup and
 *                kept across runs, so perf attached to the worker sees them
 * With the default threads = 1 the workload uses procs = 2: client on
 * cpus[0], server on cpus[1].
 *
 * Timing: the run's clock spans the transactions only (threads released
 * and collected with a mutex/condvar generation count when threads > 1).  Per-transaction latency
 * is the time from handing the request to send() until the last response
 * byte is read; one clock read per transaction (a response's completion
 * time is also the next request's send time on that flow), stored in a
 * preallocated array.  The p50/p90/p99/p99.9 are picked after the clock
 * stops and reported as extras lat_p50_ns, lat_p90_ns, lat_p99_ns and
 * lat_p999_ns.  ops = transactions, bytes = transactions * (request +
 * response).
 *
 * Faults: a server that dies fails the run with how it died; every
 * connection is closed and the server reaped at once, and later runs fail.
 */
#include "hotloop.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define IO_CHUNK 65536              /* largest single recv() */
#define READY_TIMEOUT_MS 10000      /* server accepting every connection */
#define STALL_TIMEOUT_MS 1000       /* epoll_wait slice; checks for a dead peer */
#define LISTEN_TAG UINT64_MAX

struct flow {
    int fd;
    uint32_t sent;                  /* request bytes sent in this transaction */
    uint32_t rcvd;                  /* response bytes received */
    uint64_t t0;                    /* when the request was handed to send() */
};

struct state;

struct client {
    struct state *s;
    int idx;                        /* thread number t */
    int ep;                         /* epoll fd, -1 when closed */
    int started;                    /* pthread created (t >= 1) */
    pthread_t th;
    struct flow *flows;
    int nflows;
    uint64_t quota;                 /* transactions of this thread per run */
    uint32_t *lat;                  /* its slice of state.lat */
    char *buf;
    int failed;
    char err[256];
};

struct state {
    struct hl_env env;
    int flows, threads;
    uint32_t req, resp;
    uint64_t transactions;
    int port;

    pid_t server;                   /* -1 once reaped */
    int listen_fd;                  /* the worker's copy, closed after fork */
    int broken;                     /* a run failed: the flows are gone */
    char broken_why[300];

    struct client *clients;
    uint32_t *lat;                  /* transactions entries */

    /* client threads 1..threads-1: released per run by bumping `gen`,
     * collected when `pending` reaches 0 */
    int sync_init;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    uint64_t gen;
    int pending;
    int quit;                       /* threads leave at the next wake-up */
    volatile int abort_run;         /* a thread failed: the others stop */

    int rlimit_changed;
    struct rlimit old_nofile;
};

void hl_teardown(void *state);

/* ---------------------------------------------------------------- helpers */

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static int read_sysctl_long(const char *path, long *out)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fscanf(f, "%ld", out) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static int open_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 64;                  /* a guess that errs on the safe side */
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}


/* ----------------------------------------------------------------- server */

struct sconn {
    int fd;
    uint32_t rcvd;                  /* request bytes in */
    uint32_t sent;                  /* response bytes out; == resp when idle */
};


/* The server process.  Accepts `total` connections, tells the worker on
 * `ready`, then echoes a response per request until every client closes.
 * All memory comes from the worker before fork (conns, buf). */
static void server_main(struct state *s, int lfd, int ready, struct sconn *conns,
                        char *buf, int total)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        _exit(10);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTEN_TAG};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0)
        _exit(11);
    const uint32_t req = s->req, resp = s->resp;
    int accepted = 0, open_conns = 0;
    struct epoll_event evs[MAX_EVENTS];

    for (;;) {
        int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            _exit(12);
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == LISTEN_TAG) {
                int fd;
                while (accepted < total &&
                       (fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    struct sconn *c = &conns[accepted];
                    c->fd = fd;
                    c->rcvd = 0;
                    c->sent = resp;
                    ev.events = EPOLLIN;
                    ev.data.u64 = (uint64_t)accepted;
                    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
                        _exit(13);
                    accepted++;
                    open_conns++;
                }
                if (accepted == total) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
                    close(lfd);
                    char b = 1;
                    if (write(ready, &b, 1) != 1)
                        _exit(14);
                    close(ready);
                }
                continue;
            }
            struct sconn *c = &conns[evs[i].data.u64];
            if (c->fd < 0)
                continue;
            if (evs[i].events & EPOLLOUT) {         /* finish a partial response */
                ssize_t w = send(c->fd, buf, resp - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w < 0 && errno != EAGAIN)
                    goto drop;
                if (w > 0)
                    c->sent += (uint32_t)w;
                if (c->sent == resp) {
                    ev.events = EPOLLIN;
                    ev.data.u64 = evs[i].data.u64;
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
                continue;
            }
            ssize_t r = recv(c->fd, buf, min_u32(req - c->rcvd, IO_CHUNK), MSG_DONTWAIT);
            if (r == 0)
                goto drop;                          /* the client closed */
            if (r < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    continue;
                goto drop;
            }
            c->rcvd += (uint32_t)r;
            if (c->rcvd < req)
                continue;
            c->rcvd = 0;
            ssize_t w = send(c->fd, buf, resp, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (w == (ssize_t)resp)
                continue;
            if (w < 0 && errno != EAGAIN)
                goto drop;
            c->sent = w > 0 ? (uint32_t)w : 0;
            ev.events = EPOLLOUT;
            ev.data.u64 = evs[i].data.u64;
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            continue;
        drop:
            close(c->fd);                           /* also leaves the epoll set */
            c->fd = -1;
            if (--open_conns == 0 && accepted == total)
                _exit(0);
        }
    }
}

/* ----------------------------------------------------------------- client */

static void client_fail(struct client *c, const char *fmt, ...)
{
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, sizeof(c->err), fmt, ap);
        va_end(ap);
        c->failed = 1;
    }
    c->s->abort_run = 1;
}

/* Send what remains of f's request; arm EPOLLOUT if the socket is full. */
static int send_rest(struct client *c, struct flow *f, int armed)
{
    uint32_t req = c->s->req;
    ssize_t w = send(f->fd, c->buf, req - f->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
        if (errno != EAGAIN)
            return -1;
        w = 0;
    }
    f->sent += (uint32_t)w;
    int want_out = f->sent < req;
    if (want_out != armed) {
        struct epoll_event ev = {.events = EPOLLIN | (want_out ? EPOLLOUT : 0), .data.ptr = f};
        if (epoll_ctl(c->ep, EPOLL_CTL_MOD, f->fd, &ev) < 0)
            return -1;
    }
    return 0;
}

/* One run's share of transactions on this thread's flows. */
/* Has the server exited?  WNOWAIT leaves it to teardown to reap (a zombie
 * still answers kill(pid, 0), so that test cannot tell). */
static int server_gone(struct state *s)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (s->server <= 0)
        return 1;
    return waitid(P_PID, (id_t)s->server, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == s->server;
}

static void client_run(struct client *c)
{
    struct state *s = c->s;
    const uint32_t req = s->req, resp = s->resp;
    const uint64_t quota = c->quota;
    uint32_t *lat = c->lat;
    uint64_t started = 0, done = 0;
    struct epoll_event evs[MAX_EVENTS];

    c->failed = 0;
    c->err[0] = 0;
    for (int i = 0; i < c->nflows && started < quota; i++, started++) {
        struct flow *f = &c->flows[i];
        f->sent = f->rcvd = 0;
        f->t0 = hl_now_ns();
        if (send_rest(c, f, 0) < 0) {
            client_fail(c, "send on flow %d: %s", i, strerror(errno));
            return;
        }
    }
    while (done < quota) {
        int n = epoll_wait(c->ep, evs, MAX_EVENTS, STALL_TIMEOUT_MS);
        if (n <= 0) {
            if (n < 0 && errno != EINTR) {
                client_fail(c, "epoll_wait: %s", strerror(errno));
                return;
            }
            if (s->abort_run) {
                client_fail(c, "stopped: another client thread failed");
                return;
            }
            if (n == 0 && server_gone(s)) {
                client_fail(c, "the server is gone");
                return;
            }
            continue;
        }
        for (int i = 0; i < n; i++) {
            struct flow *f = evs[i].data.ptr;
            if ((evs[i].events & EPOLLOUT) && f->sent < req) {
                if (send_rest(c, f, 1) < 0) {
                    client_fail(c, "send: %s", strerror(errno));
                    return;
                }
                continue;
            }
            ssize_t r = recv(f->fd, c->buf, min_u32(resp - f->rcvd, IO_CHUNK), MSG_DONTWAIT);
            if (r <= 0) {
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                    continue;
                client_fail(c, "the server %s a connection mid-run (%s)",
                            r == 0 ? "closed" : "broke", r == 0 ? "EOF" : strerror(errno));
                return;
            }
            f->rcvd += (uint32_t)r;
            if (f->rcvd < resp)
                continue;
            uint64_t now = hl_now_ns();
            uint64_t d = now - f->t0;
            lat[done++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
            if (started < quota) {
                started++;
                f->sent = f->rcvd = 0;
                f->t0 = now;
                if (send_rest(c, f, 0) < 0) {
                    client_fail(c, "send: %s", strerror(errno));
                    return;
                }
            }
        }
    }
}

static void *client_thread(void *arg)
{
    struct client *c = arg;
    struct state *s = c->s;
    uint64_t seen = 0;
    hl_pin(&s->env, 1 + c->idx);
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->gen == seen && !s->quit)
            pthread_cond_wait(&s->go, &s->mu);
        seen = s->gen;
        int quit = s->quit;
        pthread_mutex_unlock(&s->mu);
        if (quit)
            return NULL;
        client_run(c);
        pthread_mutex_lock(&s->mu);
        if (--s->pending == 0)
            pthread_cond_signal(&s->done);
        pthread_mutex_unlock(&s->mu);
    }
}

/* ------------------------------------------------------------ percentiles */

/* Hoare-style selection: afterwards a[k] holds the k-th smallest, with
 * nothing larger before it and nothing smaller after it. */
static void select_kth(uint32_t *a, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint32_t x = a[lo + (hi - lo) / 2];
        size_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < x)
                i++;
            while (a[j] > x)
                j--;
            if (i <= j) {
                uint32_t t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

static void add_percentiles(uint32_t *a, size_t n, struct hl_result *res)
{
    static const struct { const char *name; double q; } pct[] = {
        {"lat_p50_ns", 0.50}, {"lat_p90_ns", 0.90}, {"lat_p99_ns", 0.99},
        {"lat_p999_ns", 0.999},
    };
    size_t from = 0;
    for (size_t i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
        /* nearest rank: the smallest value with at least q*n at or below */
        double r = pct[i].q * (double)n;
        size_t k = (size_t)r;
        if ((double)k < r)
            k++;
        k = k ? k - 1 : 0;
        /* each later rank is >= the last: select within the upper part */
        select_kth(a + from, n - from, k - from);
        hl_add_extra(res, pct[i].name, (double)a[k]);
        from = k;
    }
}

/* ------------------------------------------------------------ setup/run */

static int check_nofile(struct state *s, char *err, size_t errlen)
{
    uint64_t total = (uint64_t)s->flows * (uint64_t)s->threads;
    /* worker: what is open now + every client socket + an epoll set per
     * thread + the ready pipe; the server needs less (it closes the rest) */
    uint64_t need = (uint64_t)open_fd_count() + total + (uint64_t)s->threads + 16;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return hl_fail_errno(err, errlen, "getrlimit(RLIMIT_NOFILE)");
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < need) {
        struct rlimit nrl = rl;
        if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need)
            nrl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : rl.rlim_max;
        else
            nrl.rlim_cur = nrl.rlim_max = need;   /* works with CAP_SYS_RESOURCE */
        if (setrlimit(RLIMIT_NOFILE, &nrl) < 0)
            return hl_fail(err, errlen,
                           "RLIMIT_NOFILE too low: %d flows x %d threads need %llu file "
                           "descriptors, the limit is %llu (hard limit %llu) and cannot be "
                           "raised: %s; raise it (ulimit -n, limits.conf) or use fewer flows",
                           s->flows, s->threads, (unsigned long long)need,
                           (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
                           strerror(errno));
        s->old_nofile = rl;
        s->rlimit_changed = 1;
    }
    return 0;
}

static int start_server(struct state *s, int *ready_fd, char *err, size_t errlen)
{
    int total = s->flows * s->threads;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;

    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->listen_fd < 0)
        return hl_fail_errno(err, errlen, "socket");
    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(s->listen_fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        return hl_fail(err, errlen, "bind 127.0.0.1:%d: %s", s->port, strerror(errno));
    socklen_t alen = sizeof(a);
    if (getsockname(s->listen_fd, (struct sockaddr *)&a, &alen) < 0)
        return hl_fail_errno(err, errlen, "getsockname");
    s->port = ntohs(a.sin_port);
    if (listen(s->listen_fd, total < 4096 ? total : 4096) < 0)
        return hl_fail(err, errlen, "listen on 127.0.0.1:%d: %s", s->port, strerror(errno));

    /* Everything the server uses is allocated here, before fork. */
    struct sconn *conns = calloc((size_t)total, sizeof(*conns));
    char *sbuf = malloc(min_u32(s->req > s->resp ? s->req : s->resp, IO_CHUNK));
    int rp[2] = {-1, -1};
    if (!conns || !sbuf || pipe2(rp, O_CLOEXEC) < 0) {
        hl_fail_errno(err, errlen, !conns || !sbuf ? "allocating server state" : "pipe");
        free(conns);
        free(sbuf);
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        hl_fail_errno(err, errlen, "fork");
        close(rp[0]);
        close(rp[1]);
        free(conns);
        free(sbuf);
        return -1;
    }
    if (pid == 0) {
        hl_child_init(&s->env, 1);
        if (getppid() != parent)
            _exit(1);               /* the worker died before PDEATHSIG was set */
        hl_child_keep_fds(s->listen_fd, rp[1]);
        server_main(s, s->listen_fd, rp[1], conns, sbuf, total);
        _exit(0);
    }
    s->server = pid;
    free(conns);                    /* the worker's copies */
    free(sbuf);
    close(rp[1]);
    close(s->listen_fd);            /* the server owns it now; the port stays bound */
    s->listen_fd = -1;
    *ready_fd = rp[0];
    return 0;
}

static int connect_flows(struct state *s, char *err, size_t errlen)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int t = 0; t < s->threads; t++) {
        struct client *c = &s->clients[t];
        c->ep = epoll_create1(EPOLL_CLOEXEC);
        if (c->ep < 0)
            return hl_fail_errno(err, errlen, "epoll_create1");
        for (int i = 0; i < c->nflows; i++) {
            struct flow *f = &c->flows[i];
            f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (f->fd < 0)
                return hl_fail(err, errlen, "socket for flow %d of thread %d: %s", i, t,
                               strerror(errno));
            if (connect(f->fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                return hl_fail(err, errlen, "connect flow %d of thread %d to 127.0.0.1:%d: %s",
                               i, t, s->port, strerror(errno));
            if (set_nonblock(f->fd) < 0)
                return hl_fail_errno(err, errlen, "fcntl O_NONBLOCK");
            struct epoll_event ev = {.events = EPOLLIN, .data.ptr = f};
            if (epoll_ctl(c->ep, EPOLL_CTL_ADD, f->fd, &ev) < 0)
                return hl_fail_errno(err, errlen, "epoll_ctl");
        }
    }
    return 0;
}

/* Close every flow, stop the client threads, kill and reap the server.
 * Idempotent: a failed run calls it, teardown calls it again. */
static void stop_all(struct state *s)
{
    if (s->clients) {
        if (s->sync_init) {
            pthread_mutex_lock(&s->mu);
            s->quit = 1;
            pthread_cond_broadcast(&s->go);
            pthread_mutex_unlock(&s->mu);
            for (int t = 1; t < s->threads; t++)
                if (s->clients[t].started) {
                    pthread_join(s->clients[t].th, NULL);
                    s->clients[t].started = 0;
                }
            pthread_mutex_destroy(&s->mu);
            pthread_cond_destroy(&s->go);
            pthread_cond_destroy(&s->done);
            s->sync_init = 0;
        }
        for (int t = 0; t < s->threads; t++) {
            struct client *c = &s->clients[t];
            for (int i = 0; c->flows && i < c->nflows; i++)
                if (c->flows[i].fd >= 0) {
                    close(c->flows[i].fd);
                    c->flows[i].fd = -1;
                }
            if (c->ep >= 0) {
                close(c->ep);
                c->ep = -1;
            }
        }
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    if (s->server > 0) {
        kill(s->server, SIGKILL);
        waitpid(s->server, NULL, 0);
        s->server = -1;
    }
}

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    int64_t flows = hl_param_int(p, n, "flows", 100);
    int64_t threads = hl_param_int(p, n, "threads", 1);
    int64_t req = hl_param_int(p, n, "request_size", 1);
    int64_t resp = hl_param_int(p, n, "response_size", 1);
    int64_t trans = hl_param_int(p, n, "transactions", 100000);
    int64_t port = hl_param_int(p, n, "port", 0);
    long wmem_max = 0;

    if (flows < 1 || flows > 100000) {
        hl_bad_param(err, errlen, "flows", "must be between 1 and 100000 per thread, got %lld",
                (long long)flows);
        return NULL;
    }
    if (threads < 1 || threads > 256) {
        hl_bad_param(err, errlen, "threads", "must be between 1 and 256, got %lld", (long long)threads);
        return NULL;
    }
    if (flows * threads > 1000000) {
        hl_bad_param(err, errlen, "flows", "%lld flows x %lld threads is more than 1,000,000 connections",
                (long long)flows, (long long)threads);
        return NULL;
    }
    if (trans < 1 || trans > 100000000) {
        hl_bad_param(err, errlen, "transactions", "must be between 1 and 100,000,000, got %lld",
                (long long)trans);
        return NULL;
    }
    if (port < 0 || port > 65535) {
        hl_bad_param(err, errlen, "port", "must be between 0 and 65535, got %lld", (long long)port);
        return NULL;
    }
    for (int i = 0; i < 2; i++) {
        int64_t v = i ? resp : req;
        const char *name = i ? "response_size" : "request_size";
        if (v < 1) {
            hl_bad_param(err, errlen, name, "must be at least 1 byte, got %lld", (long long)v);
            return NULL;
        }
        /* A message must fit one socket send buffer: SO_SNDBUF cannot be
         * set above net.core.wmem_max. */
        if (read_sysctl_long("/proc/sys/net/core/wmem_max", &wmem_max) == 0 &&
            v > wmem_max) {
            hl_bad_param(err, errlen, name, "%lld bytes is larger than a socket send buffer can be "
                    "(net.core.wmem_max = %ld); use at most %ld or raise the sysctl",
                    (long long)v, wmem_max, wmem_max);
            return NULL;
        }
        if (v > UINT32_MAX / 2) {
            hl_bad_param(err, errlen, name, "%lld bytes is too large", (long long)v);
            return NULL;
        }
    }

    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->env = *env;
    s->flows = (int)flows;
    s->threads = (int)threads;
    s->req = (uint32_t)req;
    s->resp = (uint32_t)resp;
    s->transactions = (uint64_t)trans;
    s->port = (int)port;
    s->server = -1;
    s->listen_fd = -1;

    s->clients = calloc((size_t)threads, sizeof(*s->clients));
    s->lat = malloc((size_t)trans * sizeof(*s->lat));
    if (!s->clients || !s->lat) {
        hl_fail_errno(err, errlen, "allocating client state");
        goto fail;
    }
    uint64_t off = 0;
    size_t bufsz = min_u32(s->req > s->resp ? s->req : s->resp, IO_CHUNK);
    for (int t = 0; t < s->threads; t++) {
        struct client *c = &s->clients[t];
        c->s = s;
        c->idx = t;
        c->ep = -1;
        c->nflows = s->flows;
        c->quota = s->transactions / (uint64_t)s->threads +
                   ((uint64_t)t < s->transactions % (uint64_t)s->threads);
        c->lat = s->lat + off;
        off += c->quota;
        c->flows = calloc((size_t)s->flows, sizeof(*c->flows));
        c->buf = calloc(1, bufsz);
        if (!c->flows || !c->buf) {
            hl_fail_errno(err, errlen, "allocating client state");
            goto fail;
        }
        for (int i = 0; i < s->flows; i++)
            c->flows[i].fd = -1;
    }

    if (check_nofile(s, err, errlen) < 0)
        goto fail;

    int ready = -1;
    if (start_server(s, &ready, err, errlen) < 0)
        goto fail;
    if (connect_flows(s, err, errlen) < 0) {
        close(ready);
        goto fail;
    }
    /* The server says when it has accepted every connection. */
    struct pollfd pfd = {.fd = ready, .events = POLLIN};
    int pr;
    do
        pr = poll(&pfd, 1, READY_TIMEOUT_MS);
    while (pr < 0 && errno == EINTR);
    char b = 0;
    ssize_t got = pr > 0 ? read(ready, &b, 1) : -1;
    close(ready);
    if (got != 1) {
        char how[160];
        pid_t pid = s->server;
        hl_reap_child(&s->server, how, sizeof(how));
        hl_fail(err, errlen, "the server (pid %d) did not accept %d connections within %d ms: "
                "it %s", pid, s->flows * s->threads, READY_TIMEOUT_MS, how);
        goto fail;
    }

    if (s->threads > 1) {
        if (pthread_mutex_init(&s->mu, NULL) || pthread_cond_init(&s->go, NULL) ||
            pthread_cond_init(&s->done, NULL)) {
            hl_fail(err, errlen, "pthread mutex/cond init failed");
            goto fail;
        }
        s->sync_init = 1;
        for (int t = 1; t < s->threads; t++) {
            int e = pthread_create(&s->clients[t].th, NULL, client_thread, &s->clients[t]);
            if (e) {
                hl_fail(err, errlen, "pthread_create for client thread %d: %s", t, strerror(e));
                goto fail;
            }
            s->clients[t].started = 1;
        }
    }
    return s;

fail:
    hl_teardown(s);
    return NULL;
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    struct hl_clock clk;

    if (s->broken)
        return hl_fail(err, errlen, "an earlier run failed (%s); no connections left",
                       s->broken_why);
    s->abort_run = 0;

    const int helpers = s->threads - 1;

    hl_clock_start(&clk);
    if (helpers) {
        pthread_mutex_lock(&s->mu);
        s->pending = helpers;
        s->gen++;
        pthread_cond_broadcast(&s->go);
        pthread_mutex_unlock(&s->mu);
    }
    client_run(&s->clients[0]);
    if (helpers) {
        pthread_mutex_lock(&s->mu);
        while (s->pending)
            pthread_cond_wait(&s->done, &s->mu);
        pthread_mutex_unlock(&s->mu);
    }
    hl_clock_stop(&clk, res);

    for (int t = 0; t < s->threads; t++) {
        struct client *c = &s->clients[t];
        if (!c->failed)
            continue;
        char how[160];
        pid_t pid = s->server;
        hl_reap_child(&s->server, how, sizeof(how));
        snprintf(s->broken_why, sizeof(s->broken_why), "client thread %d: %s", t, c->err);
        s->broken = 1;
        stop_all(s);
        return hl_fail(err, errlen, "client thread %d: %s; the server (pid %d) %s", t, c->err,
                       pid, how);
    }
    res->ops = s->transactions;
    res->bytes = s->transactions * ((uint64_t)s->req + s->resp);
    add_percentiles(s->lat, (size_t)s->transactions, res);
    return 0;
}

int hl_pids(void *state, int *pids, int max)
{
    struct state *s = state;
    if (s->server <= 0 || max < 1)
        return 0;
    pids[0] = s->server;
    return 1;
}

void hl_teardown(void *state)
{
    struct state *s = state;
    if (!s)
        return;
    stop_all(s);
    if (s->clients) {
        for (int t = 0; t < s->threads; t++) {
            free(s->clients[t].flows);
            free(s->clients[t].buf);
        }
        free(s->clients);
    }
    free(s->lat);
    if (s->rlimit_changed)
        setrlimit(RLIMIT_NOFILE, &s->old_nofile);
    free(s);
}
