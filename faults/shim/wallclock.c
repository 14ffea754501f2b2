/* The fault lab's wall-clock shim, loaded into a private redis-server with LD_PRELOAD.
 *
 * Redis expires keys by the wall clock (mstime() -> gettimeofday). This shifts what
 * gettimeofday returns by the milliseconds written in the file that LOCKBENCH_WALLCLOCK_FILE
 * names (0 while the file is missing or empty), read on every call so that the lab can jump the
 * clock while the server runs. Nothing else is touched: libfaketime, which replaces every clock
 * call, aborts redis-server built with jemalloc (wolfcw/libfaketime#130).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static long long offset_ms(void)
{
    const char *path = getenv("LOCKBENCH_WALLCLOCK_FILE");
    if (path == NULL)
        return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtoll(buf, NULL, 10);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    static int (*real)(struct timeval *restrict, void *restrict);
    if (real == NULL)
        real = (int (*)(struct timeval *restrict, void *restrict))dlsym(RTLD_NEXT, "gettimeofday");
    int r = real(tv, tz);
    if (r == 0 && tv != NULL) {
        long long us = (long long)tv->tv_sec * 1000000LL + tv->tv_usec + offset_ms() * 1000LL;
        tv->tv_sec = us / 1000000LL;
        tv->tv_usec = us % 1000000LL;
    }
    return r;
}
