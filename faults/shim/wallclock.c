/* The fault lab's wall-clock shim, loaded into a private server with LD_PRELOAD.
 *
 * Redis expires keys by the wall clock (mstime() -> gettimeofday); the JVM reads it with
 * clock_gettime(CLOCK_REALTIME). This shifts both by the milliseconds written in the file that
 * LOCKBENCH_WALLCLOCK_FILE names (0 while the file is missing or empty), read on every call so
 * that the lab can jump the clock while the server runs. The clocks are read with raw system
 * calls, not through dlsym: nothing here can recurse into an allocator that reads the clock
 * (libfaketime, which wraps every clock call, aborts redis-server built with jemalloc,
 * wolfcw/libfaketime#130). CLOCK_MONOTONIC and the others are left alone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
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

static int realtime(clockid_t clock, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, clock, ts);
}

static void shift(struct timespec *ts)
{
    long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ms() * 1000000LL;
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int r = realtime(clock, ts);
    if (r == 0 && ts != NULL && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE))
        shift(ts);
    return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    if (tv == NULL)
        return 0;
    struct timespec ts;
    int r = realtime(CLOCK_REALTIME, &ts);
    if (r != 0)
        return r;
    shift(&ts);
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}
