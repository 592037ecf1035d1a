/* backoff status's look into /proc: command names, and the processes libbackoff is in. */
#include "tool/status_procs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool/status_format.h"
#include "sys/cookie.h"
#include "sys/text.h"

/* A process libbackoff is in. */
struct proc {
	int pid;
	unsigned uid; /* its effective uid, as ps(1) shows its user */
	const char *engine;
	int supervisor; /* supervise: the supervisor BACKOFF_SUPERVISED names; 0: none named */
	bool shown;
	char comm[STATUS_COMM_MAX];
};

static struct proc *procs;
static size_t procs_len, procs_room;

bool status_procs_comm(int pid, char *buf, size_t size)
{
	char path[64], raw[32];
	struct text t;
	ssize_t n;
	int fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, raw, sizeof(raw) - 1);
	close(fd);
	if (n <= 0)
		return false;
	if (raw[n - 1] == '\n')
		n--;
	text_init(&t, buf, size);
	text_escaped(&t, raw, (size_t)n);
	return true;
}

/*
 * From /proc/@pid/status: its effective uid and its seccomp mode (2: a
 * filter).  False if it cannot be read.
 */
static bool read_status(int pid, unsigned *uid, int *seccomp)
{
	char path[64], *line = NULL;
	bool have_uid = false;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	*seccomp = 0;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "Uid:", 4) == 0) {
			/* Real, effective, saved and file system uids: the second. */
			char *real_end, *end;
			unsigned long effective;

			(void)strtoul(line + 4, &real_end, 10);
			effective = strtoul(real_end, &end, 10);
			have_uid = end != real_end && effective < UINT_MAX;
			*uid = (unsigned)effective;
		} else if (strncmp(line, "Seccomp:", 8) == 0) {
			*seccomp = (int)strtol(line + 8, NULL, 10);
		}
	}
	free(line);
	fclose(f);
	return have_uid;
}

/* Whether the first @n bytes of @s end with @suffix. */
static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* Whether the line @s of a maps file maps a file named libbackoff.so (replaced since, or not). */
static bool maps_library(const char *s)
{
	size_t n = strcspn(s, "\n");

	return ends_with(s, n, "/libbackoff.so") || ends_with(s, n, "/libbackoff.so (deleted)");
}

/*
 * Whether the preload is loaded in @pid: its /proc/PID/maps maps the
 * library.  -1 if the maps cannot be read (another user's process, gone).
 */
static int has_preload(int pid)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && getline(&line, &cap, f) > 0)
		found = maps_library(line);
	free(line);
	fclose(f);
	return found;
}

/*
 * Whether @pid is a supervisor: the launcher or backoff-supervise (forked,
 * not exec'd: their own executable), holding a seccomp filter's listener.
 */
static bool is_supervisor(int pid)
{
	char path[64], exe[PATH_MAX], *base;
	bool listens = false;
	struct dirent *e;
	ssize_t n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	/* Its executable rebuilt or reinstalled while it runs. */
	if (ends_with(exe, (size_t)n, " (deleted)"))
		exe[n - 10] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	if (strcmp(base, "backoff") != 0 && strcmp(base, "backoff-supervise") != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	while (d && !listens && (e = readdir(d)) != NULL) {
		char target[64];

		n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		listens = strcmp(target, "anon_inode:seccomp notify") == 0;
	}
	if (d)
		closedir(d);
	return listens;
}

/*
 * Whether the environment @pid started with says the supervisor engine
 * runs it: BACKOFF_SUPERVISED, the supervisor's pid (*supervisor), which it
 * sets for a tree with a preload in it, or BACKOFF_ENGINE=supervise, which
 * the launcher's --engine supervise leaves (*supervisor 0).
 */
static bool supervised_by(int pid, int *supervisor)
{
	static const char cookie[] = COOKIE_ENV "=";
	char path[64], *entry = NULL;
	bool marked = false;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	*supervisor = 0;
	while (getdelim(&entry, &cap, '\0', f) > 0) {
		if (strncmp(entry, cookie, sizeof(cookie) - 1) == 0) {
			long sup = strtol(entry + sizeof(cookie) - 1, NULL, 10);

			*supervisor = sup > 0 && sup <= INT_MAX ? (int)sup : 0;
			marked = true;
		} else if (strcmp(entry, "BACKOFF_ENGINE=supervise") == 0) {
			marked = true;
		}
	}
	free(entry);
	fclose(f);
	return marked;
}

/* Process @pid of user @uid into the list, as @engine.  -1 (ENOMEM), else 0. */
static int add(int pid, unsigned uid, const char *engine, int supervisor)
{
	struct proc *p;

	if (procs_len == procs_room) {
		size_t room = procs_room ? procs_room * 2 : 64;

		p = realloc(procs, room * sizeof(*procs));
		if (!p)
			return -1;
		procs = p;
		procs_room = room;
	}
	p = &procs[procs_len];
	p->pid = pid;
	p->uid = uid;
	p->engine = engine;
	p->supervisor = supervisor;
	p->shown = true;
	/* Gone meanwhile: left out, as any process whose entries cannot be read. */
	if (status_procs_comm(pid, p->comm, sizeof(p->comm)))
		procs_len++;
	return 0;
}

/*
 * Process @pid into the list if libbackoff is in it and it is @uid's
 * (@every_user: anyone's).  -1 (ENOMEM), else 0.
 */
static int look_at(int pid, bool every_user, unsigned uid)
{
	unsigned owner = 0;
	int seccomp, preload, supervisor;

	if (!read_status(pid, &owner, &seccomp) || (!every_user && owner != uid))
		return 0;
	preload = has_preload(pid);
	if (preload < 0)
		return 0;
	if (preload)
		return add(pid, owner, "preload", 0);
	if (is_supervisor(pid))
		return add(pid, owner, "supervisor", 0);
	/* Under a seccomp filter, and started by the supervisor engine: by whom, checked after. */
	if (seccomp == 2 && supervised_by(pid, &supervisor))
		return add(pid, owner, "supervise", supervisor);
	return 0;
}

/*
 * Whether a supervisor listed runs process @p, which says the supervisor
 * engine started it: the one it names, or else one of its user's (the
 * kernel shows no link between a filter and its listener).  Without one,
 * the supervisor could not start (the filter is another's, a container's)
 * or has ended: the program runs without retries.
 */
static bool has_supervisor(const struct proc *p)
{
	size_t i;

	for (i = 0; i < procs_len; i++)
		if (strcmp(procs[i].engine, "supervisor") == 0 &&
		    (p->supervisor ? procs[i].pid == p->supervisor : procs[i].uid == p->uid))
			return true;
	return false;
}

static int by_pid(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static void print_proc(const struct proc *p, bool json)
{
	char user[64], line[STATUS_COMM_MAX * 2 + 256];
	struct text t;

	status_format_user(p->uid, user, sizeof(user));
	if (!json) {
		printf("%7d  %-12s  %-10s  %s\n", p->pid, user, p->engine, p->comm);
		return;
	}
	text_init(&t, line, sizeof(line));
	text_str(&t, "{\"pid\":");
	text_u64(&t, (uint64_t)p->pid);
	text_str(&t, ",\"user\":");
	text_json_string(&t, user, strlen(user));
	text_str(&t, ",\"engine\":\"");
	text_str(&t, p->engine);
	text_str(&t, "\",\"command\":");
	text_json_string(&t, p->comm, strlen(p->comm));
	text_str(&t, "}");
	puts(line);
}

int status_procs_show(bool json, bool every_user, unsigned uid)
{
	size_t i, shown = 0;
	struct dirent *e;
	DIR *d = opendir("/proc");

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end != '\0' || pid <= 0 || pid > INT_MAX)
			continue;
		if (look_at((int)pid, every_user, uid) != 0) {
			closedir(d);
			errno = ENOMEM;
			return -1;
		}
	}
	closedir(d);
	for (i = 0; i < procs_len; i++) {
		if (strcmp(procs[i].engine, "supervise") == 0)
			procs[i].shown = has_supervisor(&procs[i]);
		shown += procs[i].shown;
	}
	/* /proc lists them by pid today: sorted here all the same, as this command says. */
	if (procs_len)
		qsort(procs, procs_len, sizeof(procs[0]), by_pid);
	if (!json && shown == 0)
		printf("no process with libbackoff in it\n");
	else if (!json)
		printf("%7s  %-12s  %-10s  %s\n", "PID", "USER", "ENGINE", "COMMAND");
	for (i = 0; i < procs_len; i++)
		if (procs[i].shown)
			print_proc(&procs[i], json);
	return 0;
}
