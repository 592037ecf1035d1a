/* whoami: what a process became at its exec (gcc -static: out of the preload's reach). */

/*
 * usage: whoami
 * stdout: "pid=P euid=N seccomp=M nnp=K filters=F", M, K and F from
 * /proc/self/status (Seccomp:, NoNewPrivs:, Seccomp_filters:): whether a
 * filter is in place, whether a set-user-ID bit of this file could have
 * taken effect, and how many filters there are.  Exit status 0, 1 if the
 * file is unreadable.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char line[256];
	int seccomp = -1, nnp = -1, filters = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "Seccomp:", 8) == 0)
			sscanf(line + 8, "%d", &seccomp);
		else if (strncmp(line, "NoNewPrivs:", 11) == 0)
			sscanf(line + 11, "%d", &nnp);
		else if (strncmp(line, "Seccomp_filters:", 16) == 0)
			sscanf(line + 16, "%d", &filters);
	}
	fclose(f);
	printf("pid=%d euid=%d seccomp=%d nnp=%d filters=%d\n", (int)getpid(), (int)geteuid(),
	       seccomp, nnp, filters);
	return 0;
}
