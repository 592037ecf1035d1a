/* backoff-supervise: the supervisor engine's program, and the launcher's work after its options. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "supervise/launch.h"
#include "supervise/run.h"
#include "sys/elf.h"

static const char usage[] =
	"usage: backoff-supervise [--preload VALUE] [--] command [args...]\n"
	"       backoff-supervise --inspect FILE\n"
	"       backoff-supervise --launch LIBRARY -- command [args...]\n"
	"       backoff-supervise --exec FILE -- argv0 [args...]\n"
	"Runs the command under libbackoff's supervisor engine: its connect() calls, the\n"
	"system calls of Go and static programs included, are retried as BACKOFF_* says.\n"
	"The command keeps this process's PID.  --preload sets LD_PRELOAD for it as well.\n"
	"--inspect prints what FILE is: script, dynamic, static, go, foreign (the other C\n"
	"library's), engine (libbackoff's own), setuid or unknown.\n"
	"--launch does what scripts/backoff does after its options, LIBRARY as it found it.\n"
	"--exec runs FILE with the words after -- as its argv, for the preload's exec hooks.\n";

/* --inspect: the launcher's question, answered with the same code the supervisor uses. */
static int inspect(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0 && ((st.st_mode & (S_ISUID | S_ISGID)) ||
				     getxattr(path, "security.capability", NULL, 0) > 0)) {
		puts("setuid");
		return 0;
	}
	puts(elf_kind_name(elf_inspect(path)));
	return 0;
}

/* Run @command under the supervisor engine (LD_PRELOAD=@preload too, if not NULL). */
static int supervise(const char *preload, char **command)
{
	return supervise_run(preload, NULL, command);
}

int main(int argc, char **argv)
{
	const char *preload = NULL;
	int i = 1;

	if (argc == 3 && strcmp(argv[1], "--inspect") == 0)
		return inspect(argv[2]);
	/* scripts/backoff, its options read: everything else it did, without a fork. */
	if (argc >= 5 && strcmp(argv[1], "--launch") == 0 && strcmp(argv[3], "--") == 0)
		return launch(argv[2], argv + 4, supervise);
	/* A preload's exec hook: argv[0] of the program is its own (busybox reads it). */
	if (argc >= 5 && strcmp(argv[1], "--exec") == 0 && strcmp(argv[3], "--") == 0)
		return supervise_run(NULL, argv[2], argv + 4);
	if (i + 1 < argc && strcmp(argv[i], "--preload") == 0) {
		preload = argv[i + 1];
		i += 2;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc || (argv[i][0] == '-' && argv[i][1] != '\0')) {
		fputs(usage, stderr);
		return 2;
	}
	return supervise(preload, argv + i);
}
