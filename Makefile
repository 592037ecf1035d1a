# libbackoff: build, test and quality gates.  `make help` lists the targets.

VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR = $(PREFIX)/lib/libbackoff
BINDIR = $(PREFIX)/bin
MANDIR = $(PREFIX)/share/man/man1
MAN7DIR = $(PREFIX)/share/man/man7

CC ?= cc
BUILD ?= build
OPT ?= -O2 -g
WARN := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wshadow -Wconversion \
	-Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wvla -Werror
# HOSTCONF=PATH: the host-wide settings file, /etc/libbackoff.conf unless set.
CFLAGS_ALL = $(WARN) $(OPT) -Isrc -DBACKOFF_VERSION='"$(VERSION)"' \
	$(if $(HOSTCONF),-DBACKOFF_HOSTCONF='"$(HOSTCONF)"') $(EXTRA_CFLAGS)
LIB_CFLAGS = -fPIC -fvisibility=hidden
# Without the compiler's start files (sys/dso.c says why); never unloaded, so that
# nothing it registers outlives it.
LIB_LDFLAGS = -shared -Wl,--version-script=src/exports.map -Wl,-z,relro -Wl,-z,now -Wl,-Bsymbolic-functions \
	-Wl,-z,nodelete -nostartfiles \
	-Wl,--no-undefined $(EXTRA_LDFLAGS)
LIBS = -ldl -lpthread

CORE_DIRS := engine drivers facts tables counters config
CORE_SRC := $(foreach d,$(CORE_DIRS),$(wildcard src/$(d)/*.c))
# sys/cstring: the string functions libbackoff.so keeps for itself (no import); sys/dso: what
# the start files gave it; sys/symver: three calls bound at their first version.  In it alone.
SYS_LIB_ONLY := src/sys/cstring.c src/sys/dso.c src/sys/symver.c
SYS_SRC := $(filter-out $(SYS_LIB_ONLY),$(wildcard src/sys/*.c))
INTERCEPT_SRC := $(wildcard src/intercept/*.c)
LIB_SRC := src/init.c $(INTERCEPT_SRC) $(CORE_SRC) $(SYS_SRC) $(SYS_LIB_ONLY)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
# The pure core and the system layer without the hooks: for the tool and the unit tests.
CORE_OBJ := $(CORE_SRC:%.c=$(BUILD)/obj/%.o) $(SYS_SRC:%.c=$(BUILD)/obj/%.o)

# Test shims are preloaded rather than run: each is built as build/helpers/NAME.so.
SHIM_SRC := tests/helpers/faultshim.c
SHIMS := $(SHIM_SRC:tests/helpers/%.c=$(BUILD)/helpers/%.so)
HELPER_SRC := $(filter-out $(SHIM_SRC),$(wildcard tests/helpers/*.c))
HELPERS := $(HELPER_SRC:tests/helpers/%.c=$(BUILD)/helpers/%)
UNIT_SRC := $(wildcard tests/unit/*.c)
UNITS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/unit/%)

LIBRARY := $(BUILD)/libbackoff.so
TOOL := $(BUILD)/backoff-schedule
STATUS := $(BUILD)/backoff-status
SUPERVISE_SRC := $(wildcard src/supervise/*.c)
SUPERVISOR := $(BUILD)/backoff-supervise
LAUNCHER_BIN := $(BUILD)/backoff

SHELL_SCRIPTS := scripts/backoff scripts/mkdeb .ci/run $(wildcard tests/*.bash tests/bench/*.sh)
BATS ?= bats
BATS_FLAGS ?=

.PHONY: all check test unit demo install uninstall deb clean check-exports format format-check \
	shellcheck help musl

## all (the default): the library, tools, supervisor and launcher, and the test helpers
all: $(LIBRARY) $(TOOL) $(STATUS) $(SUPERVISOR) $(HELPERS) $(SHIMS) $(UNITS)

# musl (Debian's musl-tools): the library, the schedule tool and the supervisor built
# against musl into build/musl/, for programs linked against it (Alpine images).  musl-gcc
# sees musl's headers only: the kernel's (linux/, asm/) come through a directory of links.
MUSL_CC ?= musl-gcc
MUSL_BUILD := $(BUILD)/musl
MUSL_FOUND := $(shell command -v $(MUSL_CC) 2>/dev/null)
MUSL_KERNEL := $(MUSL_BUILD)/kernel-include
MUSL_PROBE := $(MUSL_BUILD)/helpers/probe

## musl: the library, the tool and the supervisor for musl programs, in build/musl/
musl: $(MUSL_KERNEL)/.links
	$(MAKE) BUILD=$(MUSL_BUILD) CC=$(MUSL_CC) \
		EXTRA_CFLAGS="-isystem $(abspath $(MUSL_KERNEL)) $(EXTRA_CFLAGS)" \
		$(MUSL_BUILD)/libbackoff.so $(MUSL_BUILD)/backoff-schedule $(MUSL_BUILD)/backoff-supervise
	$(MAKE) $(MUSL_PROBE)

$(MUSL_KERNEL)/.links: Makefile
	@command -v $(MUSL_CC) >/dev/null || \
		{ echo "make musl: $(MUSL_CC) not found (apt-get install musl-tools)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	ln -sfn /usr/include/linux /usr/include/asm-generic $(MUSL_KERNEL)/
	multiarch=$$($(MUSL_CC) -print-multiarch); \
		ln -sfn /usr/include/$${multiarch:+$$multiarch/}asm $(MUSL_KERNEL)/asm
	@touch $@

# The musl-linked client of tests/96-musl.bats: the probe, linked dynamically so that the
# preload reaches it.  musl has no strerrorname_np: it names errnos with the library's table.
$(MUSL_PROBE): tests/helpers/probe.c tests/helpers/common.h src/sys/errname.c src/sys/compat.h \
		Makefile | $(MUSL_KERNEL)/.links
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(CFLAGS_ALL) -include sys/compat.h -include sys/errname.h \
		-Dstrerrorname_np=errname -o $@ $< src/sys/errname.c

$(BUILD)/obj/%.o: %.c $(wildcard src/*.h src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) $(LIB_CFLAGS) -c -o $@ $<

# Its own strlen must not become a call to strlen.
# Its loops are memcpy and memmove themselves: GCC would rewrite them as calls to them.
$(BUILD)/obj/src/sys/cstring.o: CFLAGS_ALL += -fno-builtin \
	$(if $(findstring clang,$(shell $(CC) --version 2>/dev/null)),,-fno-tree-loop-distribute-patterns)

$(LIBRARY): $(LIB_OBJ) src/exports.map
	$(CC) $(CFLAGS_ALL) $(LIB_CFLAGS) $(LIB_LDFLAGS) -o $@ $(LIB_OBJ) $(LIBS)

# The tool reads the configuration and draws delays: the pure core only, no hooks'
# real_* calls (some of which musl lacks); its log lines go through libc's calls, as the
# supervisor's do.
# The configuration's modules, named once: every program and gate reading it links them all.
CONFIG_MODS := config/config config/config_dests config/config_errors config/config_names config/config_presets \
	config/config_problems \
	config/config_programs
TOOL_CORE := $(patsubst %,$(BUILD)/obj/src/%.o,$(CONFIG_MODS) engine/engine engine/policy engine/ready config/target \
	sys/errname sys/rng sys/text sys/log sys/clock supervise/libc)
$(TOOL): $(BUILD)/obj/src/tool/schedule.o $(TOOL_CORE)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LIBS)

# `backoff status`: the state file of shared fate, read with the library's own checks.
STATUS_SRC := src/tool/status.c src/tool/status_format.c src/tool/status_procs.c
$(STATUS): $(STATUS_SRC:%.c=$(BUILD)/obj/%.o) $(CORE_OBJ)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LIBS)

# The supervisor engine: a program of its own, on the same core as the library, with
# libc's calls as the real ones (src/supervise/libc.c) instead of sys/real.c.
SUPERVISE_CORE := $(patsubst %,$(BUILD)/obj/src/%.o,facts/addrlist $(CONFIG_MODS) drivers/decide drivers/eligible drivers/way \
	facts/record engine/engine counters/events engine/policy drivers/retry facts/share facts/share_file facts/share_full facts/share_view config/target \
	drivers/before engine/ready sys/clock sys/elf sys/errname sys/listen sys/log sys/rng sys/sock sys/text)
# Linked statically: a preload's exec hook runs it with the program's environment, whose
# LD_PRELOAD then loads nothing into it, and it starts without a loader's work.  Not under
# the sanitizers, whose runtimes cannot be linked so.
SUPERVISE_LDFLAGS ?= $(if $(findstring -fsanitize,$(EXTRA_CFLAGS)),,-static)
$(SUPERVISOR): $(SUPERVISE_SRC:%.c=$(BUILD)/obj/%.o) $(SUPERVISE_CORE)
	$(CC) $(CFLAGS_ALL) $(SUPERVISE_LDFLAGS) -o $@ $^ $(LIBS)

# The launcher, `backoff`: its options read in C, and the supervisor's own code, so that a
# command that needs the supervisor costs no exec more.  Static, as the supervisor: it
# starts without a loader's work.  The tree's copy finds the library next to itself; the
# installed copy is linked again at install time with LIBDIR, where it looks last.
LAUNCHER_OBJ := $(filter-out $(BUILD)/obj/src/supervise/main.o,$(SUPERVISE_SRC:%.c=$(BUILD)/obj/%.o)) \
	$(SUPERVISE_CORE)
# `backoff wait` (src/tool/wait.c) runs in the launcher, on the same core.
# The tree's copy links their objects, as every tool does, so that a change elsewhere
# relinks it without compiling them again (install compiles them with LAUNCHER_LIBDIR).
LAUNCHER_SRC := src/tool/launcher.c src/tool/wait.c
$(BUILD)/obj/src/tool/launcher.o: src/tool/launcher-help.inc
$(LAUNCHER_BIN): $(LAUNCHER_SRC:%.c=$(BUILD)/obj/%.o) $(LAUNCHER_OBJ)
	$(CC) $(CFLAGS_ALL) $(SUPERVISE_LDFLAGS) -o $@ $^ $(LIBS)

all: $(LAUNCHER_BIN)

$(BUILD)/helpers/%: tests/helpers/%.c tests/helpers/common.h Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< -lpthread -ldl

$(BUILD)/helpers/%.so: tests/helpers/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $< -ldl

$(BUILD)/unit/%: tests/unit/%.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $(filter-out src/sys/cstring.c,$^) $(LIBS)
# It includes sys/cstring.c itself, under other names: rebuilt when that changes.
$(BUILD)/unit/cstring: src/sys/cstring.c

## check: build, then run the whole test suite (bats)
check: all check-exports bench-quick $(if $(MUSL_FOUND),musl)
	$(BATS) $(BATS_FLAGS) tests/

test: check

## unit: run only the unit tests of the pure core
unit: $(UNITS)
	@set -e; for u in $(UNITS); do echo "$$u"; $$u; done

## demo: a stock client started before its server, connecting on retry
demo: $(LIBRARY) $(TOOL) $(SUPERVISOR) $(LAUNCHER_BIN)
	@sh tests/demo.sh

## check-exports: the library exports exactly the symbols of src/exports.map
check-exports: $(LIBRARY)
	@nm -D --defined-only $(LIBRARY) | awk '$$2 ~ /^[TWi]$$/ { print $$3 }' | sed 's/@.*//' \
		| sort -u > $(BUILD)/exports.actual
	@sed -n 's/^[[:space:]]*\([a-z_0-9]*\);$$/\1/p' src/exports.map | sort -u > $(BUILD)/exports.expected
	@if diff -u $(BUILD)/exports.expected $(BUILD)/exports.actual; then \
		echo "check-exports: $$(wc -l < $(BUILD)/exports.actual) symbols, as in src/exports.map"; \
	else echo "check-exports: exported symbols differ from src/exports.map" >&2; exit 1; fi

# The musl build, when there is one, goes to musl/ next to the glibc build: the launcher
# looks there for a program linked against musl.
MUSL_INSTALL := $(if $(wildcard $(MUSL_BUILD)/libbackoff.so),musl)
# Installed stripped (the build keeps its symbols for the debugger): STRIP_FLAG= keeps them.
STRIP_FLAG ?= -s

## install: build what is installed (no test helper) and install it under DESTDIR PREFIX
## (/usr/local): bin/backoff, lib/libbackoff/ (and musl/ after make musl), man pages
install: $(LIBRARY) $(TOOL) $(STATUS) $(SUPERVISOR) $(LAUNCHER_OBJ) $(MUSL_INSTALL)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR) $(DESTDIR)$(MAN7DIR)
	install -m 0755 $(STRIP_FLAG) $(LIBRARY) $(DESTDIR)$(LIBDIR)/libbackoff.so
	install -m 0755 $(STRIP_FLAG) $(TOOL) $(DESTDIR)$(LIBDIR)/backoff-schedule
	install -m 0755 $(STRIP_FLAG) $(STATUS) $(DESTDIR)$(LIBDIR)/backoff-status
	install -m 0755 $(STRIP_FLAG) $(SUPERVISOR) $(DESTDIR)$(LIBDIR)/backoff-supervise
	$(if $(MUSL_INSTALL),install -d $(DESTDIR)$(LIBDIR)/musl)
	$(if $(MUSL_INSTALL),install -m 0755 $(STRIP_FLAG) $(MUSL_BUILD)/libbackoff.so \
		$(MUSL_BUILD)/backoff-schedule $(MUSL_BUILD)/backoff-supervise $(DESTDIR)$(LIBDIR)/musl/)
	@mkdir -p $(BUILD)/install
	$(CC) $(CFLAGS_ALL) $(SUPERVISE_LDFLAGS) -DLAUNCHER_LIBDIR='"$(LIBDIR)"' \
		-o $(BUILD)/install/backoff $(LAUNCHER_SRC) $(LAUNCHER_OBJ) $(LIBS)
	install -m 0755 $(STRIP_FLAG) $(BUILD)/install/backoff $(DESTDIR)$(BINDIR)/backoff
	install -m 0644 scripts/backoff.1 $(DESTDIR)$(MANDIR)/backoff.1
	install -m 0644 scripts/libbackoff.7 $(DESTDIR)$(MAN7DIR)/libbackoff.7

# Staged under DEB_DIR/root, then packed by scripts/mkdeb (no debian/ directory needed).
DEB_DIR ?= $(BUILD)/deb

## deb: a Debian package (dpkg-deb) of the library, supervisor, tools, launcher and man pages
deb: $(LIBRARY) $(TOOL) $(SUPERVISOR) $(LAUNCHER_OBJ)
	rm -rf $(DEB_DIR)/root
	$(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(abspath $(DEB_DIR))/root
	sh scripts/mkdeb $(DEB_DIR)/root $(VERSION) \
		$(DEB_DIR)/libbackoff_$(VERSION)_$$(dpkg --print-architecture).deb

## uninstall: remove what make install installed (the same DESTDIR and PREFIX)
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libbackoff.so $(DESTDIR)$(LIBDIR)/backoff-schedule \
		$(DESTDIR)$(LIBDIR)/backoff-status \
		$(DESTDIR)$(LIBDIR)/backoff-supervise $(DESTDIR)$(LIBDIR)/musl/libbackoff.so \
		$(DESTDIR)$(LIBDIR)/musl/backoff-schedule $(DESTDIR)$(LIBDIR)/musl/backoff-supervise \
		$(DESTDIR)$(BINDIR)/backoff $(DESTDIR)$(MANDIR)/backoff.1 $(DESTDIR)$(MAN7DIR)/libbackoff.7
	rmdir $(DESTDIR)$(LIBDIR)/musl 2>/dev/null || true
	rmdir $(DESTDIR)$(LIBDIR) 2>/dev/null || true

FORMAT_FILES = $(shell find src tests -name '*.[ch]')

## format: rewrite the C sources with clang-format
format:
	clang-format -i $(FORMAT_FILES)

## format-check: fail if a C source is not clang-format clean
format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

## shellcheck: lint the launcher, CI script and test helpers
shellcheck:
	shellcheck -S style $(SHELL_SCRIPTS)

## clean: remove the build directory
clean:
	rm -rf $(BUILD)

## help: this list
help:
	@grep -h '^## ' $(MAKEFILE_LIST) | sed 's/^## /  /'

# Benchmarks (tests/bench/): `make bench` rewrites tests/bench/report.md and herd.svg.
BENCH_PROGS := $(BUILD)/bench/fastpath $(BUILD)/bench/herd
BENCH_SHIMS := $(BUILD)/bench/malloc_count.so $(BUILD)/bench/gate.so $(BUILD)/bench/empty.so
BENCH_SUPERVISE := $(BUILD)/bench/supervise-static $(BUILD)/bench/supervise-dynamic \
	$(BUILD)/bench/seccomp-allow
BENCH_DEPS := $(LIBRARY) $(BUILD)/helpers/probe $(BUILD)/helpers/late-listener $(BENCH_PROGS) \
	$(BENCH_SHIMS) $(SUPERVISOR) $(BENCH_SUPERVISE) $(LAUNCHER_BIN) $(BUILD)/static/whoami

$(BENCH_PROGS): $(BUILD)/bench/%: tests/bench/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -o $@ $<

# The supervisor's cost: the same program with raw system calls (static) and through libc.
$(BUILD)/bench/supervise-static: tests/bench/supervise.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -static -pthread -o $@ $<

$(BUILD)/bench/seccomp-allow: tests/bench/seccomp-allow.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -o $@ $<

$(BUILD)/bench/supervise-dynamic: tests/bench/supervise.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -pthread -o $@ $<

$(BENCH_SHIMS): $(BUILD)/bench/%.so: tests/bench/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -fPIC -fvisibility=hidden -shared -o $@ $< -ldl

.PHONY: bench bench-quick
## bench: measure cost, recovery, herd, timing, size, shared fate, start-up, early close,
## try later (about 12 min); writes tests/bench/report.md, supervise.md, silence.md,
## startup.md, earlyclose.md, trylater.md
bench: $(BENCH_DEPS)
	python3 tests/bench/run.py --build $(BUILD) --out tests/bench
	python3 tests/bench/supervise.py --build $(BUILD) --out tests/bench
	python3 tests/bench/silence.py --build $(BUILD) --out tests/bench
	python3 tests/bench/startup.py --build $(BUILD) --out tests/bench
	python3 tests/bench/earlyclose.py --build $(BUILD) --out tests/bench
	python3 tests/bench/trylater.py --build $(BUILD) --out tests/bench

## bench-quick: the benchmark's reduced set (under a minute), to prove it still runs
bench-quick: $(BENCH_DEPS)
	python3 tests/bench/run.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
	python3 tests/bench/supervise.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
	python3 tests/bench/silence.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
	python3 tests/bench/startup.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
	python3 tests/bench/earlyclose.py --quick --build $(BUILD) --out $(BUILD)/bench-quick
	python3 tests/bench/trylater.py --quick --build $(BUILD) --out $(BUILD)/bench-quick

# Hardening (tests/hardening/, tests/fuzz/): each gate builds into a directory of its
# own, so that the default build is left as it is.
COV_BUILD ?= build/coverage

.PHONY: coverage

## coverage: branch coverage of the core (src/{drivers,engine,facts,...}) from the unit tests; 100 % of policy.c, config.c
## and engine.c
## (COVERAGE_SUITE=1: from the whole bats suite as well, against the same build)
coverage:
	$(MAKE) BUILD=$(COV_BUILD) OPT="-O0 -g" EXTRA_CFLAGS="--coverage" \
		$(UNIT_SRC:tests/unit/%.c=$(COV_BUILD)/unit/%) $(if $(COVERAGE_SUITE),all)
	find $(COV_BUILD) -name '*.gcda' -delete
	@set -e; for u in $(UNIT_SRC:tests/unit/%.c=$(COV_BUILD)/unit/%); do $$u; done
	$(if $(COVERAGE_SUITE),TEST_BUILD_DIR=$(abspath $(COV_BUILD)) $(BATS) $(BATS_FLAGS) tests/)
	python3 tests/hardening/coverage.py $(COV_BUILD)/obj $(CORE_SRC) \
		--require src/engine/policy.c=100 --require src/config/config.c=100 \
		--require src/engine/engine.c=100

FUZZ_BUILD ?= build/fuzz
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 300
FUZZ_TARGETS := config target policy fdinfo notify share ready
# integer: unsigned wrap-around and lossy conversions count as findings too.
FUZZ_CFLAGS = $(WARN) -g -O1 -Isrc -fsanitize=fuzzer,address,undefined,integer \
	-fno-sanitize-recover=all
FUZZ_CORE := $(CONFIG_MODS:%=src/%.c) src/drivers/eligible.c src/engine/engine.c src/config/target.c src/engine/policy.c \
	src/sys/errname.c src/sys/rng.c src/sys/text.c src/sys/fdinfo.c src/engine/ready.c

.PHONY: fuzz

## fuzz: libFuzzer on the variables, the target patterns, the policy and the supervisor's
## notification and ELF parsing, the shared state file, a server's not-ready answer,
## FUZZ_SECONDS each
fuzz: $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz-%)
	tests/hardening/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The supervisor's parsers of what a traced program hands it: notifications and executables.
# sys/elf reads a file through the real calls: the supervisor's, libc's own.
$(FUZZ_BUILD)/fuzz-notify: tests/fuzz/notify.c $(FUZZ_CORE) src/supervise/notify.c \
		src/sys/elf.c src/supervise/libc.c $(wildcard src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE) src/supervise/notify.c src/sys/elf.c \
		src/supervise/libc.c

# The shared state file, as hostile as another process of the user can make it.
$(FUZZ_BUILD)/fuzz-share: tests/fuzz/share.c $(FUZZ_CORE) src/facts/share.c src/facts/share_file.c src/facts/share_full.c src/facts/share_view.c src/sys/clock.c \
		$(wildcard src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE) src/facts/share.c src/facts/share_file.c src/facts/share_full.c src/facts/share_view.c src/sys/clock.c

$(FUZZ_BUILD)/fuzz-%: tests/fuzz/%.c $(FUZZ_CORE) $(wildcard src/*/*.h) Makefile
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_CORE)

# Programs of the lifecycle tests that tests/helpers/ cannot hold: libraries and C++.
HARDENING := $(BUILD)/hardening
HARDENING_BINS := $(HARDENING)/early.so $(HARDENING)/module.so $(HARDENING)/crash-handler.so \
	$(HARDENING)/static-init $(HARDENING)/secure-probe

all: $(HARDENING_BINS)

# Preloaded after libbackoff (early, crash-handler) or dlopen()ed (module).
$(HARDENING)/%.so: tests/hardening/%.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -shared -o $@ $<

$(HARDENING)/static-init: tests/hardening/static-init.cc Makefile
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 -Wall -Wextra -Werror $(OPT) $(EXTRA_CFLAGS) -o $@ $<

# The probe with the library as a dependency of its own (absolute run path): the loader
# ignores LD_PRELOAD paths in a set-user-ID program, not a run path without $ORIGIN.
$(HARDENING)/secure-probe: tests/helpers/probe.c $(LIBRARY) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< -L$(BUILD) -l:libbackoff.so -Wl,-rpath,$(abspath $(BUILD))

ASAN_BUILD ?= build/asan
SANITIZE_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SHELL_SCRIPTS += $(wildcard tests/hardening/*.sh)

.PHONY: sanitize

## sanitize: the whole suite against an ASan+UBSan build (build/asan); any report fails it
# The plain library stands in for programs that hang under the ASan runtime alone.
sanitize: $(LIBRARY)
	$(MAKE) BUILD=$(ASAN_BUILD) OPT="-O1 -g" EXTRA_CFLAGS="$(SANITIZE_FLAGS)" all
	OPT="-O1 -g" EXTRA_CFLAGS="$(SANITIZE_FLAGS)" PLAIN_LIB=$(abspath $(LIBRARY)) \
		tests/hardening/sanitize.sh $(ASAN_BUILD)

TSAN_BUILD ?= build/tsan
# Late servers listen after 1..40 ms: a short base and cap keep 3200 connects to seconds.
STRESS_ARGS ?= --threads 64 --connects 50 --watchdog 300
STRESS_ENV := BACKOFF_BASE=5ms BACKOFF_CAP=50ms BACKOFF_TIMEOUT=30s BACKOFF_STATS=1

.PHONY: tsan

# The stress test with the library's objects linked in, so that ThreadSanitizer sees both.
$(BUILD)/hardening/stress-linked: tests/helpers/stress.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LIBS)

## tsan: 64 threads x 50 connects to late servers, blocking, poll and epoll, under TSan
tsan:
	$(MAKE) BUILD=$(TSAN_BUILD) OPT="-O1 -g" EXTRA_CFLAGS="-fsanitize=thread" \
		$(TSAN_BUILD)/hardening/stress-linked
	env $(STRESS_ENV) tests/hardening/tsan.sh $(TSAN_BUILD)/hardening/stress-linked $(STRESS_ARGS)

.PHONY: valgrind

## valgrind: memcheck over the probe under the preload, blocking and non-blocking
valgrind: all
	$(BATS) $(BATS_FLAGS) tests/67-valgrind.bats

.PHONY: analyze

## analyze: cppcheck, clang-tidy and gcc -fanalyzer over src/; any finding fails it
analyze:
	tests/hardening/analyze.sh

# Programs out of the preload's reach, for the supervisor engine's tests: C clients linked
# statically (glibc's libc.a) and a Go client built both ways (Go makes its own system
# calls, with cgo or not).  The Go client is built when go is installed (.ci/run installs it).
STATIC_HELPERS := $(BUILD)/static/raw-connect $(BUILD)/static/raw-odd $(BUILD)/static/whoami
GO ?= go
GO_FOUND := $(shell command -v $(GO) 2>/dev/null)
GO_CLIENTS := $(if $(GO_FOUND),$(BUILD)/go/dial-nocgo $(BUILD)/go/dial-cgo)
GO_ENV = GOCACHE=$(abspath $(BUILD))/go/cache GOPATH=$(abspath $(BUILD))/go/path GO111MODULE=off \
	GOTOOLCHAIN=local GOFLAGS=

all: $(STATIC_HELPERS) $(GO_CLIENTS)

# Without EXTRA_CFLAGS: the sanitizers' runtimes cannot be linked statically.
$(BUILD)/static/%: tests/static/%.c tests/helpers/common.h Makefile
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(OPT) -static -o $@ $<

$(BUILD)/go/dial-nocgo: tests/go/dial.go Makefile
	@mkdir -p $(dir $@)
	$(GO_ENV) CGO_ENABLED=0 $(GO) build -o $@ $<

$(BUILD)/go/dial-cgo: tests/go/dial.go Makefile
	@mkdir -p $(dir $@)
	$(GO_ENV) CGO_ENABLED=1 $(GO) build -o $@ $<

.PHONY: mutants

## mutants: each one-edit mutant of tests/mutants/list must fail its guarding tests
## (MUTANTS=name1,name2: only those; 2 at a time; a table of the results)
mutants: all
	python3 tests/mutants/run.py --build $(BUILD) --jobs 2 $(if $(MUTANTS),--only $(MUTANTS))
