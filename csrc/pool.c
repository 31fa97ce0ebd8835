/*
 * pool: the page_pool micro-benchmarks of the page_pool bench report (the kernel's time_bench
 * / bench_page_pool_simple: fast_path, ptr_ring, slow, each reported in
 * cycles and ns per op), rebuilt as an object pool in user space.
 *
 * The pool is modelled on page_pool: a small per-CPU style array cache in
 * front of a bounded ring of pointers, objects being page-sized slots.
 *
 *   mode = fast_path  alloc pops the array cache, recycle pushes it back
 *                     (page_pool_alloc + page_pool_recycle_direct): no
 *                     atomics, no locks
 *        | ptr_ring   alloc pops the array cache, refilled in batches of 64
 *                     from the ring; free produces into the ring (the path
 *                     of a page returned outside NAPI context); producer and
 *                     consumer are the same thread, as in the kernel test
 *        | slow       every op maps a fresh page (mmap MAP_POPULATE: page
 *                     allocator + zeroing + page table) and unmaps it
 *                     (munmap: free + TLB flush); no cache at all
 *        | baseline   the empty loop, a compiler barrier per iteration, so
 *                     the loop's own cost per op is visible
 *   loops     ops per run; 0 = 10,000,000 (100,000 for slow)
 *   ring_size slots in the ring (ptr_ring mode; also the number of objects)
 *
 * One op = one alloc + one free.  Metric ns/op; the TSC gives cycles/op.
 * alloc/free are out-of-line (noinline) like the kernel's exported page_pool
 * calls, so the compiler cannot fold an alloc/free pair into nothing.
 */
#include "hotloop.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define CACHE_SIZE 128          /* like PP_ALLOC_CACHE_SIZE */
#define CACHE_REFILL 64         /* like PP_ALLOC_CACHE_REFILL */
#define DEFAULT_LOOPS 10000000ull
#define DEFAULT_SLOW_LOOPS 100000ull

enum mode { MODE_FAST, MODE_RING, MODE_SLOW, MODE_BASELINE };

/*
 * A bounded single-producer/single-consumer ring of pointers in the manner
 * of the kernel's ptr_ring: a NULL slot is empty, so producer and consumer
 * share no index, only the slots.  Release stores publish a slot, acquire
 * loads take it, so it is correct across two threads; here both ends run in
 * one thread, as in page_pool's recycle test.
 */
struct ring {
    void **slot;
    uint32_t size;
    uint32_t prod;              /* producer's next slot */
    uint32_t cons;              /* consumer's next slot */
};

static inline int ring_produce(struct ring *r, void *p)
{
    void **s = &r->slot[r->prod];
    if (__atomic_load_n(s, __ATOMIC_RELAXED))
        return -1;              /* full */
    __atomic_store_n(s, p, __ATOMIC_RELEASE);
    if (++r->prod == r->size)
        r->prod = 0;
    return 0;
}

static inline void *ring_consume(struct ring *r)
{
    void **s = &r->slot[r->cons];
    void *p = __atomic_load_n(s, __ATOMIC_ACQUIRE);
    if (!p)
        return NULL;            /* empty */
    __atomic_store_n(s, NULL, __ATOMIC_RELEASE);
    if (++r->cons == r->size)
        r->cons = 0;
    return p;
}

struct pool {
    uint32_t count;             /* objects in the cache */
    void *cache[CACHE_SIZE];
    struct ring ring;
};

struct state {
    enum mode mode;
    uint64_t loops;
    size_t page;
    struct pool pool;
    char *objs;                 /* ring_size page-sized slots, PROT_NONE */
    size_t objs_len;
};

/* Refill the cache from the ring; NULL when both are empty. */
static __attribute__((noinline)) void *pool_alloc_slow(struct pool *pp)
{
    void *p;
    while (pp->count < CACHE_REFILL && (p = ring_consume(&pp->ring)))
        pp->cache[pp->count++] = p;
    return pp->count ? pp->cache[--pp->count] : NULL;
}

static __attribute__((noinline)) void *pool_alloc(struct pool *pp)
{
    if (__builtin_expect(pp->count != 0, 1))
        return pp->cache[--pp->count];
    return pool_alloc_slow(pp);
}

/* Return to the cache (direct recycle); the ring when the cache is full.
 * Every object fits in the ring (objects == ring_size), so nothing drops. */
static __attribute__((noinline)) void pool_recycle_direct(struct pool *pp, void *p)
{
    if (__builtin_expect(pp->count < CACHE_SIZE, 1)) {
        pp->cache[pp->count++] = p;
        return;
    }
    ring_produce(&pp->ring, p);
}

/* Return through the ring, as a page freed outside the pool's context. */
static __attribute__((noinline)) void pool_put_ring(struct pool *pp, void *p)
{
    ring_produce(&pp->ring, p);
}

void hl_teardown(void *state);

void *hl_setup(const struct hl_param *p, int n, const struct hl_env *env,
               char *err, size_t errlen)
{
    (void)env;                  /* one process: the worker pins itself */
    const char *mode = hl_param_str(p, n, "mode", "fast_path");
    int64_t loops = hl_param_int(p, n, "loops", 0);
    int64_t ring_size = hl_param_int(p, n, "ring_size", 1024);
    enum mode m;

    if (!strcmp(mode, "fast_path"))
        m = MODE_FAST;
    else if (!strcmp(mode, "ptr_ring"))
        m = MODE_RING;
    else if (!strcmp(mode, "slow"))
        m = MODE_SLOW;
    else if (!strcmp(mode, "baseline"))
        m = MODE_BASELINE;
    else {
        hl_bad_param(err, errlen, "mode", "unknown mode '%s' (fast_path, ptr_ring, slow, baseline)",
                mode);
        return NULL;
    }
    if (loops < 0) {
        hl_bad_param(err, errlen, "loops", "must be 0 (the mode's default) or more, got %lld",
                (long long)loops);
        return NULL;
    }
    if (ring_size < 1 || ring_size > (1 << 24)) {
        hl_bad_param(err, errlen, "ring_size", "must be between 1 and %d, got %lld%s", 1 << 24,
                (long long)ring_size, ring_size == 0 ? " (a ring of size 0 holds nothing)" : "");
        return NULL;
    }

    struct state *s = calloc(1, sizeof(*s));
    if (!s) {
        hl_fail_errno(err, errlen, "calloc");
        return NULL;
    }
    s->mode = m;
    s->loops = loops ? (uint64_t)loops : m == MODE_SLOW ? DEFAULT_SLOW_LOOPS : DEFAULT_LOOPS;
    long pg = sysconf(_SC_PAGESIZE);
    s->page = pg > 0 ? (size_t)pg : 4096;
    s->objs = MAP_FAILED;

    if (m == MODE_FAST || m == MODE_RING) {
        /* The objects are addresses only, never touched: reserve them
         * PROT_NONE so they cost no memory and a stray access faults. */
        s->objs_len = (size_t)ring_size * s->page;
        s->objs = mmap(NULL, s->objs_len, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (s->objs == MAP_FAILED) {
            hl_fail_errno(err, errlen, "mmap of the pool's objects");
            hl_teardown(s);
            return NULL;
        }
        s->pool.ring.size = (uint32_t)ring_size;
        s->pool.ring.slot = calloc((size_t)ring_size, sizeof(void *));
        if (!s->pool.ring.slot) {
            hl_fail_errno(err, errlen, "calloc of the ring");
            hl_teardown(s);
            return NULL;
        }
        for (int64_t i = 0; i < ring_size; i++)
            ring_produce(&s->pool.ring, s->objs + (size_t)i * s->page);
    }
    return s;
}

int hl_run(void *state, struct hl_result *res, char *err, size_t errlen)
{
    struct state *s = state;
    struct pool *pp = &s->pool;
    struct hl_clock c;
    const uint64_t n = s->loops;
    const size_t page = s->page;
    uint64_t i = 0;

    switch (s->mode) {
    case MODE_FAST:
        hl_clock_start(&c);
        for (i = 0; i < n; i++) {
            void *obj = pool_alloc(pp);
            if (__builtin_expect(!obj, 0))
                break;
            pool_recycle_direct(pp, obj);
        }
        hl_clock_stop(&c, res);
        if (i < n)
            return hl_fail(err, errlen, "fast_path: pool empty at op %llu",
                           (unsigned long long)i);
        break;
    case MODE_RING:
        hl_clock_start(&c);
        for (i = 0; i < n; i++) {
            void *obj = pool_alloc(pp);
            if (__builtin_expect(!obj, 0))
                break;
            pool_put_ring(pp, obj);
        }
        hl_clock_stop(&c, res);
        if (i < n)
            return hl_fail(err, errlen, "ptr_ring: pool empty at op %llu",
                           (unsigned long long)i);
        break;
    case MODE_SLOW: {
        void *pg = NULL;
        hl_clock_start(&c);
        for (i = 0; i < n; i++) {
            pg = mmap(NULL, page, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            if (__builtin_expect(pg == MAP_FAILED, 0))
                break;
            munmap(pg, page);
        }
        hl_clock_stop(&c, res);
        if (i < n)
            return hl_fail(err, errlen, "slow: mmap of a page failed at op %llu: %s",
                           (unsigned long long)i, strerror(errno));
        break;
    }
    case MODE_BASELINE:
        hl_clock_start(&c);
        for (i = 0; i < n; i++)
            __asm__ __volatile__("" ::: "memory");
        hl_clock_stop(&c, res);
        break;
    default:
        return hl_fail(err, errlen, "mode: bad state");
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
    struct state *s = state;
    if (!s)
        return;
    if (s->objs != MAP_FAILED)
        munmap(s->objs, s->objs_len);
    free(s->pool.ring.slot);
    free(s);
}
