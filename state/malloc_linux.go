//go:build linux && cgo

package state

/*
#include <malloc.h>
#include <stdlib.h>

// vibe_tune_malloc: see tuneMalloc.
static void vibe_tune_malloc(void) {
#ifdef __GLIBC__
	mallopt(M_ARENA_MAX, 2);
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
}

// vibe_freed_stays mallocs about n bytes in small blocks, as SQLite does, frees them and reports whether
// they stayed with the process (the arena's free memory) rather than going back to the kernel.
static int vibe_freed_stays(size_t n) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
	enum { block = 4000 };
	size_t count = n / block;
	void **blocks = malloc(count * sizeof(void *));
	if (blocks == NULL) return 0;
	for (size_t i = 0; i < count; i++) {
		blocks[i] = malloc(block);
		if (blocks[i] != NULL) ((volatile char *)blocks[i])[0] = 1;
	}
	size_t during = mallinfo2().fordblks;
	for (size_t i = count; i > 0; i--) free(blocks[i - 1]);
	size_t after = mallinfo2().fordblks;
	free(blocks);
	return after >= during + n / 10 * 9;
#else
	return 0;
#endif
}
*/
import "C"

import "sync"

var tuneOnce sync.Once

// tuneMalloc sets the C allocator up for SQLite, whose memory it is, once per process. glibc's malloc gives
// each thread that calls into C an arena of its own (up to 8 per core) and hands the free top of an arena
// back to the kernel as soon as it passes 128 KiB (madvise), while SQLite frees and takes back a
// connection's page cache whenever another connection wrote: in the call bench's profile each timeline step
// gave pages back and faulted them in again, 2.3 ms of the manager's 22 ms per call (a page fault costs about
// 17 µs on these VMs). Two arenas, and up to 64 MiB of free memory kept in each, hold what SQLite uses.
func tuneMalloc() { tuneOnce.Do(func() { C.vibe_tune_malloc() }) }

// freedStays reports whether about n bytes that C malloc'd in small blocks and freed stay with the process
// for the next malloc.
func freedStays(n int) bool { return C.vibe_freed_stays(C.size_t(n)) != 0 }
