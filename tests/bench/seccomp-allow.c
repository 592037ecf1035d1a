/* seccomp-allow: run a command under a seccomp filter that allows everything, for reference. */

/*
 * usage: seccomp-allow command [args...]
 *
 * What any seccomp filter costs a system call on this kernel, whatever its
 * program: the supervisor's filter is measured against it.
 */

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, allow };

	if (argc < 2) {
		fprintf(stderr, "usage: seccomp-allow command [args...]\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("seccomp-allow");
		return 1;
	}
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
