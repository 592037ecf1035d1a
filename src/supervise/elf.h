/* What kind of program a file is, for the launcher's choice of engine. */
#ifndef BACKOFF_SUPERVISE_ELF_H
#define BACKOFF_SUPERVISE_ELF_H

enum elf_kind {
	ELF_KIND_UNKNOWN, /* unreadable, or neither ELF nor script */
	ELF_KIND_SCRIPT,  /* starts with #! */
	ELF_KIND_DYNAMIC, /* ELF with an interpreter (PT_INTERP): the preload reaches it */
	ELF_KIND_STATIC,  /* ELF without one: only the supervisor reaches it */
	ELF_KIND_GO,	  /* a Go program, static or not: it makes its own system calls */
};

/* The kind of the file open at @fd; reads headers only (pread).  errno may change. */
enum elf_kind elf_inspect_fd(int fd);

/* The kind of the file at @path. */
enum elf_kind elf_inspect(const char *path);

/* The kind's name as the launcher prints it: unknown, script, dynamic, static, go. */
const char *elf_kind_name(enum elf_kind kind);

#endif
