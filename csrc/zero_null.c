/*
 * zero_null: read() block_size bytes from /dev/zero and write() them to
 * /dev/null, count times, as `dd if=/dev/zero of=/dev/null count=1M` does
 * (the dd zero-to-null test).  Also reports the user and system CPU time of the loop.
 */
#include "hotloop.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

struct state {
    int zero, null;
    size_t block;
    uint64_t count;
    uint64_t spin;                  /* known extra work per op, for sensitivity studies */
    char *buf;
};

void hl_teardown(void *state);

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    (void)env;                      /* one process: the worker pins itself */
    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->zero = s->null = -1;
    s->block = (size_t)hl_param_int(p, n, "block_size", 512);
    s->count = (uint64_t)hl_param_int(p, n, "count", 1048576);
    s->spin = (uint64_t)hl_param_int(p, n, "spin", 0);
    if (!(s->buf = malloc(s->block)))
        hl_fail_errno(err, errlen, "malloc");
    else if ((s->zero = open("/dev/zero", O_RDONLY | O_CLOEXEC)) < 0)
        hl_fail_errno(err, errlen, "open /dev/zero");
    else if ((s->null = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
        hl_fail_errno(err, errlen, "open /dev/null");
    else
        return s;
    hl_teardown(s);
    return NULL;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    struct rusage before, after;
    struct hl_clock c;
    uint64_t i;
    ssize_t r = 0, w = 0;

    getrusage(RUSAGE_SELF, &before);
    hl_clock_start(&c);
    if (!s->spin) {
        for (i = 0; i < s->count; i++) {
            r = read(s->zero, s->buf, s->block);
            if (r != (ssize_t)s->block)
                break;
            w = write(s->null, s->buf, s->block);
            if (w != (ssize_t)s->block)
                break;
        }
    } else {                        /* a separate loop: spin = 0 pays nothing for it */
        for (i = 0; i < s->count; i++) {
            r = read(s->zero, s->buf, s->block);
            if (r != (ssize_t)s->block)
                break;
            w = write(s->null, s->buf, s->block);
            if (w != (ssize_t)s->block)
                break;
            for (uint64_t k = 0; k < s->spin; k++)
                __asm__ __volatile__("" ::: "memory");
        }
    }
    hl_clock_stop(&c, res);
    getrusage(RUSAGE_SELF, &after);

    if (i < s->count)
        return r != (ssize_t)s->block
            ? hl_fail(err, errlen, "read /dev/zero returned %zd at block %llu: %s", r,
                      (unsigned long long)i, r < 0 ? strerror(errno) : "short read")
            : hl_fail(err, errlen, "write /dev/null returned %zd at block %llu: %s", w,
                      (unsigned long long)i, w < 0 ? strerror(errno) : "short write");
    res->ops = s->count;
    res->bytes = s->count * s->block;
    hl_add_extra(res, "user_s", tv_s(after.ru_utime) - tv_s(before.ru_utime));
    hl_add_extra(res, "sys_s", tv_s(after.ru_stime) - tv_s(before.ru_stime));
    return 0;
}

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
    if (s->zero >= 0)
        close(s->zero);
    if (s->null >= 0)
        close(s->null);
    free(s->buf);
    free(s);
}
