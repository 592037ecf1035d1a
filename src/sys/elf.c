/* ELF inspection: interpreter present or not, the sections that mark a Go program, privileges. */
#include "sys/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "sys/compat.h"
#include "sys/real.h"
#include "sys/kcall.h"

/* Bounds on what is read, so a hostile file costs little. */
#define MAX_HEADERS 4096
#define MAX_SHSTRTAB (1U << 20)

/*
 * What is read in one call: the first bytes hold the program headers of any
 * common program, and 64 section headers, or the first names of the section
 * name table, fit as many bytes.  On the stack: an exec hook may run in a
 * vfork child.
 */
#define CHUNK 4096

/* Read @len bytes at @base + @index * @stride, offsets from a hostile file included. */
static bool read_at(int fd, void *buf, size_t len, uint64_t base, uint64_t index, uint64_t stride)
{
	uint64_t off;

	if (__builtin_mul_overflow(index, stride, &off) ||
	    __builtin_add_overflow(base, off, &off) || off > INT64_MAX)
		return false;
	return kcall_pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

/* The program header @i of @eh: from @head (the file's first @n bytes) when it is there. */
static bool program_header(int fd, const Elf64_Ehdr *eh, const unsigned char *head, size_t n,
			   unsigned i, Elf64_Phdr *ph)
{
	uint64_t off = eh->e_phoff + (uint64_t)i * sizeof(*ph);

	if (eh->e_phoff < n && off + sizeof(*ph) <= n) {
		memcpy(ph, head + off, sizeof(*ph));
		return true;
	}
	return read_at(fd, ph, sizeof(*ph), eh->e_phoff, i, sizeof(*ph));
}

/* What loads the program: 0 nothing (static), 1 a loader of glibc's kind, 2 musl's. */
static int interpreter(int fd, const Elf64_Ehdr *eh, const unsigned char *head, size_t n)
{
	char path[256];
	Elf64_Phdr ph;
	unsigned i;
	size_t len;

	for (i = 0; i < eh->e_phnum && i < MAX_HEADERS; i++) {
		if (!program_header(fd, eh, head, n, i, &ph))
			return 0;
		if (ph.p_type != PT_INTERP)
			continue;
		len = ph.p_filesz < sizeof(path) - 1 ? (size_t)ph.p_filesz : sizeof(path) - 1;
		memset(path, 0, sizeof(path));
		if (ph.p_offset < n && ph.p_offset + len <= n)
			memcpy(path, head + ph.p_offset, len);
		else if (!read_at(fd, path, len, ph.p_offset, 0, 0))
			return 1;
		return strstr(path, "/ld-musl-") ? 2 : 1;
	}
	return 0;
}

/*
 * ELF_KIND_GO if @name is one of the sections Go's linker writes into every
 * program, ELF_KIND_ENGINE if it marks libbackoff's own, else ELF_KIND_UNKNOWN.
 */
static enum elf_kind section_kind(const char *name)
{
	if (strcmp(name, ".go.buildinfo") == 0 || strcmp(name, ".note.go.buildid") == 0 ||
	    strcmp(name, ".gopclntab") == 0)
		return ELF_KIND_GO;
	if (strcmp(name, ELF_ENGINE_SECTION) == 0)
		return ELF_KIND_ENGINE;
	return ELF_KIND_UNKNOWN;
}

/*
 * The name at @off of the section name table @str: from @names (its first
 * @have bytes) when it ends there, else read into @buf.  NULL if unreadable.
 */
static const char *section_name(int fd, const Elf64_Shdr *str, uint64_t off, const char *names,
				size_t have, char *buf, size_t size)
{
	ssize_t got;

	if (off >= str->sh_size || off >= MAX_SHSTRTAB)
		return NULL;
	if (off < have && memchr(names + off, '\0', have - off))
		return names + off;
	memset(buf, 0, size);
	/* A name near the end of the file is read short: the bytes left are zero. */
	if (str->sh_offset > INT64_MAX - MAX_SHSTRTAB)
		return NULL;
	got = kcall_pread(fd, buf, size - 1, (off_t)(str->sh_offset + off));
	return got > 0 ? buf : NULL;
}

/* The kind a section name tells (section_kind), or ELF_KIND_UNKNOWN if none does. */
static enum elf_kind kind_of_sections(int fd, const Elf64_Ehdr *eh)
{
	char names[CHUNK], one[64];
	Elf64_Shdr sh[CHUNK / sizeof(Elf64_Shdr)], str;
	size_t have = 0;
	unsigned i, j, batch;

	if (eh->e_shentsize != sizeof(str) || eh->e_shstrndx >= eh->e_shnum ||
	    !read_at(fd, &str, sizeof(str), eh->e_shoff, eh->e_shstrndx, sizeof(str)))
		return ELF_KIND_UNKNOWN;
	if (str.sh_offset <= INT64_MAX) {
		ssize_t got = kcall_pread(fd, names, sizeof(names), (off_t)str.sh_offset);

		have = got > 0 ? (size_t)got : 0;
	}
	for (i = 0; i < eh->e_shnum && i < MAX_HEADERS; i += batch) {
		batch = eh->e_shnum - i < sizeof(sh) / sizeof(sh[0]) ? eh->e_shnum - i
								     : sizeof(sh) / sizeof(sh[0]);
		if (!read_at(fd, sh, batch * sizeof(sh[0]), eh->e_shoff, i, sizeof(sh[0])))
			return ELF_KIND_UNKNOWN;
		for (j = 0; j < batch; j++) {
			const char *name = section_name(fd, &str, sh[j].sh_name, names, have, one,
							sizeof(one));

			if (name && section_kind(name) != ELF_KIND_UNKNOWN)
				return section_kind(name);
		}
	}
	return ELF_KIND_UNKNOWN;
}

enum elf_kind elf_inspect_fd(int fd)
{
	unsigned char head[CHUNK];
	enum elf_kind kind;
	Elf64_Ehdr eh;
	ssize_t n = kcall_pread(fd, head, sizeof(head), 0);

	if (n >= 2 && memcmp(head, "#!", 2) == 0)
		return ELF_KIND_SCRIPT;
	if (n < (ssize_t)sizeof(eh) || memcmp(head, ELFMAG, SELFMAG) != 0)
		return ELF_KIND_UNKNOWN;
	memcpy(&eh, head, sizeof(eh));
	/* A 32-bit program: its headers are not read here; treated as dynamic. */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return ELF_KIND_DYNAMIC;
	kind = kind_of_sections(fd, &eh);
	if (kind != ELF_KIND_UNKNOWN)
		return kind;
	switch (interpreter(fd, &eh, head, (size_t)n)) {
	case 0:
		return ELF_KIND_STATIC;
	case 2:
		return COMPAT_LIBC_IS_MUSL ? ELF_KIND_DYNAMIC : ELF_KIND_FOREIGN;
	default:
		return COMPAT_LIBC_IS_MUSL ? ELF_KIND_FOREIGN : ELF_KIND_DYNAMIC;
	}
}

enum elf_kind elf_inspect(const char *path)
{
	int fd = kcall_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
	enum elf_kind kind;

	if (fd < 0)
		return ELF_KIND_UNKNOWN;
	kind = elf_inspect_fd(fd);
	real_close(fd);
	return kind;
}

bool elf_is_privileged_fd(int fd)
{
	struct stat st;

	return kcall_fstat(fd, &st) == 0 &&
	       ((st.st_mode & (S_ISUID | S_ISGID)) ||
		kcall_fgetxattr(fd, "security.capability", NULL, 0) > 0);
}

/* The interpreter that the "#!" line of the file at @fd names, into @buf; false if none. */
static bool script_interpreter(int fd, char *buf, size_t size)
{
	char line[256];
	ssize_t n = kcall_pread(fd, line, sizeof(line) - 1, 0);
	size_t i, start;

	if (n < 2)
		return false;
	line[n] = '\0';
	/* As the kernel reads it: blanks, then the path up to a blank or the line's end. */
	for (i = 2; line[i] == ' ' || line[i] == '\t'; i++)
		;
	for (start = i; line[i] && line[i] != ' ' && line[i] != '\t' && line[i] != '\n'; i++)
		;
	if (i == start || i - start >= size)
		return false;
	memcpy(buf, line + start, i - start);
	buf[i - start] = '\0';
	return true;
}

enum elf_kind elf_exec_kind(const char *path, bool *privileged)
{
	char interp[PATH_MAX];
	enum elf_kind kind;
	int fd = kcall_open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);

	*privileged = false;
	if (fd < 0)
		return ELF_KIND_UNKNOWN;
	*privileged = elf_is_privileged_fd(fd);
	kind = elf_inspect_fd(fd);
	if (kind == ELF_KIND_SCRIPT && script_interpreter(fd, interp, sizeof(interp))) {
		real_close(fd);
		fd = kcall_open(interp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
		if (fd < 0)
			return ELF_KIND_SCRIPT;
		kind = elf_inspect_fd(fd);
		/* Only the kernel reads a script's script: left as a script. */
		if (kind == ELF_KIND_UNKNOWN)
			kind = ELF_KIND_SCRIPT;
	}
	real_close(fd);
	return kind;
}

const char *elf_kind_name(enum elf_kind kind)
{
	static const char names[][8] = { "unknown", "script",  "dynamic", "static",
					 "go",	    "foreign", "engine" };

	_Static_assert(sizeof(names) / sizeof(names[0]) == ELF_KIND_ENGINE + 1, "a name a kind");
	return names[kind];
}
