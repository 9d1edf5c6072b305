/* tests/integration/synced_watch.c - a fault layer for the power-loss run of the crash test,
 * preloaded into the daemon (LD_PRELOAD): it remembers how much of one file is durable. Each
 * fsync or fdatasync that succeeds on a descriptor whose file's path starts with
 * $NVME_EMU_SYNCED_WATCH (the file itself, or its temporary copy before a rename) records
 * "<inode> <size>" in $NVME_EMU_SYNCED_WATCH.synced. At the simulated power cut the test cuts
 * the file back to that size (the page cache lost what was appended since), or to nothing when
 * the file is another inode than the last one synced (renamed without being synced). */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void synced_watch_note(int fd)
{
	const char *watch = getenv("NVME_EMU_SYNCED_WATCH");
	char link[64], path[4096], out[64], rec[4200], tmp[4200];
	struct stat st;
	ssize_t n;
	int ofd;

	if (!watch || !*watch)
		return;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return;
	path[n] = '\0';
	if (strncmp(path, watch, strlen(watch)) || fstat(fd, &st))
		return;
	snprintf(tmp, sizeof(tmp), "%s.synced.tmp", watch);
	snprintf(rec, sizeof(rec), "%s.synced", watch);
	n = snprintf(out, sizeof(out), "%llu %lld\n", (unsigned long long)st.st_ino,
		     (long long)st.st_size);
	/* Not synced itself: the test reads it after the kill, the kernel still has it. Renamed
	 * into place, so a kill never leaves it half written. */
	ofd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (ofd < 0)
		return;
	if (write(ofd, out, (size_t)n) != n || rename(tmp, rec))
		(void)unlink(tmp);
	close(ofd);
}

int fdatasync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	rc = real(fd);
	if (!rc)
		synced_watch_note(fd);
	return rc;
}

int fsync(int fd)
{
	static int (*real)(int);
	int rc;

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	rc = real(fd);
	if (!rc)
		synced_watch_note(fd);
	return rc;
}
