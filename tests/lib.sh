# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers for the test scripts: source it, then state expectations.  The
# first expectation that does not hold ends the test with status 1.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1

# fail MESSAGE: end the test, saying what did not hold.
fail() {
	echo "FAILED: $*" >&2
	exit 1
}

# expect_status WANT GOT WHAT: fail unless the exit status GOT is WANT.
expect_status() {
	[ "$2" -eq "$1" ] || fail "$3: exit status $2, expected $1"
}

# expect_file_is FILE TEXT WHAT: fail unless FILE holds exactly TEXT.
expect_file_is() {
	[ "$(cat "$1")" = "$2" ] ||
		fail "$3: got '$(head -c 300 "$1")', expected '$2'"
}

# TEST_TMP: a scratch directory of the test's own, removed when it ends.
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/lab3-test.XXXXXX") || fail "mktemp failed"
trap 'rm -rf "$TEST_TMP"' EXIT

# plant_token: a root-only file, /var/tmp/lab3-hostile.secret, holding a
# fresh random TOKEN, removed when the test ends: the hostile
# submissions of tests/hostile/ try to read it, and no output may hold it.
plant_token() {
	TOKEN=lab3-token-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	(umask 077 && printf '%s\n' "$TOKEN" >/var/tmp/lab3-hostile.secret) ||
		fail "cannot write /var/tmp/lab3-hostile.secret"
	trap 'rm -rf "$TEST_TMP" /var/tmp/lab3-hostile.secret' EXIT
}

# expect_no_leak WHAT PATH...: fail if the TOKEN that plant_token made, or
# a line of the reference's solution, is in a file under PATH....
expect_no_leak() {
	local what=$1 found
	shift
	found=$(grep -rlF -e "$TOKEN" \
		-e 'memcpy(msg.file_info.sha256, s->sha256, LAB3_SHA256_LEN);' \
		-- "$@" | head -n 1)
	[ -z "$found" ] || fail "$what: $found holds what a submission read"
}

# expect_stripped PROGRAM WHAT: fail unless the ELF file PROGRAM was built
# without debug information and stripped of its symbol table, as the kit
# of depth verbs ships its prebuilt receivers: nm finds no symbols, the
# section list holds no .symtab and no .debug_*, file(1) says "stripped",
# and no name of the reference's own functions is left in it (only the
# libraries' functions it calls, which the dynamic linker needs).
expect_stripped() {
	local prog=$1 what=$2 out
	[ -f "$prog" ] || fail "$what: no file $prog"
	out=$(nm "$prog" 2>&1)
	[ "$out" = "nm: $prog: no symbols" ] ||
		fail "$what: nm $prog lists symbols, expected 'no symbols':" \
			"$(head -n 3 <<<"$out")"
	out=$(readelf -SW "$prog" | grep -o ' \.symtab \| \.debug_[a-z_]*' |
		tr -d ' ' | sort -u | tr '\n' ' ')
	[ -z "$out" ] ||
		fail "$what: $prog has the sections $out; expected none of .symtab, .debug_*"
	out=$(file -b "$prog")
	[[ $out == *", stripped"* ]] ||
		fail "$what: file(1) says '$out', expected '..., stripped'"
	! grep -qa 'conn_build_resources' "$prog" ||
		fail "$what: $prog still holds the name conn_build_resources"
}

# await_open PID PROGRAM FILE WHAT: wait, 10 s at most, until process
# PID runs PROGRAM (it has done its exec) and has FILE open; fail naming
# WHAT if it does not.  A receiver given a FIFO that the test holds open
# for writing (`exec {fd}<>FIFO`, closed in the receiver: `{fd}>&-`) as
# its roster or ledger then waits in main(), reading it, until the test
# writes and closes it: a place in main() that a test can reach for sure,
# to send a signal there.
await_open() {
	local pid=$1 prog=$2 file=$3 what=$4 fd i
	for ((i = 0; i < 200; i++)); do
		if [ /proc/"$pid"/exe -ef "$prog" ]; then
			for fd in /proc/"$pid"/fd/*; do
				[ "$fd" -ef "$file" ] && return 0
			done
		fi
		[[ -d /proc/$pid && $(</proc/"$pid"/stat) != *") Z "* ]] ||
			fail "$what: process $pid ended before it opened $file"
		sleep 0.05
	done
	fail "$what: process $pid did not open $file within 10 s"
}

# chromium_dom HTML OUT [SHOT [HEIGHT]]: headless Chromium's DOM of the
# page HTML into OUT.dom and what Chromium logged (the page's console
# too) into OUT.log; with SHOT, a screenshot into tests/logs/SHOT.png,
# 1200 pixels wide and HEIGHT (default 1600) high.  On failure, says
# what failed on stdout and returns 1.
chromium_dom() {
	local url flags=(--headless --no-sandbox --disable-gpu
		--hide-scrollbars "--window-size=1200,${4:-1600}")
	url="file://$(realpath "$1")"
	# (Bounded: a page that never ends loading is cut at 60 s.)
	timeout 60 chromium "${flags[@]}" --enable-logging=stderr --v=0 \
		--dump-dom "$url" >"$2.dom" 2>"$2.log" || {
		echo "chromium --dump-dom failed: $(tail -n3 "$2.log")"
		return 1
	}
	[ -n "${3:-}" ] || return 0
	rm -f "tests/logs/$3.png"
	mkdir -p tests/logs
	timeout 60 chromium "${flags[@]}" --screenshot="tests/logs/$3.png" \
		"$url" >>"$2.log" 2>&1
	[ -s "tests/logs/$3.png" ] || {
		echo "no screenshot tests/logs/$3.png"
		return 1
	}
}

# two_at_once FUNCTION ARG...: FUNCTION ARG for each ARG, two at a time
# (one on a host of one CPU), each in the background with RXE_VM_CPUS=1,
# and wait for them all.  For
# the slow suite's gradings: two beds of 1 virtual CPU on 2 CPUs grade
# two senders in about 170 s where one at a time takes about 285 (each
# bed a fifth slower: larger-than-memory 70 to 76 s of its 120 s limit;
# docs/instructor.md has the table).  FUNCTION runs in a subshell:
# it leaves its results in files, and a `fail` there ends only itself;
# check the files once this returns.
two_at_once() {
	local fn=$1 arg running=0 slots=2
	shift
	[ "$(nproc)" -ge 2 ] || slots=1
	for arg in "$@"; do
		if [ "$running" -ge "$slots" ]; then
			wait -n
			running=$((running - 1))
		fi
		RXE_VM_CPUS=1 "$fn" "$arg" &
		running=$((running + 1))
	done
	wait
}
