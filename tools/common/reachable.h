/* SPDX-License-Identifier: MIT */
/*
 * Make a path reachable by an ordinary user in this process's own mount
 * namespace, for a child of root that is about to drop to uid 65534 and
 * exec a program of the build tree. A checkout in root's home (/root is
 * 0700 on Debian) is closed to that user: the exec, or the dynamic
 * loader's open of libregcache.so.0 through the program's RUNPATH, fails
 * with EACCES. Each directory on the path that others cannot search gets,
 * in a new mount namespace of this process only, a tmpfs of mode 0755
 * over it holding just the next component, bound from the original; so
 * the path names the same files and every other file under that directory
 * stays hidden. Nothing changes for any other process, and nothing is
 * done when every directory is already searchable.
 *
 * Root only (CAP_SYS_ADMIN for unshare and mount). Header-only, as
 * median.h, so that the demo and the tests' launchers share it without
 * linking each other's objects. Returns 0, or -errno with nothing undone
 * (the caller reports and gives up on the unprivileged child).
 */
#ifndef TOOLS_REACHABLE_H
#define TOOLS_REACHABLE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* Cover the directory @dir (whose entry @name is open as @keep) with a
 * tmpfs holding only @name, bound from @keep. @keep must have been opened
 * in this mount namespace: a bind from another one fails with EINVAL. */
static inline int reach_cover(const char *dir, const char *name, int keep)
{
	char at[PATH_MAX], src[64];
	struct stat st;

	if (fstat(keep, &st) ||
	    mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k"))
		return -errno;
	if (snprintf(at, sizeof(at), "%s/%s", strcmp(dir, "/") ? dir : "", name) >=
	    (int)sizeof(at))
		return -ENAMETOOLONG;
	if (S_ISDIR(st.st_mode) ? mkdir(at, 0755) : mknod(at, S_IFREG | 0644, 0))
		return -errno;
	snprintf(src, sizeof(src), "/proc/self/fd/%d", keep);
	if (mount(src, at, NULL, MS_BIND | MS_REC, NULL))
		return -errno;
	return 0;
}

/* Walk the directories of the absolute, resolved @path; with @cover,
 * cover each that others cannot search (reach_cover), else only count
 * them. Returns that count, or -errno. */
static inline int reach_walk(const char *path, int cover)
{
	char rest[PATH_MAX], dir[PATH_MAX] = "/";
	int cur, next, closed = 0, ret = 0;
	char *name, *save = NULL;
	struct stat st;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (name = strtok_r(rest, "/", &save); name && !ret;
	     name = strtok_r(NULL, "/", &save)) {
		next = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(cur, &st)) {
			ret = -errno;
			if (next >= 0)
				close(next);
			break;
		}
		if (!(st.st_mode & S_IXOTH)) {
			closed++;
			if (cover)
				ret = reach_cover(dir, name, next);
		}
		close(cur);
		cur = next;
		if (strlen(dir) + strlen(name) + 2 > sizeof(dir))
			ret = -ENAMETOOLONG;
		else
			strcat(strcat(dir, strcmp(dir, "/") ? "/" : ""), name);
	}
	close(cur);
	return ret < 0 ? ret : closed;
}

/* Make every directory on @path searchable by others, as above: in a new
 * mount namespace (made once, slave to the one before, so that nothing
 * done here reaches any other process) when one is not. */
static inline int reach_path_for_all(const char *path)
{
	static int unshared;
	char real[PATH_MAX];
	int ret;

	if (!realpath(path, real))
		return -errno;
	ret = reach_walk(real, 0);
	if (ret <= 0)
		return ret;
	if (!unshared) {
		if (unshare(CLONE_NEWNS) ||
		    mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
			return -errno;
		unshared = 1;
	}
	ret = reach_walk(real, 1);
	return ret < 0 ? ret : 0;
}

#endif
