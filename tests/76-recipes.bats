#!/usr/bin/env bats
# The README's recipes, run as written where this machine allows: each is the fenced
# block after its "<!-- recipe: NAME -->" line.  No container runtime or booted systemd
# here: the Dockerfile's build stage runs against a copy of the tree and its image is
# an installed tree; a pod's commands run with their paths in the test's directory; the
# systemd drop-in is verified by systemd-analyze, its values by the library's parser; the
# host-wide lines run in a mount namespace of the test's own.  Servers on loopback only.
# shellcheck disable=SC2154 # status, output and stderr are set by bats run

load helper

setup() {
	require_build
	# Installed copies are the default build, which the ASan runtime would have to precede.
	[[ -z ${TEST_PRELOAD_FIRST:-} ]] || skip "not under make sanitize"
	mkdir -p "$T/bin"
}

# recipe NAME: the text of the README's fenced block marked NAME, or fail.
recipe() {
	local text
	text=$(awk -v mark="<!-- recipe: $1 -->" '
		$0 == mark { found = 1; next }
		found == 1 && /^```/ { found = 2; next }
		found == 2 && /^```$/ { exit }
		found == 2 { print }' "$ROOT/README.md")
	[[ -n $text ]] || fail "no recipe $1 in README.md" || return
	printf '%s\n' "$text"
}

# stage_install: make install of this build into $T/stage (PREFIX /usr/local).
stage_install() {
	make -C "$ROOT" --no-print-directory BUILD="$BUILD" DESTDIR="$T/stage" PREFIX=/usr/local \
		install >"$T/install.log" 2>&1 || fail "make install failed:" "$(<"$T/install.log")"
}

# A launcher named backoff on PATH: the source tree's.
tree_launcher() {
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$LAUNCHER" >"$T/bin/backoff"
	chmod +x "$T/bin/backoff"
}

# json_words TEXT: the JSON list TEXT (a Dockerfile's exec form, a YAML flow list) one
# word a line.
json_words() {
	"$PYTHON" -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$1"
}

@test "Docker: the build stage installs from a copy of the tree only what is installed, and the image's entry point retries" {
	require_program musl-gcc musl-tools
	require_program dpkg-query dpkg
	local df build_stage line cmd
	df=$(recipe Dockerfile) || return
	build_stage=$(awk '/^FROM / { n++ } n == 1' <<<"$df")
	# The packages the stage installs are real ones, and here: this test runs what they give.
	line=$(grep '^RUN apt-get' <<<"$build_stage") || fail "no apt-get in the build stage"
	for pkg in gcc make libc6-dev musl-tools; do
		[[ " ${line#*--no-install-recommends } " == *" $pkg "* ]] || fail "the stage installs no $pkg"
		dpkg-query -W "$pkg" >/dev/null || fail "package $pkg is not installed here"
	done
	assert_match "$build_stage" $'\nCOPY \\. /src\nWORKDIR /src\n' "the tree copied to /src, the work there"
	mkdir "$T/src"
	cp -a "$ROOT/src" "$ROOT/tests" "$ROOT/scripts" "$ROOT/Makefile" "$T/src/"
	# Each other RUN line as written, /out in the test's directory, the default build (two
	# jobs: the parallelism is make's, the commands the recipe's).
	while IFS= read -r cmd; do
		cmd=${cmd#RUN }
		(cd "$T/src" && env -u EXTRA_CFLAGS -u EXTRA_LDFLAGS -u OPT -u CC -u BUILD MAKEFLAGS=-j2 \
			sh -c "${cmd//\/out/$T/out}") >"$T/build.log" 2>&1 ||
			fail "RUN $cmd failed:" "$(tail -20 "$T/build.log")"
	done < <(grep '^RUN ' <<<"$build_stage" | grep -v '^RUN apt-get')
	# Only what is installed was built: no test helper, no unit test.
	[[ ! -e $T/src/build/helpers && ! -e $T/src/build/unit ]] || fail "the build stage built test programs"

	# The image: COPY --from=libbackoff /out/usr/local/ /usr/local/, then its ENV and ENTRYPOINT.
	local image=$T/image from to entry
	read -r _ _ from to <<<"$(grep '^COPY --from=libbackoff ' <<<"$df")"
	[[ -d $T$from ]] || fail "the build stage left no $from"
	mkdir -p "$image${to%/}"
	cp -a "$T$from." "$image$to"
	[[ -f $image/usr/local/lib/libbackoff/musl/libbackoff.so ]] || fail "no musl build in the image"
	mapfile -t entry < <(json_words "$(sed -n 's/^ENTRYPOINT //p' <<<"$df")")
	assert_eq "${entry[*]}" "backoff --" "the entry point"
	local envs
	envs=$(sed -n 's/^ENV //p' <<<"$df")
	# The CMD stands for a glibc client and a musl one (Alpine), each against a late server.
	local client
	for client in "$HELPERS/probe" "$T/src/build/musl/helpers/probe"; do
		start_listener "late-${client//\//-}" 300
		# shellcheck disable=SC2086 # ENV's words, each NAME=value
		run --separate-stderr timeout 20 env PATH="$image/usr/local/bin:$PATH" $envs \
			"${entry[@]}" "$client" "127.0.0.1:$PORT"
		assert_eq "$output" OK "$client under the image's entry point (stderr: $stderr)"
	done
}

@test "Kubernetes: the launcher in a pod's command: runs the image's own entry point and its command, which retry" {
	local words
	words=$(sed -n 's/^ *command: //p' <<<"$(recipe pod-command)") || return
	mapfile -t words < <(json_words "$words")
	assert_eq "${words[0]}" backoff "the command's program"
	# The image's entry point execs its arguments, as docker-entrypoint.sh does; its
	# "postgres" is a client of a server that starts late.
	tree_launcher
	printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/docker-entrypoint.sh"
	start_listener late 300
	printf '#!/bin/sh\nexec "%s" 127.0.0.1:%s\n' "$HELPERS/probe" "$PORT" >"$T/bin/postgres"
	chmod +x "$T/bin/docker-entrypoint.sh" "$T/bin/postgres"
	run --separate-stderr timeout 20 env PATH="$T/bin:$PATH" "${words[@]}"
	assert_eq "$status" 0 "the pod's command (stderr: $stderr)"
	assert_eq "$output" OK "the client under it"
}

@test "Kubernetes: the init container's copy of the installed tree preloads the application, and its launcher runs" {
	local pod init preload
	pod=$(recipe pod-init) || return
	init=$(sed -n 's/^ *command: //p' <<<"$pod" | head -1)
	preload=$(sed -n 's/.*{name: LD_PRELOAD, value: \([^}]*\)}.*/\1/p' <<<"$pod")
	[[ -n $init && -n $preload ]] || fail "no init command or LD_PRELOAD in the recipe"
	stage_install
	# The init container's command, /usr/local and the emptyDir in the test's directory.
	mapfile -t init < <(json_words "$init")
	init=("${init[@]//\/usr\/local/$T/stage/usr/local}")
	init=("${init[@]//\/opt\/libbackoff/$T/opt/libbackoff}")
	run "${init[@]}"
	assert_eq "$status" 0 "the init container's command: $output"
	preload=${preload//\/opt\/libbackoff/$T/opt/libbackoff}
	[[ -f $preload ]] || fail "the application's LD_PRELOAD names no file the copy made: $preload"

	start_listener late 300
	run --separate-stderr timeout 20 env LD_PRELOAD="$preload" BACKOFF_TIMEOUT=2m \
		"$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" OK "the application, preloaded from the copy (stderr: $stderr)"
	start_listener late2 300
	run --separate-stderr timeout 20 "$T/opt/libbackoff/bin/backoff" -- "$HELPERS/probe" "127.0.0.1:$PORT"
	assert_eq "$output" OK "the application under the copied launcher (stderr: $stderr)"
}

@test "systemd: the nginx drop-in verifies, preloads what make install installs, and its budget is below nginx's 60 s" {
	local dropin
	dropin=$(recipe nginx-dropin) || return
	# The values, as the library reads them: valid, and a budget below proxy_connect_timeout.
	local assignments=() words
	while read -r -a words; do
		assignments+=("${words[@]}")
	done < <(sed -n 's/^Environment=//p' <<<"$dropin")
	local preload
	preload=$(printf '%s\n' "${assignments[@]}" | sed -n 's/^LD_PRELOAD=//p')
	stage_install
	[[ -f $T/stage$preload ]] || fail "make install puts no library at $preload"
	run --separate-stderr env "${assignments[@]/#LD_PRELOAD=*/BACKOFF=on}" "$SCHEDULE" --attempts 1
	assert_eq "$status" 0 "the drop-in's values (stderr: $stderr)"
	assert_eq "$stderr" "" "the library's word on the drop-in's values"
	local budget
	budget=$(sed -n 's/.* timeout=\([0-9]*\)ms.*/\1/p' <<<"$output")
	assert_between "$budget" 1 59999 "the budget (ms) under nginx's proxy_connect_timeout, 60 s"

	# systemd reads it as a drop-in of a unit, without a word.
	require_program systemd-analyze systemd
	mkdir -p "$T/units/recipe-nginx.service.d"
	printf '[Unit]\nDescription=the recipe'"'"'s daemon\n[Service]\nExecStart=/bin/true\n' \
		>"$T/units/recipe-nginx.service"
	printf '%s\n' "$dropin" >"$T/units/recipe-nginx.service.d/backoff.conf"
	run env SYSTEMD_UNIT_PATH="$T/units:" systemd-analyze verify recipe-nginx.service
	assert_eq "$status" 0 "systemd-analyze verify: $output"
	assert_eq "$output" "" "systemd-analyze's warnings"
	# It reads the drop-in: a key it does not know is named.
	printf 'Environmen=X\n' >>"$T/units/recipe-nginx.service.d/backoff.conf"
	run env SYSTEMD_UNIT_PATH="$T/units:" systemd-analyze verify recipe-nginx.service
	assert_match "$output" "Unknown key 'Environmen'" "a drop-in systemd-analyze reads"
}

@test "CI: backoff wait for a server that starts late, then the launcher around a test script whose client retries" {
	local ci db
	ci=$(recipe ci) || return
	tree_launcher
	# The database stand-in answers at once when it listens; the script's server comes later.
	start_listener db 400 --send hello
	db=$PORT
	start_listener app 900
	printf '#!/bin/sh\nexec "%s" 127.0.0.1:%s\n' "$HELPERS/probe" "$PORT" >"$T/run-tests.sh"
	chmod +x "$T/run-tests.sh"
	[[ $ci == *"postgres://localhost:5432"* ]] || fail "the recipe waits for no postgres://localhost:5432"
	run --separate-stderr timeout 30 env PATH="$T/bin:$PATH" \
		bash -ec "cd '$T'; ${ci//localhost:5432/localhost:$db}"
	assert_eq "$status" 0 "the CI steps (stderr: $stderr)"
	assert_eq "$output" OK "the test script's client"
	assert_eq "$stderr" "" "the steps' stderr"
}

@test "the whole host: the recipe's lines preload the named programs only, curl's own timeout fires when none is named, and the undo line ends it" {
	require_program curl
	require_unshare -m
	local host undo
	host=$(recipe host) || return
	undo=$(recipe host-undo) || return
	[[ $host == *"BACKOFF_PROGRAMS=python3,"* ]] || fail "the recipe names no python3"
	# As written but sudo (the namespace is root's), the installed path this build's.
	host=${host//sudo /}
	host=${host//\/usr\/local\/lib\/libbackoff\/libbackoff.so/$LIB}
	undo=${undo//sudo /}
	undo=${undo//\/usr\/local\/lib\/libbackoff\/libbackoff.so/$LIB}
	ln -s "$PYTHON" "$T/bin/python3"
	printf '%s\n' "${PY_CLIENT[2]}" >"$T/client.py"
	closed_port dead
	local dead=$PORT
	start_listener late 600 --send hello
	cat >"$T/host.sh" <<EOF
set -e
$(etc_overlay)
rm -f /etc/libbackoff.conf /etc/ld.so.preload
$host
set +e
"$T/bin/python3" "$T/client.py" 127.0.0.1 $PORT; echo " python \$?"
curl -sS http://127.0.0.1:$dead/ 2>/dev/null; echo "curl \$?"
# Unnamed, curl waits until its own timeout.
sed -i '/^BACKOFF_PROGRAMS=/d' /etc/libbackoff.conf
start=\${EPOCHREALTIME/./}
curl -sS --connect-timeout 3 http://127.0.0.1:$dead/ 2>/dev/null; echo "timeout \$? \$(((\${EPOCHREALTIME/./} - start) / 1000))"
$undo
echo "lines \$(grep -c . /etc/ld.so.preload)"
curl -sS --connect-timeout 3 http://127.0.0.1:$dead/ 2>/dev/null; echo "undone \$?"
EOF
	run --separate-stderr timeout 30 "${UNSHARE[@]}" bash "$T/host.sh"
	assert_eq "$status" 0 "the namespace's status (stderr: $stderr)"
	assert_match "$output" "hello python 0" "python, named, waits for its late server"
	assert_match "$output" $'\n''curl 7'$'\n' "curl, not named, refused at once"
	local ms
	ms=$(sed -n 's/^timeout 28 \([0-9]*\)$/\1/p' <<<"$output")
	assert_between "$ms" 2900 6000 "curl --connect-timeout 3 when every program is served: 28 after (ms)"
	assert_match "$output" $'\n''lines 0'$'\n''undone 7' "the undo line: no preload, curl refused at once"
}
