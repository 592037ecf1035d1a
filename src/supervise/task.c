/* The supervised tasks: notifications answered, sockets taken, memory read and written. */
#include "supervise/task.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sys/compat.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL /* Linux 6.9: a pidfd for a thread, not only a leader */
#endif

static int listener = -1;

void task_listen(int fd)
{
	listener = fd;
}

void task_reply(uint64_t id, int err)
{
	struct seccomp_notif_resp r = { .id = id, .error = -err };

	/* ENOENT: the task was interrupted or has gone; nothing waits for the answer. */
	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

void task_continue(uint64_t id)
{
	struct seccomp_notif_resp r = { .id = id, .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };

	(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

bool task_id_valid(uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

pid_t task_tgid(pid_t tid)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nTgid:");
	return p ? (pid_t)strtol(p + 6, NULL, 10) : -1;
}

int task_pidfd(pid_t tid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	pid_t tgid;

	if (fd >= 0 || errno != EINVAL)
		return fd;
	tgid = task_tgid(tid);
	return tgid > 0 ? (int)syscall(SYS_pidfd_open, tgid, 0) : -1;
}

int task_getfd(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

/* An address in the task, as a system call argument carries it. */
static void *task_address(uint64_t addr)
{
	return (void *)(uintptr_t)addr;
}

bool task_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { task_address(addr), len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

bool task_write(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { task_address(addr), len };

	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}
