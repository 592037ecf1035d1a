/* The BPF program of the supervisor engine and its installation. */
#include "supervise/filter.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sys/cookie.h"

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#else
#define FILTER_ARCH 0 /* unknown here: filter_install refuses, and the preload alone retries */
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LO 0
#define HI 4
#else
#define LO 4
#define HI 0
#endif

#define ARG(i, half) ((__u32)(offsetof(struct seccomp_data, args) + (size_t)(i)*8 + (half)))
#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/*
 * The syscall number is tested first, so an unrelated system call costs four
 * instructions.  A connect whose 4th and 5th arguments hold the cookie is the
 * preload's own and goes straight to the kernel, and so does a
 * getsockopt(SO_ERROR) whose 6th holds it (a connection the preload made).
 * Another architecture's calls (x32, i386 on x86_64) are let through: the
 * supervisor does not cover them.
 */
static struct sock_filter program[] = {
	/* 0 */ LD(offsetof(struct seccomp_data, arch)),
	/* 1 */ JEQ(FILTER_ARCH, 0, 3),
	/* 2 */ LD(offsetof(struct seccomp_data, nr)),
	/* 3 */ JEQ(__NR_connect, 2, 0),
	/* 4 */ JEQ(__NR_getsockopt, 10, 0),
	/* 5 */ RET(SECCOMP_RET_ALLOW),
	/* 6 */ LD(ARG(3, LO)),
	/* 7 */ JEQ((__u32)COOKIE_ARG3, 0, 6),
	/* 8 */ LD(ARG(3, HI)),
	/* 9 */ JEQ((__u32)(COOKIE_ARG3 >> 32), 0, 4),
	/* 10 */ LD(ARG(4, LO)),
	/* 11 */ JEQ((__u32)COOKIE_ARG4, 0, 2),
	/* 12 */ LD(ARG(4, HI)),
	/* 13 */ JEQ((__u32)(COOKIE_ARG4 >> 32), 9, 0),
	/* 14 */ RET(SECCOMP_RET_USER_NOTIF),
	/* 15 */ LD(ARG(1, LO)),
	/* 16 */ JEQ(SOL_SOCKET, 0, 6),
	/* 17 */ LD(ARG(2, LO)),
	/* 18 */ JEQ(SO_ERROR, 0, 4),
	/* 19 */ LD(ARG(5, LO)),
	/* 20 */ JEQ((__u32)COOKIE_ARG5, 0, 3),
	/* 21 */ LD(ARG(5, HI)),
	/* 22 */ JEQ((__u32)(COOKIE_ARG5 >> 32), 0, 1),
	/* 23 */ RET(SECCOMP_RET_ALLOW),
	/* 24 */ RET(SECCOMP_RET_USER_NOTIF),
};

int filter_install(const char **why)
{
	struct sock_fprog prog = { sizeof(program) / sizeof(program[0]), program };
	int fd;

	if (FILTER_ARCH == 0) {
		*why = "this architecture";
		errno = ENOSYS;
		return -1;
	}
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	if (fd >= 0)
		return fd;
	/* Without CAP_SYS_ADMIN the kernel asks for no_new_privs first. */
	if (errno != EACCES) {
		*why = "seccomp";
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		*why = "prctl(PR_SET_NO_NEW_PRIVS)";
		return -1;
	}
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	if (fd < 0)
		*why = "seccomp";
	return fd;
}
