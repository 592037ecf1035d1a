/* spawn: start a program through one call of the exec family or posix_spawn, as a parent would. */

/*
 * usage: spawn MODE PROGRAM [ARGS...]
 * MODE: execve, execv, execvp, execvpe, execl, execle, execlp, fexecve,
 * execveat (PROGRAM's name relative to its directory, open close-on-exec),
 * execveat-fd (the file itself: AT_EMPTY_PATH) (this process becomes
 * PROGRAM), posix_spawn, posix_spawnp, vfork (a child that
 * execs with execve; the parent waits).  The exec modes pass the environment
 * on as it is; execvp, execvpe, execlp and posix_spawnp search PATH for
 * PROGRAM.  The spawning modes print "spawned PID" and exit with the child's
 * status, or 128 + its signal.  At most 8 ARGS for the execl modes.
 * A failed call: "spawn: MODE: ERROR" on stderr, exit status 127.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int wait_child(pid_t pid)
{
	int status;

	printf("spawned %d\n", (int)pid);
	fflush(stdout);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 127;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	char *a[9] = { 0 };
	const char *mode = argc > 2 ? argv[1] : "";
	char **prog = argv + 2;
	pid_t pid;
	int i, rc = -1;

	if (argc < 3) {
		fputs("usage: spawn MODE PROGRAM [ARGS...]\n", stderr);
		return 2;
	}
	for (i = 0; i < 9 && i + 3 < argc; i++)
		a[i] = argv[i + 3];
	fflush(stdout);
	if (strcmp(mode, "execve") == 0) {
		execve(prog[0], prog, environ);
	} else if (strcmp(mode, "execv") == 0) {
		execv(prog[0], prog);
	} else if (strcmp(mode, "execvp") == 0) {
		execvp(prog[0], prog);
	} else if (strcmp(mode, "execvpe") == 0) {
		execvpe(prog[0], prog, environ);
	} else if (strcmp(mode, "execl") == 0) {
		execl(prog[0], prog[0], a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
		      (char *)NULL);
	} else if (strcmp(mode, "execle") == 0) {
		execle(prog[0], prog[0], a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
		       (char *)NULL, environ);
	} else if (strcmp(mode, "execlp") == 0) {
		execlp(prog[0], prog[0], a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
		       (char *)NULL);
	} else if (strcmp(mode, "fexecve") == 0) {
		int fd = open(prog[0], O_RDONLY);

		if (fd >= 0)
			fexecve(fd, prog, environ);
	} else if (strcmp(mode, "execveat") == 0) {
		char *slash = strrchr(prog[0], '/');
		int dir;

		if (slash) {
			*slash = '\0';
			dir = open(prog[0][0] ? prog[0] : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			*slash = '/';
			if (dir >= 0)
				execveat(dir, slash + 1, prog, environ, 0);
		}
	} else if (strcmp(mode, "execveat-fd") == 0) {
		int fd = open(prog[0], O_RDONLY);

		if (fd >= 0)
			execveat(fd, "", prog, environ, AT_EMPTY_PATH);
	} else if (strcmp(mode, "posix_spawn") == 0) {
		rc = posix_spawn(&pid, prog[0], NULL, NULL, prog, environ);
	} else if (strcmp(mode, "posix_spawnp") == 0) {
		rc = posix_spawnp(&pid, prog[0], NULL, NULL, prog, environ);
	} else if (strcmp(mode, "vfork") == 0) {
		pid = vfork();
		if (pid == 0) {
			execve(prog[0], prog, environ);
			_exit(127);
		}
		rc = pid < 0 ? errno : 0;
	} else {
		fprintf(stderr, "spawn: unknown mode %s\n", mode);
		return 2;
	}
	if (rc == 0)
		return wait_child(pid);
	fprintf(stderr, "spawn: %s: %s\n", mode, strerror(rc > 0 ? rc : errno));
	return 127;
}
