/* What kind of program a file is, for the choice of engine at each exec. */
#ifndef BACKOFF_SYS_ELF_H
#define BACKOFF_SYS_ELF_H

#include <stdbool.h>

enum elf_kind {
	ELF_KIND_UNKNOWN, /* unreadable, or neither ELF nor script */
	ELF_KIND_SCRIPT,  /* starts with #! */
	ELF_KIND_DYNAMIC, /* ELF with an interpreter (PT_INTERP): the preload reaches it */
	ELF_KIND_STATIC,  /* ELF without one: only the supervisor reaches it */
	ELF_KIND_GO,	  /* a Go program, static or not: it makes its own system calls */
	ELF_KIND_FOREIGN, /* dynamic, but its loader is the other C library's (musl, glibc) */
	ELF_KIND_ENGINE,  /* the launcher or the supervisor: it sets up its engine itself */
};

/*
 * The section that marks libbackoff's own programs (ELF_KIND_ENGINE): the
 * launcher started by a preloaded process must not run under a supervisor of
 * its own, which would leave its command none.
 */
#define ELF_ENGINE_SECTION ".libbackoff.engine"

/*
 * The kind of the file open at @fd; reads headers only (pread), into stack
 * buffers: async-signal-safe.  errno may change.
 */
enum elf_kind elf_inspect_fd(int fd);

/* The kind of the file at @path. */
enum elf_kind elf_inspect(const char *path);

/*
 * What exec(@path) would run: the kind of @path, or for a script that of its
 * #! interpreter (one level; a script again if that is a script too).
 * *@privileged: whether @path is set-user-ID, set-group-ID or has file
 * capabilities, which a seccomp filter installed as non-root would void.
 * Async-signal-safe (system calls and stack buffers); errno may change.
 */
enum elf_kind elf_exec_kind(const char *path, bool *privileged);

/* Whether the file open at @fd is set-user-ID, set-group-ID or has file capabilities. */
bool elf_is_privileged_fd(int fd);

/*
 * Whether a program of @kind is out of this build's preload: it makes system
 * calls that only the supervisor sees, or this build cannot be loaded into it.
 */
static inline bool elf_kind_needs_supervisor(enum elf_kind kind)
{
	return kind == ELF_KIND_STATIC || kind == ELF_KIND_GO || kind == ELF_KIND_FOREIGN;
}

/* The kind's name as the launcher prints it: unknown, script, dynamic, static, go, foreign, engine.
 */
const char *elf_kind_name(enum elf_kind kind);

#endif
