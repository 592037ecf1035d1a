/* deny-syscall: run a command under a seccomp filter that refuses one system call with EPERM. */

/*
 * usage: deny-syscall pidfd_getfd|process_vm_readv|netlink-socket -- command [args...]
 *
 * Emulates what a container's default seccomp profile does without
 * CAP_SYS_PTRACE (Docker's refuses pidfd_getfd and process_vm_readv then), or
 * a unit's RestrictAddressFamilies without AF_NETLINK (netlink-socket:
 * socket(AF_NETLINK, ...) refused).  Sets no_new_privs first, as any
 * unprivileged filter must.
 */

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "deny-syscall: add this architecture's AUDIT_ARCH"
#endif

int main(int argc, char **argv)
{
	unsigned nr, arg0 = 0;
	int by_arg = 0;

	if (argc < 4 || strcmp(argv[2], "--") != 0) {
		fprintf(stderr,
			"usage: deny-syscall pidfd_getfd|process_vm_readv|netlink-socket -- "
			"command [args...]\n");
		return 2;
	}
	if (strcmp(argv[1], "pidfd_getfd") == 0) {
		nr = SYS_pidfd_getfd;
	} else if (strcmp(argv[1], "process_vm_readv") == 0) {
		nr = SYS_process_vm_readv;
	} else if (strcmp(argv[1], "netlink-socket") == 0) {
		nr = SYS_socket;
		arg0 = AF_NETLINK;
		by_arg = 1;
	} else {
		fprintf(stderr, "deny-syscall: unknown system call '%s'\n", argv[1]);
		return 2;
	}
	{
		struct sock_filter code[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 3),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, arg0, 0, by_arg ? 1 : 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { (unsigned short)(sizeof(code) / sizeof(code[0])), code };

		if (!by_arg) /* any arguments: the jump above lands on the refusal either way */
			code[6] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
			perror("deny-syscall: seccomp");
			return 1;
		}
	}
	execvp(argv[3], argv + 3);
	fprintf(stderr, "deny-syscall: %s: %s\n", argv[3], strerror(errno));
	return 127;
}
