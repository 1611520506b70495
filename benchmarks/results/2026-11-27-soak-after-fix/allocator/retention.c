/* What glibc keeps of frame-sized blocks freed after a burst, against blocks mapped one by one.
 * 16 threads each allocate 20 zeroed 1080p frames (3,110,400 bytes) and a small block they
 * keep (as a decoder keeps its state); then 80% of the frames are freed, every fifth kept in
 * use. Before the burst one large block was allocated and freed, as happens early in any
 * long-running process: glibc then raises its mmap threshold to that block's size and serves
 * frame-sized blocks from its arenas.
 *   cc -O0 -pthread retention.c -o retention && ./retention && ./retention mmap
 * (-O0 keeps the compiler from removing the first block's allocation and free.) */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#define FRAME 3110400
#define THREADS 16
#define PER_THREAD 20
static int mapped;
static void *frames[THREADS][PER_THREAD];
static void *allocate(void) {
    return mapped ? mmap(0, FRAME, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : calloc(1, FRAME);
}
static void release(void *p) { mapped ? munmap(p, FRAME) : free(p); }
static void *decoder(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        frames[t][i] = allocate();
        memset(frames[t][i], 1, FRAME);
        memset(malloc(2048), 1, 2048); /* kept */
    }
    return 0;
}
static long rss_mb(void) {
    long size, resident;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) return -1;
    fclose(f);
    return resident * 4096 / 1048576;
}
int main(int argc, char **argv) {
    mapped = argc > 1;
    void *first = malloc(FRAME);
    memset(first, 0, 4096);
    free(first);
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], 0, decoder, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(threads[t], 0);
    const char *how = mapped ? "a mapping per frame" : "malloc";
    printf("%s: after the burst %ld MB\n", how, rss_mb());
    for (int t = 0; t < THREADS; t++)
        for (int i = 0; i < PER_THREAD; i++)
            if (i % 5) release(frames[t][i]);
    printf("%s: after freeing 80%% of the frames %ld MB\n", how, rss_mb());
    if (!mapped) {
        malloc_trim(0);
        printf("%s: after malloc_trim(0) %ld MB\n", how, rss_mb());
    }
    return 0;
}
