/* ELF inspection: interpreter present or not, and the sections that mark a Go program. */
#include "supervise/elf.h"

#include <elf.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* Bounds on what is read, so a hostile file costs little. */
#define MAX_HEADERS 4096
#define MAX_SHSTRTAB (1U << 20)

/* Read @len bytes at @base + @index * @stride, offsets from a hostile file included. */
static bool read_at(int fd, void *buf, size_t len, uint64_t base, uint64_t index, uint64_t stride)
{
	uint64_t off;

	if (__builtin_mul_overflow(index, stride, &off) ||
	    __builtin_add_overflow(base, off, &off) || off > INT64_MAX)
		return false;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len;
}

static bool has_interp(int fd, const Elf64_Ehdr *eh)
{
	Elf64_Phdr ph;
	unsigned i;

	for (i = 0; i < eh->e_phnum && i < MAX_HEADERS; i++) {
		if (!read_at(fd, &ph, sizeof(ph), eh->e_phoff, i, eh->e_phentsize))
			return false;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

/* Go's linker writes .go.buildinfo (and .note.go.buildid) into every program. */
static bool has_go_section(int fd, const Elf64_Ehdr *eh)
{
	static const char *const names[] = { ".go.buildinfo", ".note.go.buildid", ".gopclntab" };
	char strtab[4096];
	Elf64_Shdr sh, str;
	unsigned i, j;

	if (eh->e_shentsize != sizeof(sh) || eh->e_shstrndx >= eh->e_shnum ||
	    !read_at(fd, &str, sizeof(str), eh->e_shoff, eh->e_shstrndx, sizeof(sh)))
		return false;
	for (i = 0; i < eh->e_shnum && i < MAX_HEADERS; i++) {
		if (!read_at(fd, &sh, sizeof(sh), eh->e_shoff, i, sizeof(sh)))
			return false;
		if (sh.sh_name >= str.sh_size || sh.sh_name >= MAX_SHSTRTAB)
			continue;
		memset(strtab, 0, sizeof(strtab));
		/* A name near the end of the file is read short: the bytes left are zero. */
		if (str.sh_offset > INT64_MAX - MAX_SHSTRTAB ||
		    pread(fd, strtab, sizeof(strtab) - 1, (off_t)(str.sh_offset + sh.sh_name)) <= 0)
			continue;
		for (j = 0; j < sizeof(names) / sizeof(names[0]); j++)
			if (strcmp(strtab, names[j]) == 0)
				return true;
	}
	return false;
}

enum elf_kind elf_inspect_fd(int fd)
{
	Elf64_Ehdr eh;
	ssize_t n = pread(fd, &eh, sizeof(eh), 0);

	if (n >= 2 && memcmp(&eh, "#!", 2) == 0)
		return ELF_KIND_SCRIPT;
	if (n != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
		return ELF_KIND_UNKNOWN;
	/* A 32-bit program: its headers are not read here; treated as dynamic. */
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr))
		return ELF_KIND_DYNAMIC;
	if (has_go_section(fd, &eh))
		return ELF_KIND_GO;
	return has_interp(fd, &eh) ? ELF_KIND_DYNAMIC : ELF_KIND_STATIC;
}

enum elf_kind elf_inspect(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	enum elf_kind kind;

	if (fd < 0)
		return ELF_KIND_UNKNOWN;
	kind = elf_inspect_fd(fd);
	close(fd);
	return kind;
}

const char *elf_kind_name(enum elf_kind kind)
{
	static const char *const names[] = { "unknown", "script", "dynamic", "static", "go" };

	return names[kind];
}
